import CLinux
import CNGHTTP2
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the two HTTP/2 push clients have in common: the production transport (`HTTP2PushTransport`)
/// and the shared test scenarios drive either through it.
public protocol HTTP2PushClient: AnyObject, Sendable {
    /// Queues one POST; `completion` runs exactly once, on the client's driver thread (or at once on
    /// the caller's thread after `shutdown`). Any HTTP status is a `.success`.
    func sendReportingInfo(_ request: PushHTTPRequest,
                           completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void)
    /// Async variant of `sendReportingInfo`; the exchange is not cancelled with the task.
    func send(_ request: PushHTTPRequest) async throws(PushTransportError) -> PushHTTPResponse
    /// Completes everything queued or in flight with `.shutdown` and stops the driver thread. Idempotent.
    func shutdown()
    /// Connections opened so far.
    var connectionsOpened: Int { get }
    /// Requests finished so far (success or failure).
    var requestsCompleted: Int { get }
}

extension HTTP2Client: HTTP2PushClient {}

/// Herald's own HTTP/2 push client (issue 17): libnghttp2 for framing and HPACK, OpenSSL for TLS,
/// one epoll driver thread. It keeps `HTTP2Client`'s contract (completion exactly once, any status is
/// a response, the same `PushTransportError` cases with the same transient/permanent meaning) at a
/// fraction of its cost per request: no easy handle per request, no pass over every transfer per
/// wake-up, no read hold-off.
///
/// Design:
/// - Other threads append to a `Mutex`-guarded inbox and write an eventfd when it was empty; the
///   driver thread owns everything else (sockets, TLS, sessions, queues) and runs every completion.
/// - Per origin (`https` host + port) at most `maxHostConnections` connections, each carrying at most
///   `min(maxConcurrentStreams, the server's SETTINGS_MAX_CONCURRENT_STREAMS)` streams. Requests that
///   fit nowhere wait in the origin's FIFO (no clock running); another connection is opened only when
///   the queue exceeds what the open and opening ones can take, and a connection takes streams only
///   after the server's SETTINGS arrived. A request goes to the least loaded connection.
/// - Connections: `getaddrinfo` (no cache: Apple asks for a fresh lookup per connection), each address
///   in turn, non-blocking connect with `TCP_NODELAY` and TCP keep-alive, TLS ≥ 1.2 with SNI, hostname
///   (or IP) verification against the system CAs plus `caFile`, ALPN `h2` required (a server that does
///   not agree fails with `.tls`). `connectTimeoutMs` bounds TCP + TLS + the server's SETTINGS.
/// - I/O: per wake-up, every readable connection is read until `EAGAIN` (each TLS record straight into
///   `nghttp2_session_mem_recv`), then every connection with frames to send gets them in one buffer and
///   one `SSL_write` pass (up to 64 KiB per write).
/// - GOAWAY: the connection takes no new streams; streams the server did not process (above its
///   last stream id, refused, or never sent) are retried on another connection up to 5 times; the rest
///   finish or fail with `.protocolError` when the connection ends.
/// - `requestTimeoutMs` runs from when a request gets a stream; on expiry the stream is reset
///   (RST_STREAM CANCEL) and the request fails with `.timeout`; the connection stays.
/// - An idle connection (no streams) older than `maxIdleConnectionSeconds` is closed with GOAWAY.
/// - Requests carrying `accept-encoding` fail with `.other` (no content decoding here: Expo's gzip
///   answers go through `HTTP2Client`); so do `http://` URLs (no cleartext HTTP/2).
/// - Configuration: `HTTP2Client.Configuration`; `maxInFlight`, `maxReadDelayMilliseconds`,
///   `dnsCacheTimeoutSeconds` and `verbose` are libcurl's and have no effect here.
public final class NativeHTTP2Client: HTTP2PushClient {
    public typealias Configuration = HTTP2Client.Configuration

    public let configuration: Configuration
    private let shared: H2Shared
    private let thread: pthread_t

    /// Starts the driver thread. Throws `.other` when the TLS context, epoll or the thread cannot be set
    /// up, `.tls` when `caFile` cannot be loaded.
    public init(configuration: Configuration = Configuration()) throws(PushTransportError) {
        let driver = try H2Driver(configuration: configuration)
        self.configuration = configuration
        self.shared = driver.shared
        guard let tid = startH2DriverThread(driver) else {
            driver.releaseResources()
            throw .other(code: -1, message: "could not start the HTTP/2 driver thread")
        }
        self.thread = tid
    }

    deinit { shutdown() }

    /// Connections opened so far (one per connection attempt that got a socket, whatever came of it).
    public var connectionsOpened: Int { shared.connectionsOpened.load(ordering: .relaxed) }
    /// Requests finished so far (success or failure).
    public var requestsCompleted: Int { shared.completed.load(ordering: .relaxed) }

    /// Queues one POST. `completion` is called exactly once, on the driver thread (or synchronously on the
    /// caller's thread if the client is already shut down).
    public func send(_ request: PushHTTPRequest,
                     completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>) -> Void) {
        sendReportingInfo(request) { result, _ in completion(result) }
    }

    /// Like `send(_:completion:)`, also passing the HTTP version ("2", or "" without a response) and
    /// whether the request was the first on a new connection.
    public func sendReportingInfo(
        _ request: PushHTTPRequest,
        completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void
    ) {
        let item = H2Request(request: request, completion: completion)
        let accepted = shared.inbox.withLock { inbox -> Bool in
            guard inbox.running else { return false }
            inbox.pending.append(item)
            // The driver drains the whole inbox at once: one wake-up per non-empty inbox suffices.
            if inbox.pending.count == 1 { shared.wake() }
            return true
        }
        if !accepted { item.finish(.failure(.shutdown), newConnection: false) }
    }

    /// Async variant of `send`; the exchange is not cancelled with the task.
    public func send(_ request: PushHTTPRequest) async throws(PushTransportError) -> PushHTTPResponse {
        let result = await withCheckedContinuation { (cont: CheckedContinuation<Result<PushHTTPResponse, PushTransportError>, Never>) in
            send(request) { cont.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Completes every queued and in-flight request with `.shutdown`, closes all connections, stops and
    /// joins the driver thread. Idempotent; from a completion handler it does not wait.
    public func shutdown() {
        let first = shared.inbox.withLock { inbox -> Bool in
            guard inbox.running else { return false }
            inbox.running = false
            shared.wake()
            return true
        }
        guard first else { return }
        if pthread_equal(pthread_self(), thread) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }
}

// MARK: - Shared state

struct H2Inbox {
    var running = true
    var pending: [H2Request] = []
}

final class H2Shared: Sendable {
    let inbox = Mutex(H2Inbox())
    let connectionsOpened = Atomic<Int>(0)
    let completed = Atomic<Int>(0)
    /// The eventfd; written only under the inbox lock while running, closed by the driver after it
    /// saw `running == false` under that lock.
    let wakeFD: Int32
    init(wakeFD: Int32) { self.wakeFD = wakeFD }
    func wake() {
        var one: UInt64 = 1
        _ = Glibc.write(wakeFD, &one, 8)
    }
}

/// One request: created on the sending thread, then owned by the driver thread only.
final class H2Request: @unchecked Sendable {
    let request: PushHTTPRequest
    private let completion: @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void
    let started = h2MonotonicNanoseconds()

    /// The request's header list for nghttp2 (pseudo-headers first), built once; names and values point
    /// into `headerBytes` or into storage that outlives the request (static strings, the origin's).
    var nv: UnsafeMutablePointer<nghttp2_nv>?
    var nvCount = 0
    var headerBytes: UnsafeMutableRawPointer?
    var bodyOffset = 0

    var status = 0
    var responseHeaders: [(String, String)] = []
    var responseBody: [UInt8] = []
    var tooLarge = false
    var headersSent = false
    var retries = 0
    /// The driver's deadline list (oldest first): a request is in it while it holds a stream.
    var timeoutNext: H2Request?
    unowned(unsafe) var timeoutPrev: H2Request?
    var inTimeoutList = false
    var deadline: UInt64 = 0
    var newConnection = false
    var done = false
    unowned(unsafe) var origin: H2Origin?
    var connection: H2Connection?
    var streamID: Int32 = -1

    init(request: PushHTTPRequest,
         completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void) {
        self.request = request
        self.completion = completion
    }

    deinit {
        nv?.deallocate()
        headerBytes?.deallocate()
    }

    func finish(_ result: Result<PushHTTPResponse, PushTransportError>, newConnection: Bool) {
        let version: String
        if case .success = result { version = "2" } else { version = "" }
        completion(result, PushTransferInfo(httpVersion: version, newConnections: newConnection ? 1 : 0,
                                            elapsed: .nanoseconds(Int64(bitPattern: h2MonotonicNanoseconds() &- started))))
    }
}

/// Requests to one scheme+host+port and the connections serving them.
final class H2Origin {
    let host: String
    let port: UInt16
    /// `host[:port]` for `:authority`, and the URL prefix `https://host[:port]` it was parsed from.
    let authority: UnsafeMutableBufferPointer<UInt8>
    let prefix: [UInt8]
    var connections: [H2Connection] = []
    var queue: [H2Request] = []
    var queueHead = 0
    var dirty = false

    init(host: String, port: UInt16, authority: [UInt8], prefix: [UInt8]) {
        self.host = host
        self.port = port
        self.prefix = prefix
        self.authority = .allocate(capacity: max(1, authority.count))
        _ = self.authority.initialize(from: authority)
    }

    deinit { authority.deallocate() }

    var waiting: Int { queue.count - queueHead }

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
    var goawayLastStreamID = Int32.max
    var streams: [Int32: H2Request] = [:]
    var streamLimit = 0
    var idleSince: UInt64 = 0
    var epollEvents: UInt32 = 0
    var dirty = false
    var firstStream = true
    /// Frames from nghttp2 not yet taken by `SSL_write` (`out[outOffset...]`).
    var out: [UInt8] = []
    var outOffset = 0

    init(id: UInt64, origin: H2Origin) {
        self.id = id
        self.origin = origin
    }
}

// MARK: - The driver

nonisolated private func startH2DriverThread(_ driver: H2Driver) -> pthread_t? {
    var tid = pthread_t()
    let arg = Unmanaged.passRetained(driver).toOpaque()
    let rc = pthread_create(&tid, nil, { raw in
        guard let raw else { return nil }
        let driver = Unmanaged<H2Driver>.fromOpaque(raw).takeRetainedValue()
        _ = CLinux_setThreadName("herald-h2")
        driver.run()
        return nil
    }, arg)
    if rc != 0 {
        Unmanaged<H2Driver>.fromOpaque(arg).release()
        return nil
    }
    return tid
}

func h2MonotonicNanoseconds() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

/// The driver thread's state; touched only by that thread after `init`.
final class H2Driver: @unchecked Sendable {
    let shared: H2Shared
    let configuration: NativeHTTP2Client.Configuration
    private let epollFD: Int32
    private let sslContext: OpaquePointer
    private let callbacks: OpaquePointer
    private var origins: [H2Origin] = []
    private var lastOrigin: H2Origin?
    private var connections: [UInt64: H2Connection] = [:]
    private var nextConnectionID: UInt64 = 1
    private var dirtyConnections: [H2Connection] = []
    private var dirtyOrigins: [H2Origin] = []
    /// Requests holding a stream, in deadline order: every stream gets the same timeout, so appending
    /// keeps the order. A doubly linked list through the requests: a finished one leaves in O(1), and
    /// one stream that hangs does not keep every request after it alive.
    private var timeoutHead: H2Request?
    private unowned(unsafe) var timeoutTail: H2Request?
    private let readBuffer = UnsafeMutableRawPointer.allocate(byteCount: 32 * 1024, alignment: 16)
    private let userAgent: UnsafeMutableBufferPointer<UInt8>?
    private static let maxRetries = 5
    private static let writeBatchBytes = 64 * 1024
    private static let wakeID: UInt64 = 0

    init(configuration: NativeHTTP2Client.Configuration) throws(PushTransportError) {
        self.configuration = configuration
        let ep = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard ep >= 0 else { throw .other(code: -Int(errno), message: "epoll_create1 failed") }
        let ev = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        guard ev >= 0 else { close(ep); throw .other(code: -Int(errno), message: "eventfd failed") }
        var event = epoll_event()
        event.events = EPOLLIN.rawValue
        event.data.u64 = Self.wakeID
        epoll_ctl(ep, EPOLL_CTL_ADD, ev, &event)
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            close(ep); close(ev)
            throw .other(code: -1, message: "SSL_CTX_new failed")
        }
        _ = CNGHTTP2_SSL_CTX_set_min_proto_version_tls12(ctx)
        _ = CNGHTTP2_SSL_CTX_set_partial_write(ctx)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        // The system store (Debian: /etc/ssl/certs), and the CA file as extra trust on top of it.
        _ = SSL_CTX_set_default_verify_paths(ctx)
        if let ca = configuration.caFile, SSL_CTX_load_verify_locations(ctx, ca, nil) != 1 {
            SSL_CTX_free(ctx); close(ep); close(ev)
            throw .tls("cannot load the CA file \(ca)")
        }
        let alpn: [UInt8] = [2, UInt8(ascii: "h"), UInt8(ascii: "2")]
        _ = SSL_CTX_set_alpn_protos(ctx, alpn, UInt32(alpn.count))
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        guard let cbs else {
            SSL_CTX_free(ctx); close(ep); close(ev)
            throw .other(code: -1, message: "nghttp2_session_callbacks_new failed")
        }
        nghttp2_session_callbacks_set_on_header_callback(cbs, h2OnHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, h2OnDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, h2OnStreamClose)
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, h2OnFrameRecv)
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs, h2OnFrameSend)
        self.epollFD = ep
        self.sslContext = ctx
        self.callbacks = cbs
        self.shared = H2Shared(wakeFD: ev)
        if let ua = configuration.userAgent, !ua.isEmpty {
            let bytes = Array(ua.utf8)
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
            _ = buffer.initialize(from: bytes)
            userAgent = buffer
        } else {
            userAgent = nil
        }
    }

    /// Frees what `init` acquired (after the thread stopped, or when it never started).
    func releaseResources() {
        nghttp2_session_callbacks_del(callbacks)
        SSL_CTX_free(sslContext)
        close(epollFD)
        close(shared.wakeFD)
        readBuffer.deallocate()
        userAgent?.deallocate()
    }

    // MARK: loop

    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        // The inbox's array and this one trade places under the lock, so draining allocates nothing.
        var incoming: [H2Request] = []
        incoming.reserveCapacity(256)
        while true {
            let running = shared.inbox.withLock { inbox -> Bool in
                swap(&inbox.pending, &incoming)
                return inbox.running
            }
            if !running {
                stopAll(extra: incoming)
                return
            }
            for request in incoming { accept(request) }
            incoming.removeAll(keepingCapacity: true)
            let now = h2MonotonicNanoseconds()
            sweep(now: now)
            dispatchDirtyOrigins(now: now)
            flushDirtyConnections()
            let timeout = waitTimeout(now: h2MonotonicNanoseconds())
            let n = events.withUnsafeMutableBufferPointer { buffer in
                epoll_wait(epollFD, buffer.baseAddress, Int32(buffer.count), timeout)
            }
            if n < 0 { continue }
            for i in 0..<Int(n) {
                let id = events[i].data.u64
                let flags = events[i].events
                if id == Self.wakeID {
                    var value: UInt64 = 0
                    _ = read(shared.wakeFD, &value, 8)
                    continue
                }
                guard let connection = connections[id] else { continue }
                handle(connection, events: flags)
            }
        }
    }

    /// Milliseconds until the next stream or connection deadline (-1: none; connections still get a
    /// sweep at least every second for their idle age).
    private func waitTimeout(now: UInt64) -> Int32 {
        // A failed write requeued requests or closed a connection: dispatch them without waiting.
        if !dirtyOrigins.isEmpty || !dirtyConnections.isEmpty { return 0 }
        var next = UInt64.max
        if let head = timeoutHead { next = head.deadline }
        for connection in connections.values where connection.state != .open || !connection.settingsReceived {
            next = min(next, connection.deadline)
        }
        if !connections.isEmpty { next = min(next, now + 1_000_000_000) }
        if next == UInt64.max { return -1 }
        if next <= now { return 0 }
        return Int32(min((next - now + 999_999) / 1_000_000, 60_000))
    }

    // MARK: accepting requests

    private func accept(_ r: H2Request) {
        guard let origin = origin(for: r.request.url) else {
            return complete(r, .failure(.other(code: 3, message: "URL not supported by the HTTP/2 client: \(r.request.url)")))
        }
        if let error = buildHeaders(r, origin: origin) { return complete(r, .failure(error)) }
        r.origin = origin
        enqueue(r, at: origin)
    }

    private func enqueue(_ r: H2Request, at origin: H2Origin) {
        origin.queue.append(r)
        markDirty(origin)
    }

    private func markDirty(_ origin: H2Origin) {
        if !origin.dirty { origin.dirty = true; dirtyOrigins.append(origin) }
    }

    private func markDirty(_ connection: H2Connection) {
        if !connection.dirty { connection.dirty = true; dirtyConnections.append(connection) }
    }

    /// The origin of an `https://host[:port]/path` URL (the last one is checked first: pushes come in
    /// runs to one gateway); nil for anything else.
    private func origin(for url: String) -> H2Origin? {
        var url = url
        return url.withUTF8 { bytes -> H2Origin? in
            if let last = lastOrigin, bytes.count > last.prefix.count, bytes[last.prefix.count] == UInt8(ascii: "/"),
               last.prefix.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, $0.count) == 0 }) {
                return last
            }
            let scheme = Array("https://".utf8)
            guard bytes.count > scheme.count, zip(bytes, scheme).allSatisfy({ ($0 | 0x20) == $1 || $0 == $1 }) else { return nil }
            var end = scheme.count
            while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?") { end += 1 }
            guard end < bytes.count, bytes[end] == UInt8(ascii: "/") else { return nil }
            let authority = Array(bytes[scheme.count..<end])
            guard !authority.isEmpty, !authority.contains(UInt8(ascii: "@")) else { return nil }
            var host = authority[...]
            var port: UInt16 = 443
            if authority.first == UInt8(ascii: "[") {
                guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
                host = authority[1..<close]
                let rest = authority[(close + 1)...]
                if !rest.isEmpty {
                    guard rest.first == UInt8(ascii: ":"), let p = UInt16(String(decoding: rest.dropFirst(), as: UTF8.self)) else { return nil }
                    port = p
                }
            } else if let colon = authority.lastIndex(of: UInt8(ascii: ":")) {
                host = authority[..<colon]
                guard let p = UInt16(String(decoding: authority[(colon + 1)...], as: UTF8.self)) else { return nil }
                port = p
            }
            guard !host.isEmpty else { return nil }
            let prefix = Array(bytes[..<end])
            if let known = origins.first(where: { $0.prefix == prefix }) {
                lastOrigin = known
                return known
            }
            let created = H2Origin(host: String(decoding: host, as: UTF8.self), port: port, authority: authority, prefix: prefix)
            origins.append(created)
            lastOrigin = created
            return created
        }
    }

    /// Checks the headers and builds the request's nghttp2 header list once: `:method`, `:scheme`,
    /// `:authority`, `:path`, the caller's headers (names lower-cased, RFC 9113 §8.2.1), `user-agent`
    /// unless given, `content-length`. Returns `.other` for an invalid header (a name that is not a
    /// token, a value with CR, LF or NUL) or an `accept-encoding` header (no decoding here).
    private func buildHeaders(_ r: H2Request, origin: H2Origin) -> PushTransportError? {
        let headers = r.request.headers
        var url = r.request.url
        var lengthDigits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // room for 24 decimal digits
        let lengthCount = withUnsafeMutableBytes(of: &lengthDigits) { Self.decimal(r.request.body.count, into: $0) }
        let pathCount = url.utf8.count - origin.prefix.count
        // The sizes first (O(1) on native strings), then one pass per string that checks and copies.
        var total = pathCount + lengthCount
        for (name, value) in headers { total += name.utf8.count + value.utf8.count }
        let nv = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: 4 + headers.count + 2)
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: max(1, total), alignment: 1).assumingMemoryBound(to: UInt8.self)
        r.nv = nv
        r.headerBytes = UnsafeMutableRawPointer(bytes)
        var at = 0
        var count = 0
        func put(_ name: UnsafeMutablePointer<UInt8>, _ nameLength: Int, _ value: UnsafeMutablePointer<UInt8>, _ valueLength: Int) {
            nv[count] = nghttp2_nv(name: name, value: value, namelen: nameLength, valuelen: valueLength,
                                   flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            count += 1
        }
        put(H2Static.method, 7, H2Static.post, 4)
        put(H2Static.scheme, 7, H2Static.https, 5)
        put(H2Static.authority, 10, origin.authority.baseAddress!, origin.authority.count)
        url.withUTF8 { u in
            (bytes + at).initialize(from: u.baseAddress! + origin.prefix.count, count: pathCount)
        }
        put(H2Static.path, 5, bytes + at, pathCount)
        at += pathCount
        var hasUserAgent = false
        for (name, value) in headers {
            var name = name, value = value
            let nameAt = bytes + at
            // A token (no space, colon, control or non-ASCII byte), lower-cased as it is copied.
            let nameOK = name.withUTF8 { n -> Bool in
                guard !n.isEmpty else { return false }
                for i in 0..<n.count {
                    let b = n[i]
                    if b <= 0x20 || b == UInt8(ascii: ":") || b >= 0x7F { return false }
                    nameAt[i] = b >= 0x41 && b <= 0x5A ? b | 0x20 : b
                }
                return true
            }
            let nameCount = name.utf8.count
            let valueAt = nameAt + nameCount
            // No CR, LF or NUL: a header injection.
            let valueOK = value.withUTF8 { v -> Bool in
                for i in 0..<v.count {
                    let b = v[i]
                    if b == 0x0D || b == 0x0A || b == 0 { return false }
                    valueAt[i] = b
                }
                return true
            }
            guard nameOK && valueOK else {
                return .other(code: 43, message: "invalid request header \(name.debugDescription)")
            }
            let lowered = UnsafeBufferPointer(start: nameAt, count: nameCount)
            if Self.equal(lowered, "accept-encoding") {
                return .other(code: 43, message: "accept-encoding is not supported by the HTTP/2 push client")
            }
            if Self.equal(lowered, "user-agent") { hasUserAgent = true }
            let valueCount = value.utf8.count
            put(nameAt, nameCount, valueAt, valueCount)
            at += nameCount + valueCount
        }
        if !hasUserAgent, let userAgent { put(H2Static.userAgent, 10, userAgent.baseAddress!, userAgent.count) }
        withUnsafeBytes(of: &lengthDigits) { digits in
            (bytes + at).initialize(from: digits.bindMemory(to: UInt8.self).baseAddress!, count: lengthCount)
        }
        put(H2Static.contentLength, 14, bytes + at, lengthCount)
        r.nvCount = count
        return nil
    }

    /// Writes `value` (≥ 0) in decimal into `buffer`; returns the digit count.
    static func decimal(_ value: Int, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var v = max(0, value), n = 0
        repeat { buffer[n] = UInt8(0x30 + v % 10); v /= 10; n += 1 } while v > 0
        var i = 0, j = n - 1
        while i < j { buffer.swapAt(i, j); i += 1; j -= 1 }
        return n
    }

    /// Byte equality with a static (lower-case) name.
    static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ wanted: StaticString) -> Bool {
        bytes.count == wanted.utf8CodeUnitCount && memcmp(bytes.baseAddress!, wanted.utf8Start, bytes.count) == 0
    }

    // MARK: dispatching

    private func dispatchDirtyOrigins(now: UInt64) {
        while let origin = dirtyOrigins.popLast() {
            origin.dirty = false
            dispatch(origin, now: now)
        }
    }

    /// Gives waiting requests streams on the least loaded ready connection; opens another connection
    /// when more wait than the open and opening ones can take, up to `maxHostConnections`.
    private func dispatch(_ origin: H2Origin, now: UInt64) {
        while origin.waiting > 0 {
            var best: H2Connection?
            for c in origin.connections where c.state == .open && c.settingsReceived && !c.draining
                && c.streams.count < c.streamLimit {
                if best == nil || c.streams.count < best!.streams.count { best = c }
            }
            if let best {
                submit(origin.popWaiting(), on: best, now: now)
                continue
            }
            var opening = 0, live = 0
            for c in origin.connections where !c.draining {
                live += 1
                if c.state != .open || !c.settingsReceived { opening += max(1, configuration.maxConcurrentStreams) }
            }
            guard origin.waiting > opening, live < max(1, configuration.maxHostConnections) else { return }
            openConnection(origin, now: now)
        }
    }

    private func submit(_ r: H2Request, on connection: H2Connection, now: UInt64) {
        guard let session = connection.session, let nv = r.nv else { return }
        r.bodyOffset = 0
        r.headersSent = false
        r.status = 0
        r.responseHeaders.removeAll()
        r.responseBody.removeAll()
        let me = Unmanaged.passUnretained(r).toOpaque()
        let id: Int32
        if r.request.body.isEmpty {
            id = nghttp2_submit_request(session, nil, nv, r.nvCount, nil, me)
        } else {
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: me), read_callback: h2ReadBody)
            id = nghttp2_submit_request(session, nil, nv, r.nvCount, &provider, me)
        }
        guard id > 0 else {
            guard id == Int32(NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue), let origin = r.origin else {
                return complete(r, .failure(.other(code: Int(id), message: "nghttp2_submit_request: \(String(cString: nghttp2_strerror(id)))")))
            }
            // Stream ids used up: this connection ends once its streams do; the request goes to another.
            connection.draining = true
            markDirty(connection)
            origin.queue.insert(r, at: origin.queueHead)
            markDirty(origin)
            return
        }
        r.streamID = id
        r.connection = connection
        r.newConnection = connection.firstStream
        connection.firstStream = false
        connection.streams[id] = r
        r.deadline = now &+ UInt64(max(1, configuration.requestTimeoutMs)) * 1_000_000
        appendTimeout(r)
        markDirty(connection)
    }

    // MARK: connections

    private func openConnection(_ origin: H2Origin, now: UInt64) {
        let connection = H2Connection(id: nextConnectionID, origin: origin)
        connection.driver = self
        nextConnectionID += 1
        connection.deadline = now &+ UInt64(max(1, configuration.connectTimeoutMs)) * 1_000_000
        connection.streamLimit = max(1, configuration.maxConcurrentStreams)
        origin.connections.append(connection)
        connections[connection.id] = connection
        shared.connectionsOpened.add(1, ordering: .relaxed)
        // getaddrinfo blocks this thread; it runs once per new connection (no DNS cache, as Apple asks).
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(origin.host, String(origin.port), &hints, &list)
        guard rc == 0, list != nil else {
            return fail(connection, .connect("Could not resolve host: \(origin.host)"))
        }
        var p = list
        while let ai = p {
            if let address = ai.pointee.ai_addr {
                connection.addresses.append(Array(UnsafeRawBufferPointer(start: address, count: Int(ai.pointee.ai_addrlen))))
            }
            p = ai.pointee.ai_next
        }
        freeaddrinfo(list)
        connectNextAddress(connection)
    }

    private func connectNextAddress(_ connection: H2Connection) {
        while connection.addressIndex < connection.addresses.count {
            let address = connection.addresses[connection.addressIndex]
            connection.addressIndex += 1
            let family = address.withUnsafeBytes { Int32($0.load(as: sockaddr.self).sa_family) }
            let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 { connection.lastConnectError = String(cString: strerror(errno)); continue }
            var on: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, socklen_t(MemoryLayout<Int32>.size))
            var idle = Int32(clamping: max(1, configuration.tcpKeepAliveSeconds))
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, &idle, socklen_t(MemoryLayout<Int32>.size))
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &idle, socklen_t(MemoryLayout<Int32>.size))
            let rc = address.withUnsafeBytes { raw in
                connect(fd, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
            }
            if rc != 0 && errno != EINPROGRESS {
                connection.lastConnectError = String(cString: strerror(errno))
                close(fd)
                continue
            }
            connection.fd = fd
            var event = epoll_event()
            event.events = EPOLLOUT.rawValue
            event.data.u64 = connection.id
            epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event)
            connection.epollEvents = EPOLLOUT.rawValue
            connection.state = .connecting
            return
        }
        fail(connection, .connect("Failed to connect to \(connection.origin.host) port \(connection.origin.port): \(connection.lastConnectError)"))
    }

    private func setEvents(_ connection: H2Connection, _ events: UInt32) {
        guard connection.epollEvents != events, connection.fd >= 0 else { return }
        var event = epoll_event()
        event.events = events
        event.data.u64 = connection.id
        epoll_ctl(epollFD, EPOLL_CTL_MOD, connection.fd, &event)
        connection.epollEvents = events
    }

    private func handle(_ connection: H2Connection, events: UInt32) {
        switch connection.state {
        case .connecting:
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(connection.fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0 {
                connection.lastConnectError = String(cString: strerror(error))
                epoll_ctl(epollFD, EPOLL_CTL_DEL, connection.fd, nil)
                close(connection.fd)
                connection.fd = -1
                connection.epollEvents = 0
                connectNextAddress(connection)
                return
            }
            startTLS(connection)
        case .handshaking:
            handshake(connection)
        case .open:
            if events & (EPOLLIN.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 { readAll(connection) }
            if connection.state == .open, events & EPOLLOUT.rawValue != 0 { markDirty(connection) }
        case .closed:
            break
        }
    }

    private func startTLS(_ connection: H2Connection) {
        guard let ssl = SSL_new(sslContext) else { return fail(connection, .tls("SSL_new failed")) }
        connection.ssl = ssl
        SSL_set_fd(ssl, connection.fd)
        let host = connection.origin.host
        let param = SSL_get0_param(ssl)
        if Self.isIPAddress(host) {
            X509_VERIFY_PARAM_set1_ip_asc(param, host)
        } else {
            _ = CNGHTTP2_SSL_set_tlsext_host_name(ssl, host)
            X509_VERIFY_PARAM_set_hostflags(param, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            X509_VERIFY_PARAM_set1_host(param, host, 0)
        }
        SSL_set_connect_state(ssl)
        connection.state = .handshaking
        handshake(connection)
    }

    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    private func handshake(_ connection: H2Connection) {
        guard let ssl = connection.ssl else { return }
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            var selected: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &selected, &length)
            guard length == 2, let selected, selected[0] == UInt8(ascii: "h"), selected[1] == UInt8(ascii: "2") else {
                return fail(connection, .tls("ALPN: the server did not agree to HTTP/2 (h2)"))
            }
            startSession(connection)
            return
        }
        let error = SSL_get_error(ssl, rc)
        switch error {
        case SSL_ERROR_WANT_READ: setEvents(connection, EPOLLIN.rawValue)
        case SSL_ERROR_WANT_WRITE: setEvents(connection, EPOLLIN.rawValue | EPOLLOUT.rawValue)
        default:
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                let text = String(cString: X509_verify_cert_error_string(verify))
                return fail(connection, .tls("SSL certificate problem: \(text)"))
            }
            let queued = ERR_peek_error()
            if error == SSL_ERROR_SSL, queued != 0 {
                return fail(connection, .tls(Self.openSSLErrorText()))
            }
            // EOF or a socket error mid-handshake: the peer went away (restart, overload), not a TLS problem.
            let reason = errno != 0 ? String(cString: strerror(errno)) : "connection closed by the server"
            fail(connection, .connect("TLS handshake with \(connection.origin.host) port \(connection.origin.port) failed: \(reason)"))
        }
    }

    static func openSSLErrorText() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(ERR_get_error(), &buffer, buffer.count)
        ERR_clear_error()
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    private func startSession(_ connection: H2Connection) {
        var session: OpaquePointer?
        let me = Unmanaged.passUnretained(connection).toOpaque()
        guard nghttp2_session_client_new(&session, callbacks, me) == 0, let session else {
            return fail(connection, .other(code: -1, message: "nghttp2_session_client_new failed"))
        }
        connection.session = session
        // No server push; a window that lets a whole capped answer arrive without waiting for updates.
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                   value: UInt32(max(65_535, min(configuration.maxResponseBodyBytes + 1024, 1 << 24)))),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        connection.state = .open
        setEvents(connection, EPOLLIN.rawValue)
        markDirty(connection)
    }

    // MARK: reading and writing

    private func readAll(_ connection: H2Connection) {
        guard let ssl = connection.ssl, let session = connection.session else { return }
        ERR_clear_error()
        while true {
            let n = SSL_read(ssl, readBuffer, 32 * 1024)
            if n > 0 {
                let used = nghttp2_session_mem_recv(session, readBuffer.assumingMemoryBound(to: UInt8.self), Int(n))
                if used < 0 {
                    return fail(connection, .protocolError("HTTP/2 framing error: \(String(cString: nghttp2_strerror(Int32(used))))"))
                }
                continue
            }
            let error = SSL_get_error(ssl, n)
            if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { break }
            let reason: String
            if error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && errno == 0) {
                reason = "connection closed by the server"
            } else if error == SSL_ERROR_SYSCALL {
                reason = "Recv failure: \(String(cString: strerror(errno)))"
            } else {
                reason = Self.openSSLErrorText()
            }
            return fail(connection, .protocolError(reason))
        }
        markDirty(connection)
    }

    private func flushDirtyConnections() {
        // `flush` may fail a connection, which requeues requests and marks origins dirty; those are
        // dispatched on the next pass (after epoll_wait returns at once: see waitTimeout's sweep).
        while let connection = dirtyConnections.popLast() {
            connection.dirty = false
            if connection.state == .open { flush(connection) }
        }
    }

    /// Writes everything nghttp2 has queued: frames gathered into one buffer, one `SSL_write` per 64 KiB.
    private func flush(_ connection: H2Connection) {
        guard let ssl = connection.ssl, let session = connection.session else { return }
        while true {
            if connection.outOffset < connection.out.count {
                ERR_clear_error()
                let n = connection.out.withUnsafeBufferPointer { buffer in
                    SSL_write(ssl, buffer.baseAddress! + connection.outOffset, Int32(buffer.count - connection.outOffset))
                }
                if n > 0 {
                    connection.outOffset += Int(n)
                    continue
                }
                let error = SSL_get_error(ssl, n)
                if error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ {
                    setEvents(connection, EPOLLIN.rawValue | EPOLLOUT.rawValue)
                    return
                }
                let reason = error == SSL_ERROR_SYSCALL ? "Send failure: \(String(cString: strerror(errno)))" : Self.openSSLErrorText()
                return fail(connection, .protocolError(reason))
            }
            connection.out.removeAll(keepingCapacity: true)
            connection.outOffset = 0
            var chunk: UnsafePointer<UInt8>?
            while connection.out.count < Self.writeBatchBytes {
                let n = nghttp2_session_mem_send(session, &chunk)
                if n < 0 {
                    return fail(connection, .protocolError("HTTP/2: \(String(cString: nghttp2_strerror(Int32(n))))"))
                }
                if n == 0 { break }
                connection.out.append(contentsOf: UnsafeBufferPointer(start: chunk, count: n))
            }
            if connection.out.isEmpty { break }
        }
        setEvents(connection, EPOLLIN.rawValue)
        if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            fail(connection, .protocolError("HTTP/2 connection ended"))
        } else if connection.draining && connection.streams.isEmpty {
            // GOAWAY received and every stream answered: nothing more will come on it.
            fail(connection, .protocolError("HTTP/2 connection ended by GOAWAY"))
        }
    }

    // MARK: session callbacks (called from nghttp2_session_mem_recv / mem_send)

    func onHeader(_ connection: H2Connection, streamID: Int32, category: Int32,
                  name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let r = connection.streams[streamID], !r.done else { return }
        if name.count == 7, name[0] == UInt8(ascii: ":"), name[1] == UInt8(ascii: "s") {   // ":status"
            var status = 0
            for b in value where b >= 0x30 && b <= 0x39 { status = status * 10 + Int(b - 0x30) }
            if status >= 100 && status < 200 { r.responseHeaders.removeAll(keepingCapacity: true); return }
            r.status = status
            return
        }
        if name.first == UInt8(ascii: ":") { return }
        if category == Int32(NGHTTP2_HCAT_HEADERS.rawValue) && r.status == 0 { return }
        r.responseHeaders.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    func onData(_ connection: H2Connection, streamID: Int32, data: UnsafeBufferPointer<UInt8>) {
        guard let r = connection.streams[streamID], !r.done else { return }
        if r.responseBody.count + data.count > configuration.maxResponseBodyBytes {
            r.tooLarge = true
            r.responseBody = []
            complete(r, .failure(.responseTooLarge))
            if let session = connection.session {
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, UInt32(NGHTTP2_CANCEL.rawValue))
            }
            return
        }
        r.responseBody.append(contentsOf: data)
    }

    func onStreamClose(_ connection: H2Connection, streamID: Int32, errorCode: UInt32) {
        guard let r = connection.streams.removeValue(forKey: streamID) else { return }
        if connection.streams.isEmpty { connection.idleSince = h2MonotonicNanoseconds() }
        r.connection = nil
        r.origin.map { markDirty($0) }
        if connection.draining && connection.streams.isEmpty { markDirty(connection) }
        guard !r.done else { return }
        if errorCode == 0 && r.status > 0 {
            let response = PushHTTPResponse(status: r.status, headers: r.responseHeaders, body: r.responseBody)
            return complete(r, .success(response))
        }
        let refused = errorCode == UInt32(NGHTTP2_REFUSED_STREAM.rawValue) || streamID > connection.goawayLastStreamID || !r.headersSent
        if refused && retry(r) { return }
        let name = String(cString: nghttp2_http2_strerror(errorCode))
        complete(r, .failure(.protocolError(errorCode == 0
            ? "HTTP/2 stream \(streamID) closed without a response"
            : "HTTP/2 stream \(streamID) was not closed cleanly: \(name) (err \(errorCode))")))
    }

    func onFrameRecv(_ connection: H2Connection, type: UInt8, frame: UnsafePointer<nghttp2_frame>) {
        switch UInt32(type) {
        case NGHTTP2_SETTINGS.rawValue:
            guard let session = connection.session else { return }
            let remote = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
            connection.streamLimit = max(1, min(configuration.maxConcurrentStreams, remote))
            connection.settingsReceived = true
            if connection.idleSince == 0 { connection.idleSince = h2MonotonicNanoseconds() }
            markDirty(connection.origin)
        case NGHTTP2_GOAWAY.rawValue:
            connection.draining = true
            connection.goawayLastStreamID = CNGHTTP2_goaway_last_stream_id(frame)
            markDirty(connection.origin)
            markDirty(connection)
        default:
            break
        }
    }

    func onFrameSend(_ connection: H2Connection, type: UInt8, streamID: Int32) {
        guard UInt32(type) == NGHTTP2_HEADERS.rawValue, let r = connection.streams[streamID] else { return }
        r.headersSent = true
    }

    // MARK: finishing

    /// Puts a request the server did not process back in its origin's queue (at the front: it is the
    /// oldest); false once it was retried `maxRetries` times.
    private func retry(_ r: H2Request) -> Bool {
        guard r.retries < Self.maxRetries, let origin = r.origin else { return false }
        removeTimeout(r)
        r.retries += 1
        r.connection = nil
        r.streamID = -1
        origin.queue.insert(r, at: origin.queueHead)
        markDirty(origin)
        return true
    }

    private func appendTimeout(_ r: H2Request) {
        r.inTimeoutList = true
        r.timeoutPrev = timeoutTail
        if let tail = timeoutTail { tail.timeoutNext = r } else { timeoutHead = r }
        timeoutTail = r
    }

    private func removeTimeout(_ r: H2Request) {
        guard r.inTimeoutList else { return }
        r.inTimeoutList = false
        let next = r.timeoutNext
        if let prev = r.timeoutPrev { prev.timeoutNext = next } else { timeoutHead = next }
        if let next { next.timeoutPrev = r.timeoutPrev } else { timeoutTail = r.timeoutPrev }
        r.timeoutNext = nil
        r.timeoutPrev = nil
    }

    private func complete(_ r: H2Request, _ result: Result<PushHTTPResponse, PushTransportError>) {
        guard !r.done else { return }
        r.done = true
        removeTimeout(r)
        shared.completed.add(1, ordering: .relaxed)
        r.finish(result, newConnection: r.newConnection)
    }

    /// Ends a connection: its unfinished streams are retried (if the server never processed them) or
    /// fail with `error`; if it never opened and no other connection serves its origin, the origin's
    /// waiting requests fail with `error` too.
    private func fail(_ connection: H2Connection, _ error: PushTransportError) {
        guard connection.state != .closed else { return }
        // Only a connection that got the server's SETTINGS served requests; one that failed before
        // (connect, TLS, no SETTINGS in time) fails the origin's waiting requests unless another serves them.
        let wasUsable = connection.state == .open && connection.settingsReceived
        connection.state = .closed
        if connection.fd >= 0 {
            epoll_ctl(epollFD, EPOLL_CTL_DEL, connection.fd, nil)
        }
        if let session = connection.session { nghttp2_session_del(session) }
        connection.session = nil
        if let ssl = connection.ssl { SSL_free(ssl) }
        connection.ssl = nil
        if connection.fd >= 0 { close(connection.fd) }
        connection.fd = -1
        connections.removeValue(forKey: connection.id)
        let origin = connection.origin
        origin.connections.removeAll { $0 === connection }
        let streams = connection.streams.sorted { $0.key < $1.key }.map(\.value)
        connection.streams.removeAll()
        // Oldest first, inserted at the front in reverse so the queue keeps their order.
        var retried: [H2Request] = []
        for r in streams where !r.done {
            r.connection = nil
            let unprocessed = !r.headersSent || r.streamID > connection.goawayLastStreamID
            if unprocessed && r.retries < Self.maxRetries {
                removeTimeout(r)
                r.retries += 1
                r.streamID = -1
                retried.append(r)
            } else {
                complete(r, .failure(error))
            }
        }
        origin.queue.insert(contentsOf: retried, at: origin.queueHead)
        if !wasUsable && !origin.connections.contains(where: { $0.state == .open && $0.settingsReceived }) {
            while origin.waiting > 0 { complete(origin.popWaiting(), .failure(error)) }
        }
        markDirty(origin)
    }

    /// Stream timeouts, connection deadlines (connect + TLS + SETTINGS) and idle age.
    private func sweep(now: UInt64) {
        while let r = timeoutHead, r.deadline <= now {
            let connection = r.connection
            complete(r, .failure(.timeout))
            if let connection, let session = connection.session {
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), r.streamID, UInt32(NGHTTP2_CANCEL.rawValue))
                markDirty(connection)
            }
        }
        let idleLimit = UInt64(max(1, configuration.maxIdleConnectionSeconds)) * 1_000_000_000
        var expired: [H2Connection] = []   // no allocation while none expire (every wake-up runs this)
        for connection in connections.values {
            if connection.state != .open || !connection.settingsReceived {
                if connection.deadline <= now { expired.append(connection) }
            } else if connection.streams.isEmpty && connection.idleSince > 0 && now &- connection.idleSince > idleLimit,
                      let session = connection.session {
                // Idle too long: say goodbye and close once that is written.
                nghttp2_session_terminate_session(session, UInt32(NGHTTP2_NO_ERROR.rawValue))
                connection.draining = true
                markDirty(connection)
            }
        }
        for connection in expired { fail(connection, .timeout) }
    }

    /// Shutdown: everything queued or in flight completes with `.shutdown`, then the resources go.
    private func stopAll(extra: [H2Request]) {
        for connection in Array(connections.values) {
            let streams = connection.streams.values
            connection.streams.removeAll()
            for r in streams { complete(r, .failure(.shutdown)) }
            if connection.fd >= 0 { epoll_ctl(epollFD, EPOLL_CTL_DEL, connection.fd, nil) }
            if let session = connection.session { nghttp2_session_del(session) }
            if let ssl = connection.ssl { SSL_free(ssl) }
            if connection.fd >= 0 { close(connection.fd) }
            connection.state = .closed
        }
        connections.removeAll()
        for origin in origins {
            while origin.waiting > 0 { complete(origin.popWaiting(), .failure(.shutdown)) }
            origin.connections.removeAll()
        }
        for r in extra { complete(r, .failure(.shutdown)) }
        while let r = timeoutHead { removeTimeout(r) }
        // `send` no longer writes the eventfd (running is false, checked under the same lock).
        shared.inbox.withLock { _ in }
        releaseResources()
    }
}

/// Static header names and values nghttp2 points into (never freed).
enum H2Static {
    static func bytes(_ text: String) -> UnsafeMutablePointer<UInt8> {
        let b = Array(text.utf8)
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: b.count)
        p.initialize(from: b, count: b.count)
        return p
    }
    nonisolated(unsafe) static let method = bytes(":method")
    nonisolated(unsafe) static let post = bytes("POST")
    nonisolated(unsafe) static let scheme = bytes(":scheme")
    nonisolated(unsafe) static let https = bytes("https")
    nonisolated(unsafe) static let authority = bytes(":authority")
    nonisolated(unsafe) static let path = bytes(":path")
    nonisolated(unsafe) static let userAgent = bytes("user-agent")
    nonisolated(unsafe) static let contentLength = bytes("content-length")
}

// MARK: - C callbacks (user_data is the connection; each runs on the driver thread)

private func h2Connection(_ userData: UnsafeMutableRawPointer?) -> H2Connection {
    Unmanaged<H2Connection>.fromOpaque(userData!).takeUnretainedValue()
}

private let h2OnHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, let name, let value else { return 0 }
    let connection = h2Connection(userData)
    connection.driver?.onHeader(connection, streamID: CNGHTTP2_frame_stream_id(frame), category: Int32(CNGHTTP2_headers_category(frame)),
                                name: UnsafeBufferPointer(start: name, count: nameLength),
                                value: UnsafeBufferPointer(start: value, count: valueLength))
    return 0
}

private let h2OnDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, streamID, data, length, userData in
    let connection = h2Connection(userData)
    connection.driver?.onData(connection, streamID: streamID, data: UnsafeBufferPointer(start: data, count: length))
    return 0
}

private let h2OnStreamClose: nghttp2_on_stream_close_callback = { _, streamID, errorCode, userData in
    let connection = h2Connection(userData)
    connection.driver?.onStreamClose(connection, streamID: streamID, errorCode: errorCode)
    return 0
}

private let h2OnFrameRecv: nghttp2_on_frame_recv_callback = { _, frame, userData in
    guard let frame else { return 0 }
    let connection = h2Connection(userData)
    connection.driver?.onFrameRecv(connection, type: CNGHTTP2_frame_type(frame), frame: frame)
    return 0
}

private let h2OnFrameSend: nghttp2_on_frame_send_callback = { _, frame, userData in
    guard let frame else { return 0 }
    let connection = h2Connection(userData)
    connection.driver?.onFrameSend(connection, type: CNGHTTP2_frame_type(frame), streamID: CNGHTTP2_frame_stream_id(frame))
    return 0
}

/// Copies the next piece of a request body into nghttp2's frame buffer (`source` is the request).
private let h2ReadBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
    guard let source, let buffer, let flags, let raw = source.pointee.ptr else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    let r = Unmanaged<H2Request>.fromOpaque(raw).takeUnretainedValue()
    let n = r.request.body.withUnsafeBufferPointer { body -> Int in
        let n = max(0, min(length, body.count - r.bodyOffset))
        if n > 0 { buffer.update(from: body.baseAddress! + r.bodyOffset, count: n) }
        return n
    }
    r.bodyOffset += n
    if r.bodyOffset >= r.request.body.count { flags.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
    return n
}
