import CLinux
import CNGHTTP2
import HeraldCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// NativeHTTP2Client's values that the driver thread works on: the inbox it shares with senders,
// a request, an origin's queue and connections, a connection's TLS and HTTP/2 session state.

// MARK: - Shared state

struct H2Inbox {
    var running = true
    var pending: [H2Request] = []
    /// Address lookups that ended off the driver thread (`H2Resolution`), for the loop to connect.
    var resolved: [H2Resolution] = []
    /// Connections an answer said are unusable (`NativeHTTP2Client.retireConnection`), by id:
    /// the loop drains them before it gives any waiting request a stream.
    var retiring: [UInt64] = []
}

/// What a connection's host lookup gave: the socket addresses to try in order, or why there are none.
struct H2Resolution: Sendable {
    let connectionID: UInt64
    let addresses: Result<[[UInt8]], H2LookupError>
}

/// A host that could not be resolved (`getaddrinfo`'s answer, as text).
struct H2LookupError: Error, Sendable {
    let reason: String
}

/// Looks up a host's socket addresses; blocks its caller. `getaddrinfo` outside tests.
typealias H2Resolver = @Sendable (_ host: String, _ port: Int) -> Result<[[UInt8]], H2LookupError>

/// `getaddrinfo` (no cache: Apple asks for a fresh lookup per connection), `AI_ADDRCONFIG`, TCP.
let h2SystemResolver: H2Resolver = { host, port in
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_ADDRCONFIG
    var list: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, String(port), &hints, &list)
    guard rc == 0, list != nil else { return .failure(H2LookupError(reason: String(cString: gai_strerror(rc)))) }
    var addresses: [[UInt8]] = []
    var p = list
    while let ai = p {
        if let address = ai.pointee.ai_addr {
            addresses.append(Array(UnsafeRawBufferPointer(start: address, count: Int(ai.pointee.ai_addrlen))))
        }
        p = ai.pointee.ai_next
    }
    freeaddrinfo(list)
    return .success(addresses)
}

final class H2Shared: Sendable {
    let inbox = Mutex(H2Inbox())
    let connectionsOpened = Atomic<Int>(0)
    let completed = Atomic<Int>(0)
    let pingsSent = Atomic<Int>(0)
    let pingsAcknowledged = Atomic<Int>(0)
    /// The eventfd; written only under the inbox lock while running, closed by the driver after it
    /// saw `running == false` under that lock.
    let wakeFD: Int32
    init(wakeFD: Int32) { self.wakeFD = wakeFD }
    func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }
}

/// How a request's caller takes its answer: the caller's own closure, not one wrapped around it.
enum H2Completion {
    /// `sendReportingInfo`: with the HTTP version, the new connection and the time taken.
    case reportingInfo(@Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void)
    /// `send(_:completion:)`.
    case typed(@Sendable (Result<PushHTTPResponse, PushTransportError>) -> Void)
    /// `sendForTransport` (`HTTP2PushTransport`: `PushTransport`'s untyped error).
    case untyped(@Sendable (Result<PushHTTPResponse, any Error>) -> Void)

    /// Calls the closure; `started` is when the request was handed over (the driver's clock, ns).
    func callAsFunction(_ result: Result<PushHTTPResponse, PushTransportError>, newConnection: Bool, started: UInt64) {
        switch self {
        case .reportingInfo(let completion):
            let version: String
            if case .success = result { version = "2" } else { version = "" }
            completion(result, PushTransferInfo(httpVersion: version, newConnections: newConnection ? 1 : 0,
                                                elapsed: .nanoseconds(Int64(bitPattern: h2MonotonicNanoseconds() &- started))))
        case .typed(let completion):
            completion(result)
        case .untyped(let completion):
            completion(result.mapError { $0 })
        }
    }
}

/// One request: created on the sending thread, then owned by the driver thread only.
final class H2Request: @unchecked Sendable {
    private let completion: H2Completion
    let started = h2MonotonicNanoseconds()

    /// The header list, its bytes and the body, built on the sending thread (`H2RequestBlock.build`),
    /// so the driver neither builds them nor releases the `PushHTTPRequest`; nil when the request
    /// was refused, with `buildError` (the driver completes it, on its thread like any other).
    let block: H2RequestBlock?
    let buildError: PushTransportError?
    var bodyOffset = 0

    var status = 0
    // Unchecked exclusivity: the driver thread's alone (see `H2Driver`).
    @exclusivity(unchecked) var responseHeaders: [(String, String)] = []
    @exclusivity(unchecked) var responseBody: [UInt8] = []
    var tooLarge = false
    var headersSent = false
    var retries = 0
    /// Its place in the driver's timeout list (`H2Driver.timeouts`): in it while it holds a stream.
    @exclusivity(unchecked) var timeoutLink = H2Link()
    /// When the request times out on its stream: `requestTimeoutMs` after it got one, or its
    /// `sendBy` if that comes first.
    var deadline: UInt64 = 0
    /// The driver's clock by which it must be sent and answered (`PushHTTPRequest.sendWithinMilliseconds`
    /// from when it was handed over); `.max`: none.
    var sendBy = UInt64.max
    /// `PushHTTPRequest.sendWhileAudience`: put on a stream only while its count is current.
    var audience: PushAudienceChange.Mark?
    /// Its place in the driver's send-by list (`H2Driver.sendBys`): a request with a `sendBy` is in
    /// it while it waits in its origin's queue for a stream.
    @exclusivity(unchecked) var sendByLink = H2Link()
    /// Its place in its connection's `streams` while it holds a stream there.
    @exclusivity(unchecked) var streamLink = H2Link()
    var newConnection = false
    var done = false
    unowned(unsafe) var origin: H2Origin?
    var connection: H2Connection?
    var streamID: Int32 = -1

    /// Builds the request's block here, on the sending thread; `userAgent` (empty: none) is sent
    /// unless the request has its own.
    init(request: PushHTTPRequest, userAgent: [UInt8], completion: H2Completion) {
        switch H2RequestBlock.build(request, userAgent: userAgent) {
        case .success(let block): self.block = block; buildError = nil
        case .failure(let error): block = nil; buildError = error
        }
        self.completion = completion
    }

    deinit {
        block?.deallocate()
    }

    func finish(_ result: Result<PushHTTPResponse, PushTransportError>, newConnection: Bool) {
        completion(result, newConnection: newConnection, started: started)
    }
}

/// Requests to one scheme+host+port and the connections serving them.
final class H2Origin {
    let host: String
    let port: UInt16
    /// `host[:port]` as in its requests' URLs (and their `:authority`).
    let authority: [UInt8]
    var connections: [H2Connection] = []
    @exclusivity(unchecked) var queue: [H2Request] = []
    var queueHead = 0
    var dirty = false
    /// Requests in `queue` were completed where they waited (their send-by passed): `removeDone` is due.
    var holdsDone = false

    init(host: String, port: UInt16, authority: [UInt8]) {
        self.host = host
        self.port = port
        self.authority = authority
    }

    /// Whether a request's `host[:port]` is this origin's.
    func matches(_ other: UnsafeBufferPointer<UInt8>) -> Bool {
        other.count == authority.count
            && authority.withUnsafeBufferPointer { memcmp($0.baseAddress!, other.baseAddress!, other.count) == 0 }
    }

    var waiting: Int { queue.count - queueHead }

    /// Takes the completed requests out of the queue, keeping the others' order.
    func removeDone() {
        holdsDone = false
        var kept: [H2Request] = []
        kept.reserveCapacity(waiting)
        for r in queue[queueHead...] where !r.done { kept.append(r) }
        queue = kept
        queueHead = 0
    }

    func popWaiting() -> H2Request {
        let r = queue[queueHead]
        queueHead += 1
        if queueHead == queue.count {
            queue.removeAll(keepingCapacity: queue.count < 4096)
            queueHead = 0
        }
        return r
    }
}

/// One TCP + TLS + HTTP/2 connection.
final class H2Connection {
    enum State { case connecting, handshaking, open, closed }
    let id: UInt64
    unowned let origin: H2Origin
    /// The driver the session callbacks report to (it outlives its connections).
    unowned(unsafe) var driver: H2Driver?
    var state = State.connecting
    var fd: Int32 = -1
    var ssl: OpaquePointer?
    var session: OpaquePointer?
    var addresses: [[UInt8]] = []
    var addressIndex = 0
    var lastConnectError = ""
    var deadline: UInt64 = 0
    var settingsReceived = false
    var draining = false
    /// Drained because an answer on it said it is unusable (`H2Driver.retire`): closed with our
    /// GOAWAY once its last stream ended.
    var retired = false
    var goawayLastStreamID = Int32.max
    @exclusivity(unchecked) var streams = H2StreamSet()
    var streamLimit = 0
    var idleSince: UInt64 = 0
    /// When bytes were last read (once per `readAll` that got any): the PING's idle clock.
    var lastReadAt: UInt64 = 0
    /// When the PING not yet acknowledged was sent; 0: none outstanding (RFC 9113 §6.7).
    var pingSentAt: UInt64 = 0
    var epollEvents: UInt32 = 0
    var dirty = false
    var firstStream = true
    /// Frames from nghttp2 not yet taken by `SSL_write` (`out[outOffset...]`). Unchecked
    /// exclusivity: the driver thread's alone (see `H2Driver`).
    @exclusivity(unchecked) var out: [UInt8] = []
    var outOffset = 0

    init(id: UInt64, origin: H2Origin) {
        self.id = id
        self.origin = origin
    }

    /// The request on one of this connection's streams, from nghttp2's own map (the stream's user
    /// data, set at submit), valid while the request is in `streams`: it leaves them only when its
    /// stream closes or the session is deleted.
    func request(onStream id: Int32) -> H2Request? {
        guard let session, let raw = nghttp2_session_get_stream_user_data(session, id) else { return nil }
        return Unmanaged<H2Request>.fromOpaque(raw).takeUnretainedValue()
    }
}

// MARK: - The driver's clock

func h2MonotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}
