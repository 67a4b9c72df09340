import CCurl
import CCurlShim
import HeraldCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What libcurl reported about one finished exchange (for metrics and tests).
public struct PushTransferInfo: Sendable, Equatable {
    /// The HTTP version actually used: "2", "1.1", "1.0", "3", or "" when no response arrived.
    public var httpVersion: String
    /// New connections this transfer had to open (0 when it reused / multiplexed onto one).
    public var newConnections: Int
    /// Time from `send` to completion, including time queued behind other streams.
    public var elapsed: Duration

    public init(httpVersion: String, newConnections: Int, elapsed: Duration) {
        self.httpVersion = httpVersion
        self.newConnections = newConnections
        self.elapsed = elapsed
    }
}

/// An HTTP/2 (over TLS, ALPN `h2`) POST client for push providers, built on libcurl's multi interface.
///
/// Design:
/// - One driver pthread owns the `CURLM` handle and every easy handle. Other threads only append
///   to a `Mutex`-guarded inbox and call `curl_multi_wakeup`; the driver loops
///   `curl_multi_poll` → read hold-off → `curl_multi_perform` → `curl_multi_info_read`.
/// - Read hold-off: libcurl 7.88 makes each `curl_multi_perform` run every added transfer, and each
///   multiplexed transfer then `poll(2)`s the shared socket; each `curl_multi_poll` first asks every
///   transfer for its sockets. With hundreds of streams that cost is paid per wake-up, and a provider's
///   answers each wake the driver. So after a wake-up the driver lets the rest of a short interval pass
///   since its last `curl_multi_perform` (20 µs per transfer in flight, at most
///   `maxReadDelayMilliseconds`: 5 ms at 256) and handles every answer that arrived meanwhile in one
///   pass. A lone request is not held back; with many in flight, answers wait at most that interval.
///   (Driving libcurl with `curl_multi_socket_action` on epoll instead does not avoid the cost: an event
///   on a socket still runs every transfer multiplexed on it. Tried with 7.88, it also left transfers
///   waiting for their timeout when GOAWAY replaced connections.)
/// - Transfers are multiplexed (`CURLPIPE_MULTIPLEX` + `CURLOPT_PIPEWAIT`), so requests to one host share
///   a connection; at most `maxHostConnections` connections per host are opened, each carrying at most
///   `min(maxConcurrentStreams, server SETTINGS_MAX_CONCURRENT_STREAMS)` streams. At most `maxInFlight`
///   transfers are handed to libcurl; the rest wait in a FIFO in the driver. Handed-over transfers that
///   find no free stream wait inside libcurl (its "pending" state; their timeout clock is running).
/// - GOAWAY: streams the server did not process are retried by libcurl on a new connection (up to 5
///   times); what still fails surfaces as `.protocolError`. libcurl 7.88 does not expose GOAWAY debug data.
/// - Completions run **on the driver thread**: keep them short and never block in them (they may call
///   `send` again; calling `shutdown` from one is allowed and does not wait).
/// - An HTTP response of any status is a `.success`; only transport failures are `PushTransportError`s.
public final class HTTP2Client: Sendable {
    public struct Configuration: Sendable {
        /// `CURLMOPT_MAX_HOST_CONNECTIONS`: connections per host (APNs/FCM: one or two multiplexed ones).
        public var maxHostConnections: Int
        /// `CURLMOPT_MAX_CONCURRENT_STREAMS` (libcurl ≥ 7.67; default 100 there). The server's own
        /// SETTINGS_MAX_CONCURRENT_STREAMS still applies — libcurl uses the smaller of the two.
        public var maxConcurrentStreams: Int
        /// `CURLOPT_CONNECTTIMEOUT_MS`: TCP + TLS handshake.
        public var connectTimeoutMs: Int
        /// `CURLOPT_TIMEOUT_MS`: the whole exchange, measured by libcurl from when the transfer is handed to
        /// it (see `maxInFlight`): connection setup, waiting for a free stream, request and response.
        public var requestTimeoutMs: Int
        /// `HERALD_CA_FILE` → `CURLOPT_CAINFO`: a PEM bundle of extra trust anchors (e.g. the provider
        /// double's CA). It **adds to** the system CAs: it replaces only libcurl's default CA *file*, while
        /// `CURLOPT_CAPATH` is pinned to libcurl's built-in CA directory (Debian: `/etc/ssl/certs`, which
        /// holds the same public roots as hashed links), so public roots stay trusted.
        public var caFile: String?
        /// `CURLOPT_USERAGENT`; `nil` sends no User-Agent header.
        public var userAgent: String?
        /// Response bodies longer than this fail with `.responseTooLarge` (provider answers are small JSON).
        public var maxResponseBodyBytes: Int
        /// `CURLOPT_MAXAGE_CONN`: an idle connection older than this is not reused (libcurl default 118 s;
        /// Apple asks to keep connections for hours, so the default is one hour). TCP keep-alive probes
        /// (`CURLOPT_TCP_KEEPALIVE`, idle `tcpKeepAliveSeconds`) keep NAT state alive meanwhile.
        public var maxIdleConnectionSeconds: Int
        /// `CURLOPT_TCP_KEEPIDLE` / `CURLOPT_TCP_KEEPINTVL`.
        public var tcpKeepAliveSeconds: Int
        /// `CURLOPT_DNS_CACHE_TIMEOUT`. Apple asks for an uncached DNS query before each new connection;
        /// 0 disables libcurl's cache (lookups happen only when a new connection is opened).
        public var dnsCacheTimeoutSeconds: Int
        /// Transfers handed to libcurl at once; later ones wait in a FIFO inside the client (cheap) and get
        /// no easy handle until a slot frees up. This bounds memory (each easy handle carries ~16 KB of
        /// buffers) and the per-`curl_multi_perform` cost (libcurl 7.88 walks every added handle, see the
        /// read hold-off), and makes `requestTimeoutMs` measure time on the wire rather than time queued
        /// behind a burst.
        public var maxInFlight: Int
        /// The read hold-off's cap, in ms (see the type's doc): at most this long between two
        /// `curl_multi_perform` passes while many transfers are in flight, 20 µs per transfer below it.
        /// It bounds how late an answer is handled, and how long a new request or a due timeout waits to
        /// be handed to libcurl, while the hold-off runs. 0 disables it.
        public var maxReadDelayMilliseconds: Int
        /// `CURLOPT_VERBOSE`: libcurl's own trace on stderr (debugging only; it prints request headers,
        /// including `authorization`).
        public var verbose: Bool
        /// Native client only (RFC 9113 §6.7): a connection that has received no frame for this
        /// long, in ms, is sent a PING; 0 sends none. 60 s: what APNs clients commonly use, well
        /// inside the idle timeouts of NATs and load balancers (minutes), so the PING also keeps
        /// their state alive. A stream that times out sends one at once.
        public var pingIdleMilliseconds: Int
        /// Native client only: a PING not acknowledged within this many ms closes its connection;
        /// its streams on the wire fail with `.protocolError` (transient: the push is retried), the
        /// ones never sent go to another connection, and the next request opens a new one.
        public var pingTimeoutMilliseconds: Int

        public init(
            maxHostConnections: Int = 2,
            maxConcurrentStreams: Int = 1000,
            connectTimeoutMs: Int = 10_000,
            requestTimeoutMs: Int = 30_000,
            caFile: String? = nil,
            userAgent: String? = "herald-push/1",
            maxResponseBodyBytes: Int = 64 * 1024,
            maxIdleConnectionSeconds: Int = 3600,
            tcpKeepAliveSeconds: Int = 60,
            dnsCacheTimeoutSeconds: Int = 0,
            maxInFlight: Int = 1000,
            maxReadDelayMilliseconds: Int = 5,
            verbose: Bool = false,
            pingIdleMilliseconds: Int = 60_000,
            pingTimeoutMilliseconds: Int = 20_000
        ) {
            self.maxHostConnections = maxHostConnections
            self.maxConcurrentStreams = maxConcurrentStreams
            self.connectTimeoutMs = connectTimeoutMs
            self.requestTimeoutMs = requestTimeoutMs
            self.caFile = caFile
            self.userAgent = userAgent
            self.maxResponseBodyBytes = maxResponseBodyBytes
            self.maxIdleConnectionSeconds = maxIdleConnectionSeconds
            self.tcpKeepAliveSeconds = tcpKeepAliveSeconds
            self.dnsCacheTimeoutSeconds = dnsCacheTimeoutSeconds
            self.maxInFlight = maxInFlight
            self.maxReadDelayMilliseconds = maxReadDelayMilliseconds
            self.verbose = verbose
            self.pingIdleMilliseconds = pingIdleMilliseconds
            self.pingTimeoutMilliseconds = pingTimeoutMilliseconds
        }

        /// Defaults, with `caFile` from `HERALD_CA_FILE` when it is set and non-empty. `environment`
        /// replaces the process environment (for tests; avoids `setenv` races).
        public static func fromEnvironment(_ environment: [String: String]? = nil) -> Configuration {
            var c = Configuration()
            let value: String?
            if let environment {
                value = environment["HERALD_CA_FILE"]
            } else {
                value = getenv("HERALD_CA_FILE").map { String(cString: $0) }
            }
            if let value, !value.isEmpty { c.caFile = value }
            return c
        }
    }

    public let configuration: Configuration
    private let shared: CurlDriverShared
    private let thread: pthread_t

    /// Starts the driver thread. Throws `.other` only if libcurl or the thread cannot be initialised.
    public init(configuration: Configuration = Configuration()) throws(PushTransportError) {
        try Self.loadLibrary()
        guard let multi = curl_multi_init() else {
            throw .other(code: -1, message: "curl_multi_init failed")
        }
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX)
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, max(1, configuration.maxHostConnections))
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, max(1, configuration.maxConcurrentStreams))

        self.configuration = configuration
        let shared = CurlDriverShared(multi: multi)
        self.shared = shared
        let driver = CurlDriver(shared: shared, configuration: configuration)
        guard let tid = startDriverThread(named: nil, driver.run) else {
            curl_multi_cleanup(multi)
            throw .other(code: -1, message: "could not start the HTTP/2 driver thread")
        }
        self.thread = tid
    }

    deinit { shutdown() }

    /// Opens libcurl and runs its global init, once per process; `init` and `HTTPGet` do it too.
    /// The server calls it at start when push is configured, so that a missing `libcurl.so.4`
    /// stops it with the reason instead of disabling push.
    /// - Throws: `.other(code: -1, …)` naming the soname and the Debian package when libcurl
    ///   cannot be opened or lacks a function; `.other(code: CURLcode, …)` if its init fails.
    public static func loadLibrary() throws(PushTransportError) {
        if let curlStartFailure { throw curlStartFailure }
    }

    /// Total connections opened so far (sum of `CURLINFO_NUM_CONNECTS` over finished transfers).
    public var connectionsOpened: Int { shared.connectionsOpened.load(ordering: .relaxed) }
    /// Transfers finished so far (success or failure).
    public var requestsCompleted: Int { shared.completed.load(ordering: .relaxed) }

    /// Queues one POST. `completion` is called exactly once, on the driver thread (or synchronously on the
    /// caller's thread if the client is already shut down).
    public func send(
        _ request: PushHTTPRequest,
        completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>) -> Void
    ) {
        sendReportingInfo(request) { result, _ in completion(result) }
    }

    /// Like `send(_:completion:)`, also passing what libcurl reported (HTTP version, new connections).
    public func sendReportingInfo(
        _ request: PushHTTPRequest,
        completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void
    ) {
        let transfer = CurlTransfer(request: request, maxBody: configuration.maxResponseBodyBytes, completion: completion)
        let accepted = shared.inbox.withLock { inbox -> Bool in
            guard inbox.state == .running else { return false }
            inbox.pending.append(transfer)
            // The driver drains the whole inbox at once, so one wake-up per non-empty inbox suffices.
            if inbox.pending.count == 1 { _ = curl_multi_wakeup(shared.multi.raw) }
            return true
        }
        if !accepted { transfer.finish(.failure(.shutdown), httpVersion: "", newConnections: 0) }
    }

    /// Completes every queued and in-flight request with `.shutdown`, closes all connections, stops and
    /// joins the driver thread. Idempotent. After it returns (when not called from a completion handler),
    /// every completion has run; later `send`s complete at once with `.shutdown`.
    public func shutdown() {
        let first = shared.inbox.withLock { inbox -> Bool in
            guard inbox.state == .running else { return false }
            inbox.state = .stopping
            _ = curl_multi_wakeup(shared.multi.raw)
            return true
        }
        guard first else { return }
        if pthread_equal(pthread_self(), thread) != 0 {
            pthread_detach(thread)          // called from a completion: the loop exits when it returns
        } else {
            pthread_join(thread, nil)
        }
    }
}

// MARK: - Internals

/// libcurl opened (it is not linked: CDynamicLoad) and its global init run, once (Swift globals are
/// initialised lazily and thread-safely): nil when ready, else why not.
let curlStartFailure: PushTransportError? = {
    if let reason = herald_curl_load() {
        return .other(code: -1, message: "libcurl could not be loaded: \(String(cString: reason))")
    }
    let code = curl_global_init(Int(CURL_GLOBAL_ALL))
    return code == CURLE_OK ? nil : .other(code: Int(code.rawValue), message: "curl_global_init failed")
}()

/// libcurl's built-in CA directory (`/etc/ssl/certs` on Debian), kept when a CA file is added.
let builtInCAPath: String? = {
    guard let info = curl_version_info(CURLVERSION_ELEVENTH), let p = info.pointee.capath else { return nil }
    return String(cString: p)
}()

/// A `CURLM*`; only the driver thread uses it, except `curl_multi_wakeup` (documented thread-safe),
/// which other threads call under the inbox lock while the handle is known to be alive.
struct CurlMultiHandle: @unchecked Sendable { let raw: UnsafeMutableRawPointer }

struct CurlInbox {
    enum State { case running, stopping }
    var state: State = .running
    var pending: [CurlTransfer] = []
}

final class CurlDriverShared: Sendable {
    let multi: CurlMultiHandle
    let inbox = Mutex(CurlInbox())
    let connectionsOpened = Atomic<Int>(0)
    let completed = Atomic<Int>(0)
    init(multi: UnsafeMutableRawPointer) { self.multi = CurlMultiHandle(raw: multi) }
}

/// One request and everything libcurl points into while it runs. Created on the sending thread, then
/// owned and mutated only by the driver thread (hence `@unchecked Sendable`).
final class CurlTransfer: @unchecked Sendable {
    let request: PushHTTPRequest
    let maxBody: Int
    let started = ContinuousClock.now
    private let completion: @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void

    /// Request body copy that libcurl reads from (CURLOPT_POSTFIELDS does not copy); freed in deinit,
    /// i.e. after the easy handle is cleaned up.
    var postBody: UnsafeMutablePointer<UInt8>?
    var headerList: UnsafeMutablePointer<curl_slist>?
    let errorBuffer: UnsafeMutablePointer<CChar>

    var responseHeaders: [(String, String)] = []
    var responseBody: [UInt8] = []
    var bodyTooLarge = false

    /// `publicAddressesOnly`: the addresses refused (text), how many libcurl asked to connect to
    /// in all, and whether a reused connection's peer was refused.
    var refusedAddresses: [String] = []
    var addressesTried = 0
    var refusedReusedConnection = false

    /// The failure when the request failed because no public address was allowed, else nil.
    func addressFailure(code: CURLcode) -> PushTransportError? {
        guard request.publicAddressesOnly, !refusedAddresses.isEmpty else { return nil }
        // Some public address was tried and failed on its own: that failure is the network's.
        guard refusedReusedConnection || (code == CURLE_COULDNT_CONNECT && refusedAddresses.count == addressesTried) else { return nil }
        return .addressNotPublic("\(Self.host(of: request.url)) resolves to no public address (refused: "
                                 + refusedAddresses.joined(separator: ", ") + ")")
    }

    private static func host(of url: String) -> Substring {
        let rest = url.firstRange(of: "://").map { url[$0.upperBound...] } ?? Substring(url)
        return rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }

    init(request: PushHTTPRequest, maxBody: Int,
         completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void) {
        self.request = request
        self.maxBody = maxBody
        self.completion = completion
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
    }

    deinit {
        if let headerList { curl_slist_free_all(headerList) }
        postBody?.deallocate()
        errorBuffer.deallocate()
    }

    func finish(_ result: Result<PushHTTPResponse, PushTransportError>, httpVersion: String, newConnections: Int) {
        completion(result, PushTransferInfo(httpVersion: httpVersion, newConnections: newConnections,
                                            elapsed: ContinuousClock.now - started))
    }

    var errorText: String {
        errorBuffer[0] == 0 ? "" : String(cString: errorBuffer)
    }

    /// One header line as libcurl hands it over (`name: value\r\n`, or a status line, which
    /// starts the header list over). Parsed as bytes: Swift `Substring` trimming cost ~8k
    /// instructions a line, more than the rest of an answer's handling.
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        let line = bytes.bindMemory(to: UInt8.self)
        // Trim CR/LF as bytes: in Swift "\r\n" is ONE Character, so `line.last == "\r"` never matches.
        var end = line.count
        while end > 0, line[end - 1] == 0x0D || line[end - 1] == 0x0A { end -= 1 }
        if end == 0 { return }
        if end >= 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T"), line[2] == UInt8(ascii: "T"),
           line[3] == UInt8(ascii: "P"), line[4] == UInt8(ascii: "/") {
            responseHeaders.removeAll(keepingCapacity: true)  // a new status line (1xx, redirect, final): start over
            return
        }
        guard let colon = line[0..<end].firstIndex(of: UInt8(ascii: ":")) else { return }
        func isOWS(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var nameStart = 0, nameEnd = colon, valueStart = colon + 1, valueEnd = end
        while nameStart < nameEnd, isOWS(line[nameStart]) { nameStart += 1 }
        while nameEnd > nameStart, isOWS(line[nameEnd - 1]) { nameEnd -= 1 }
        while valueStart < valueEnd, isOWS(line[valueStart]) { valueStart += 1 }
        while valueEnd > valueStart, isOWS(line[valueEnd - 1]) { valueEnd -= 1 }
        responseHeaders.append((String(decoding: UnsafeBufferPointer(rebasing: line[nameStart..<nameEnd]), as: UTF8.self),
                                String(decoding: UnsafeBufferPointer(rebasing: line[valueStart..<valueEnd]), as: UTF8.self)))
    }

    /// Returns false when the body would exceed the cap (libcurl then aborts with CURLE_WRITE_ERROR).
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if responseBody.count + bytes.count > maxBody { bodyTooLarge = true; return false }
        responseBody.append(contentsOf: bytes)
        return true
    }
}

private let headerCallback: ccurl_data_cb = { ptr, size, nmemb, userdata in
    let n = size * nmemb
    guard let userdata else { return n }
    Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
        .receiveHeaderLine(UnsafeRawBufferPointer(start: ptr, count: n))
    return n
}

private let writeCallback: ccurl_data_cb = { ptr, size, nmemb, userdata in
    let n = size * nmemb
    guard let userdata else { return n }
    let ok = Unmanaged<CurlTransfer>.fromOpaque(userdata).takeUnretainedValue()
        .receiveBody(UnsafeRawBufferPointer(start: ptr, count: n))
    return ok ? n : 0
}

/// `CURLOPT_OPENSOCKETFUNCTION` of a `publicAddressesOnly` request: libcurl asks it for a socket
/// for each address it tries (after DNS, so a public name pointed at `10.x` is caught); a non-public
/// one gets `CURL_SOCKET_BAD` (libcurl then tries the next address, or fails with
/// `CURLE_COULDNT_CONNECT`) and nothing is sent to it, not even a SYN.
private let openSocketCallback: curl_opensocket_callback = { clientp, _, address in
    guard let clientp, let address else { return CURL_SOCKET_BAD }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(clientp).takeUnretainedValue()
    transfer.addressesTried += 1
    guard let ip = socketAddress(address), ip.isPublic else {
        transfer.refusedAddresses.append(socketAddress(address)?.description ?? "address family \(address.pointee.family)")
        return CURL_SOCKET_BAD
    }
    // What libcurl's own open-socket does.
    return socket(address.pointee.family, address.pointee.socktype, address.pointee.protocol)
}

/// `CURLOPT_PREREQFUNCTION` of a `publicAddressesOnly` request: runs once its connection is ready,
/// new or reused, before anything is sent. A reused one may have been opened by a request without
/// the rule (Expo shares the client): its peer must be public too.
private let prerequestCallback: curl_prereq_callback = { clientp, primaryIP, _, _, _ in
    guard let clientp else { return CURL_PREREQFUNC_ABORT }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(clientp).takeUnretainedValue()
    let text = primaryIP.map { String(cString: $0) } ?? ""
    if let ip = IPAddress(text), ip.isPublic { return CURL_PREREQFUNC_OK }
    transfer.refusedAddresses.append(text.isEmpty ? "unknown peer" : text)
    transfer.refusedReusedConnection = true
    return CURL_PREREQFUNC_ABORT
}

/// The IP address libcurl is about to connect to; nil for another family.
func socketAddress(_ address: UnsafeMutablePointer<curl_sockaddr>) -> IPAddress? {
    // libcurl's `curl_sockaddr` holds a whole `sockaddr_storage` from `addr` on (its
    // `Curl_sockaddr_ex`), so an IPv6 address may be read past the 16 bytes declared.
    let length = Int(address.pointee.addrlen)
    let raw = UnsafeRawPointer(address) + MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr)!
    switch address.pointee.family {
    case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
        let v4 = raw.loadUnaligned(as: sockaddr_in.self).sin_addr
        return withUnsafeBytes(of: v4) { IPAddress(bytes: Array($0)) }
    case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
        let v6 = raw.loadUnaligned(as: sockaddr_in6.self).sin6_addr
        return withUnsafeBytes(of: v6) { IPAddress(bytes: Array($0)) }
    default:
        return nil
    }
}

/// The driver-thread side: owns the multi handle and all easy handles.
final class CurlDriver: @unchecked Sendable {
    private let shared: CurlDriverShared
    private let configuration: Configuration
    private var multi: UnsafeMutableRawPointer { shared.multi.raw }
    /// In-flight transfers keyed by easy handle; the dictionary keeps each `CurlTransfer` alive while libcurl
    /// holds pointers into it.
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Submitted transfers not yet handed to libcurl (FIFO: `waiting[waitingHead...]`).
    private var waiting: [CurlTransfer] = []
    private var waitingHead = 0
    /// Easy handles kept for reuse (`curl_easy_reset`), saving libcurl's per-handle allocations.
    private var idleHandles: [UnsafeMutableRawPointer] = []
    /// As many as the delivery worker keeps in flight (256): with 64, a full window made and
    /// freed ~200 handles (and their buffers) over and over, a sixth of the driver's time in
    /// malloc/free (issue 17). The pool only grows to the concurrency actually reached.
    private static let maxIdleHandles = 256
    private var inFlightCap: Int { max(1, configuration.maxInFlight) }

    typealias Configuration = HTTP2Client.Configuration

    init(shared: CurlDriverShared, configuration: Configuration) {
        self.shared = shared
        self.configuration = configuration
    }

    func run() {
        var running: Int32 = 0
        var numfds: Int32 = 0
        var performedAt: UInt64 = 0
        while true {
            let (incoming, stopping) = shared.inbox.withLock { inbox -> ([CurlTransfer], Bool) in
                let taken = inbox.pending
                inbox.pending.removeAll()
                return (taken, inbox.state != .running)
            }
            if stopping {
                stopAll(extra: incoming)
                return
            }
            waiting.append(contentsOf: incoming)
            admit()
            performedAt = Self.monotonicNanoseconds()
            _ = curl_multi_perform(multi, &running)
            drainFinished()
            // Slots freed and transfers waiting: admit them without waiting for activity in poll.
            if waitingHead < waiting.count && active.count < inFlightCap {
                holdOff(since: performedAt)
                continue
            }
            _ = curl_multi_poll(multi, nil, 0, 1000, &numfds)
            holdOff(since: performedAt)
        }
    }

    /// The read hold-off (see the type's doc): sleeps until `performedAt` plus 20 µs per transfer in
    /// flight, at most `maxReadDelayMilliseconds`; returns at once when that has passed.
    private func holdOff(since performedAt: UInt64) {
        let cap = UInt64(min(max(0, configuration.maxReadDelayMilliseconds), 1000)) * 1_000_000
        let holdOff = min(UInt64(active.count) &* Self.holdOffPerTransferNanoseconds, cap)
        let elapsed = Self.monotonicNanoseconds() &- performedAt
        guard holdOff > elapsed else { return }
        let rest = holdOff - elapsed
        var request = timespec(tv_sec: Int(rest / 1_000_000_000), tv_nsec: Int(rest % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// One pass over the transfers costs about 1 µs each (a `poll` and libcurl's bookkeeping), so 20 µs
    /// per transfer keeps those passes near 5 % of a core however many are in flight.
    private static let holdOffPerTransferNanoseconds: UInt64 = 20_000

    private static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Hands waiting transfers to libcurl while there is room.
    private func admit() {
        while waitingHead < waiting.count && active.count < inFlightCap {
            let t = waiting[waitingHead]
            waitingHead += 1
            start(t)
        }
        if waitingHead == waiting.count {
            waiting.removeAll(keepingCapacity: waiting.count < 4096)
            waitingHead = 0
        } else if waitingHead > 1024 && waitingHead * 2 > waiting.count {
            waiting.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    // MARK: starting a transfer

    private func start(_ t: CurlTransfer) {
        guard let easy = idleHandles.popLast() ?? curl_easy_init() else {
            complete(t, .failure(.other(code: -1, message: "curl_easy_init failed")), httpVersion: "", newConnections: 0)
            return
        }
        if let error = configure(easy, t) {
            release(easy)
            complete(t, .failure(error), httpVersion: "", newConnections: 0)
            return
        }
        let mc = curl_multi_add_handle(multi, easy)
        guard mc == CURLM_OK else {
            release(easy)
            complete(t, .failure(.other(code: -Int(mc.rawValue), message: String(cString: curl_multi_strerror(mc)))),
                     httpVersion: "", newConnections: 0)
            return
        }
        active[easy] = t
    }

    /// Sets every option; returns an error for a bad request or a failing setopt.
    private func configure(_ h: UnsafeMutableRawPointer, _ t: CurlTransfer) -> PushTransportError? {
        let c = configuration
        var failure: PushTransportError?
        func check(_ code: CURLcode, _ what: String) {
            if code != CURLE_OK && failure == nil {
                failure = .other(code: Int(code.rawValue), message: "\(what): \(String(cString: curl_easy_strerror(code)))")
            }
        }
        // Request headers: validated, plus suppression of libcurl's defaults the caller did not ask for.
        var list: UnsafeMutablePointer<curl_slist>?
        var hasAccept = false, hasContentType = false
        // An `accept-encoding` header becomes CURLOPT_ACCEPT_ENCODING: libcurl then sends it and
        // decodes the answer (gzip for Expo), so the body handed back is always plain.
        var acceptEncoding: String?
        for (name, value) in t.request.headers {
            guard let (line, role) = Self.headerLine(name: name, value: value) else {
                if let list { curl_slist_free_all(list) }
                return .other(code: Int(CURLE_BAD_FUNCTION_ARGUMENT.rawValue), message: "invalid request header \(name.debugDescription)")
            }
            switch role {
            case .acceptEncoding:
                acceptEncoding = value
                continue
            case .accept: hasAccept = true
            case .contentType: hasContentType = true
            case .other: break
            }
            list = line.withUnsafeBufferPointer { curl_slist_append(list, $0.baseAddress) }
        }
        if !hasAccept { list = curl_slist_append(list, "Accept:") }
        if !hasContentType { list = curl_slist_append(list, "Content-Type:") }
        list = curl_slist_append(list, "Expect:")
        t.headerList = list

        // Body: our own copy, alive until the CurlTransfer is released (after curl_easy_cleanup).
        let body = t.request.body
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, body.count))
        body.withUnsafeBufferPointer { src in
            if let base = src.baseAddress { buffer.initialize(from: base, count: src.count) }
        }
        t.postBody = buffer

        let me = Unmanaged.passUnretained(t).toOpaque()
        check(ccurl_easy_setopt_str(h, CURLOPT_URL, t.request.url), "CURLOPT_URL")
        check(ccurl_easy_setopt_str(h, CURLOPT_PROTOCOLS_STR, "http,https"), "CURLOPT_PROTOCOLS_STR")
        check(ccurl_easy_setopt_long(h, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        check(ccurl_easy_setopt_long(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS), "CURLOPT_HTTP_VERSION")
        check(ccurl_easy_setopt_long(h, CURLOPT_PIPEWAIT, 1), "CURLOPT_PIPEWAIT")
        check(ccurl_easy_setopt_long(h, CURLOPT_TCP_KEEPALIVE, 1), "CURLOPT_TCP_KEEPALIVE")
        check(ccurl_easy_setopt_long(h, CURLOPT_TCP_KEEPIDLE, c.tcpKeepAliveSeconds), "CURLOPT_TCP_KEEPIDLE")
        check(ccurl_easy_setopt_long(h, CURLOPT_TCP_KEEPINTVL, c.tcpKeepAliveSeconds), "CURLOPT_TCP_KEEPINTVL")
        check(ccurl_easy_setopt_long(h, CURLOPT_MAXAGE_CONN, c.maxIdleConnectionSeconds), "CURLOPT_MAXAGE_CONN")
        check(ccurl_easy_setopt_long(h, CURLOPT_DNS_CACHE_TIMEOUT, c.dnsCacheTimeoutSeconds), "CURLOPT_DNS_CACHE_TIMEOUT")
        check(ccurl_easy_setopt_long(h, CURLOPT_CONNECTTIMEOUT_MS, c.connectTimeoutMs), "CURLOPT_CONNECTTIMEOUT_MS")
        // A push's send-by deadline caps the whole exchange, its wait for a connection included.
        let timeout = t.request.sendWithinMilliseconds.map { min(c.requestTimeoutMs, Int(clamping: max(1, $0))) } ?? c.requestTimeoutMs
        check(ccurl_easy_setopt_long(h, CURLOPT_TIMEOUT_MS, timeout), "CURLOPT_TIMEOUT_MS")
        check(ccurl_easy_setopt_long(h, CURLOPT_POST, 1), "CURLOPT_POST")
        check(ccurl_easy_setopt_off_t(h, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
        check(ccurl_easy_setopt_ptr(h, CURLOPT_POSTFIELDS, buffer), "CURLOPT_POSTFIELDS")
        check(ccurl_easy_setopt_ptr(h, CURLOPT_HTTPHEADER, list), "CURLOPT_HTTPHEADER")
        if let acceptEncoding { check(ccurl_easy_setopt_str(h, CURLOPT_ACCEPT_ENCODING, acceptEncoding), "CURLOPT_ACCEPT_ENCODING") }
        if let ua = c.userAgent { check(ccurl_easy_setopt_str(h, CURLOPT_USERAGENT, ua), "CURLOPT_USERAGENT") }
        if let ca = c.caFile {
            check(ccurl_easy_setopt_str(h, CURLOPT_CAINFO, ca), "CURLOPT_CAINFO")
            if let dir = builtInCAPath { check(ccurl_easy_setopt_str(h, CURLOPT_CAPATH, dir), "CURLOPT_CAPATH") }
        }
        if c.verbose { check(ccurl_easy_setopt_long(h, CURLOPT_VERBOSE, 1), "CURLOPT_VERBOSE") }
        check(ccurl_easy_setopt_ptr(h, CURLOPT_ERRORBUFFER, t.errorBuffer), "CURLOPT_ERRORBUFFER")
        check(ccurl_easy_setopt_data_cb(h, CURLOPT_HEADERFUNCTION, headerCallback), "CURLOPT_HEADERFUNCTION")
        check(ccurl_easy_setopt_ptr(h, CURLOPT_HEADERDATA, me), "CURLOPT_HEADERDATA")
        check(ccurl_easy_setopt_data_cb(h, CURLOPT_WRITEFUNCTION, writeCallback), "CURLOPT_WRITEFUNCTION")
        check(ccurl_easy_setopt_ptr(h, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")
        if t.request.publicAddressesOnly {
            check(ccurl_easy_setopt_opensocket_cb(h, openSocketCallback), "CURLOPT_OPENSOCKETFUNCTION")
            check(ccurl_easy_setopt_ptr(h, CURLOPT_OPENSOCKETDATA, me), "CURLOPT_OPENSOCKETDATA")
            check(ccurl_easy_setopt_prereq_cb(h, prerequestCallback), "CURLOPT_PREREQFUNCTION")
            check(ccurl_easy_setopt_ptr(h, CURLOPT_PREREQDATA, me), "CURLOPT_PREREQDATA")
        }
        return failure
    }

    /// What a request header is to the client besides a line to send.
    enum HeaderRole: Equatable {
        /// `accept-encoding`: becomes CURLOPT_ACCEPT_ENCODING.
        case acceptEncoding
        /// `accept` or `content-type`: the caller's, so libcurl's default is not suppressed.
        case accept, contentType
        case other
    }

    /// Checks a header and builds libcurl's NUL-terminated line for it in one pass over its
    /// UTF-8: `name: value`, or `name;` (libcurl's syntax for an empty value). The name must be
    /// token characters (no space, colon, control or non-ASCII byte), the value free of CR, LF and
    /// NUL (a header injection). The role is read from the name's bytes, in any case.
    ///
    /// Issue 17: checking the strings, lower-casing the name, interpolating the line and copying
    /// it to a C string cost ~14k instructions per APNs request (7 headers); this is one buffer.
    /// - Returns: nil when the header is invalid.
    static func headerLine(name: String, value: String) -> (line: [CChar], role: HeaderRole)? {
        var name = name, value = value
        return name.withUTF8 { name -> (line: [CChar], role: HeaderRole)? in
            guard !name.isEmpty, !name.contains(where: { $0 <= 0x20 || $0 == UInt8(ascii: ":") || $0 >= 0x7F }) else { return nil }
            return value.withUTF8 { value -> (line: [CChar], role: HeaderRole)? in
                guard !value.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else { return nil }
                let length = name.count + (value.isEmpty ? 1 : 2 + value.count) + 1
                let line = [CChar](unsafeUninitializedCapacity: length) { buffer, count in
                    let bytes = UnsafeMutableRawBufferPointer(buffer)
                    bytes.copyMemory(from: UnsafeRawBufferPointer(name))
                    var at = name.count
                    if value.isEmpty {
                        bytes[at] = UInt8(ascii: ";")
                        at += 1
                    } else {
                        bytes[at] = UInt8(ascii: ":")
                        bytes[at + 1] = UInt8(ascii: " ")
                        UnsafeMutableRawBufferPointer(rebasing: bytes[(at + 2)...]).copyMemory(from: UnsafeRawBufferPointer(value))
                        at += 2 + value.count
                    }
                    bytes[at] = 0
                    count = length
                }
                return (line, role(of: name))
            }
        }
    }

    private static func role(of name: UnsafeBufferPointer<UInt8>) -> HeaderRole {
        func named(_ wanted: StaticString) -> Bool {
            guard name.count == wanted.utf8CodeUnitCount else { return false }
            let target = UnsafeBufferPointer(start: wanted.utf8Start, count: wanted.utf8CodeUnitCount)
            // ASCII letters only differ from their upper case by 0x20; the names compared hold no other bytes that could collide.
            return zip(name, target).allSatisfy { ($0 | 0x20) == $1 || $0 == $1 }
        }
        switch name.count {
        case 6 where named("accept"): return .accept
        case 12 where named("content-type"): return .contentType
        case 15 where named("accept-encoding"): return .acceptEncoding
        default: return .other
        }
    }

    // MARK: finishing

    private func drainFinished() {
        var left: Int32 = 0
        while let msg = curl_multi_info_read(multi, &left) {
            guard msg.pointee.msg == CURLMSG_DONE, let easy = msg.pointee.easy_handle else { continue }
            let code = msg.pointee.data.result
            finish(easy, code: code)
        }
    }

    private func finish(_ easy: UnsafeMutableRawPointer, code: CURLcode) {
        guard let t = active.removeValue(forKey: easy) else {
            curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)
            return
        }
        curl_multi_remove_handle(multi, easy)
        var status = 0, version = 0, connects = 0
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_HTTP_VERSION, &version)
        _ = ccurl_easy_getinfo_long(easy, CURLINFO_NUM_CONNECTS, &connects)
        release(easy)

        let result: Result<PushHTTPResponse, PushTransportError>
        if code == CURLE_OK {
            result = .success(PushHTTPResponse(status: status, headers: t.responseHeaders, body: t.responseBody))
        } else if let refused = t.addressFailure(code: code) {
            result = .failure(refused)
        } else {
            let text = t.errorText.isEmpty ? String(cString: curl_easy_strerror(code)) : t.errorText
            result = .failure(PushTransportError.from(code: code, message: text, bodyTooLarge: t.bodyTooLarge))
        }
        complete(t, result, httpVersion: Self.versionName(version), newConnections: connects)
    }

    /// Returns a finished (already removed) easy handle to the idle pool, or frees it. After this, libcurl
    /// holds no pointer into the CurlTransfer (reset clears every option and callback).
    private func release(_ easy: UnsafeMutableRawPointer) {
        if idleHandles.count < Self.maxIdleHandles {
            curl_easy_reset(easy)
            idleHandles.append(easy)
        } else {
            curl_easy_cleanup(easy)
        }
    }

    private func complete(_ t: CurlTransfer, _ result: Result<PushHTTPResponse, PushTransportError>,
                          httpVersion: String, newConnections: Int) {
        if newConnections > 0 { shared.connectionsOpened.add(newConnections, ordering: .relaxed) }
        shared.completed.add(1, ordering: .relaxed)
        t.finish(result, httpVersion: httpVersion, newConnections: newConnections)
    }

    static func versionName(_ v: Int) -> String {
        switch v {
        case CURL_HTTP_VERSION_1_0: return "1.0"
        case CURL_HTTP_VERSION_1_1: return "1.1"
        case CURL_HTTP_VERSION_2_0: return "2"
        case CURL_HTTP_VERSION_3: return "3"
        default: return ""
        }
    }

    /// Shutdown: abort every in-flight and queued transfer with `.shutdown`, then free the multi handle.
    private func stopAll(extra: [CurlTransfer]) {
        var aborted: [CurlTransfer] = []
        for (easy, t) in active {
            curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)
            aborted.append(t)
        }
        active.removeAll()
        for easy in idleHandles { curl_easy_cleanup(easy) }
        idleHandles.removeAll()
        aborted += waiting[waitingHead...]
        waiting.removeAll()
        waitingHead = 0
        for t in aborted + extra {
            complete(t, .failure(.shutdown), httpVersion: "", newConnections: 0)
        }
        // `send` no longer touches the multi handle (state is .stopping, checked under the same lock),
        // and `shutdown` only wakes it while the state is still .running, so it is safe to free now.
        shared.inbox.withLock { _ in }
        curl_multi_cleanup(multi)
    }
}
