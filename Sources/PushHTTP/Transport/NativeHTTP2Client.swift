import CLinux
import CNGHTTP2
import CNGHTTP2Shim
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Herald's own HTTP/2 push client (issue 17): libnghttp2 for framing and HPACK, OpenSSL for TLS,
/// one epoll driver thread. It keeps `HTTP2Client`'s contract (completion exactly once, any status is
/// a response, the same `PushTransportError` cases with the same transient/permanent meaning) at a
/// fraction of its cost per request: no easy handle per request, no pass over every transfer per
/// wake-up, no read hold-off.
///
/// Design:
/// - Other threads append to a `Mutex`-guarded inbox and write an eventfd when it was empty; the
///   driver thread owns everything else (sockets, TLS, sessions, queues) and runs every completion.
///   A request's header list, the bytes it points into and its body are built in one allocation
///   on the sending thread (`H2RequestBlock`), so the one driver thread only frames them and never
///   releases the `PushHTTPRequest`; a request refused there still fails on the driver thread.
/// - Per origin (`https` host + port) at most `maxHostConnections` connections, each carrying at most
///   `min(maxConcurrentStreams, the server's SETTINGS_MAX_CONCURRENT_STREAMS)` streams. Requests that
///   fit nowhere wait in the origin's FIFO (no clock running but their send-by deadline); another connection is opened only when
///   the queue exceeds what the open and opening ones can take, and a connection takes streams only
///   after the server's SETTINGS arrived. A request goes to the least loaded connection.
/// - Connections: `getaddrinfo` on a dispatch thread, not the driver's (no cache: Apple asks for a fresh lookup per connection), each address
///   in turn, non-blocking connect with `TCP_NODELAY` and TCP keep-alive, TLS ≥ 1.2 with SNI, hostname
///   (or IP) verification against the system CAs plus `caFile`, ALPN `h2` required (a server that does
///   not agree fails with `.tls`). `connectTimeoutMs` bounds TCP + TLS + the server's SETTINGS.
/// - I/O: per wake-up, every readable connection is read until `EAGAIN` (each TLS record straight into
///   `nghttp2_session_mem_recv`), then every connection with frames to send gets them in one buffer and
///   one `SSL_write` pass (up to 64 KiB per write).
/// - GOAWAY: the connection takes no new streams; streams the server did not process (above its
///   last stream id, refused, or never sent) are retried on another connection up to 5 times; the rest
///   finish or fail with `.protocolError` when the connection ends. A connection an answer said is
///   unusable (`retireConnection`, APNs `Shutdown`…: ADR 0018) is drained the same way and closed
///   with our GOAWAY once its streams ended; the next request that finds no other connection opens a new one.
/// - `requestTimeoutMs` runs from when a request gets a stream; on expiry the stream is reset
///   (RST_STREAM CANCEL) and the request fails with `.timeout`; the connection stays.
/// - A request with `sendWithinMilliseconds` (its push's send-by deadline, from the job's lease) is
///   dropped at that deadline while it still waits for a stream (`.sendByPassed`: never sent), and
///   on a stream times out at whichever comes first, the deadline or `requestTimeoutMs`: a push
///   never outlives its lease in the client, however long the provider stalls.
/// - Health (RFC 9113 §6.7; Apple asks providers to check a connection with PING): a connection that
///   received no frame for `pingIdleMilliseconds` (60 s), or whose stream just timed out, is sent a
///   PING; one not acknowledged within `pingTimeoutMilliseconds` (20 s) is closed as dead (a NAT or
///   load balancer dropped it without a word): its streams on the wire fail with `.protocolError`
///   (transient), those never sent go to another connection, and the next request opens a new one.
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
    /// The driver's clock: a request's send-by deadline is placed on it when the request is handed over.
    private let monotonicNanoseconds: @Sendable () -> UInt64
    /// `configuration.userAgent`'s bytes (empty: none), copied into each request's block.
    private let userAgent: [UInt8]

    /// Starts the driver thread. Throws `.other` when libnghttp2 cannot be opened (CNGHTTP2Shim opens it
    /// here, on first use), or the TLS context, epoll or the thread cannot be set up, `.tls` when
    /// `caFile` cannot be loaded.
    public convenience init(configuration: Configuration = Configuration()) throws(PushTransportError) {
        try self.init(configuration: configuration, monotonicNanoseconds: h2MonotonicNanoseconds)
    }

    /// `monotonicNanoseconds` is the driver's clock for deadlines and idle ages (tests move it by hand);
    /// `resolve` looks up a new connection's host, off the driver thread (tests make it slow).
    init(configuration: Configuration, monotonicNanoseconds: @escaping @Sendable () -> UInt64,
         resolve: @escaping H2Resolver = h2SystemResolver) throws(PushTransportError) {
        if let reason = herald_nghttp2_load() {
            throw .other(code: -1, message: "libnghttp2 could not be loaded: \(String(cString: reason))")
        }
        let driver = try H2Driver(configuration: configuration, monotonicNanoseconds: monotonicNanoseconds, resolve: resolve)
        self.configuration = configuration
        self.shared = driver.shared
        self.monotonicNanoseconds = monotonicNanoseconds
        self.userAgent = Array((configuration.userAgent ?? "").utf8)
        guard let tid = startDriverThread(named: "herald-h2", driver.run) else {
            driver.releaseResources()
            throw .other(code: -1, message: "could not start the HTTP/2 driver thread")
        }
        self.thread = tid
    }

    deinit { shutdown() }

    /// Connections opened so far (one per connection attempt that got a socket, whatever came of it).
    public var connectionsOpened: Int { shared.connectionsOpened.load(ordering: .relaxed) }
    /// Health PINGs sent so far (RFC 9113 §6.7; see `Configuration.pingIdleMilliseconds`).
    public var pingsSent: Int { shared.pingsSent.load(ordering: .relaxed) }
    /// Health PINGs the server acknowledged so far.
    public var pingsAcknowledged: Int { shared.pingsAcknowledged.load(ordering: .relaxed) }
    /// Requests finished so far (success or failure).
    public var requestsCompleted: Int { shared.completed.load(ordering: .relaxed) }

    /// Queues one POST. `completion` is called exactly once, on the driver thread (or synchronously on the
    /// caller's thread if the client is already shut down).
    public func send(_ request: PushHTTPRequest,
                     completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>) -> Void) {
        enqueue(request, .typed(completion))
    }

    /// `HTTP2PushTransport`'s send: the caller's closure kept as it is (no closure wrapped around it
    /// to widen the error, issue 17).
    public func sendForTransport(_ request: PushHTTPRequest,
                                 completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void) {
        enqueue(request, .untyped(completion))
    }

    /// Like `send(_:completion:)`, also passing the HTTP version ("2", or "" without a response) and
    /// whether the request was the first on a new connection.
    public func sendReportingInfo(
        _ request: PushHTTPRequest,
        completion: @escaping @Sendable (Result<PushHTTPResponse, PushTransportError>, PushTransferInfo) -> Void
    ) {
        enqueue(request, .reportingInfo(completion))
    }

    /// Builds the request's header list here, on the caller's thread, and hands it to the driver.
    private func enqueue(_ request: PushHTTPRequest, _ completion: H2Completion) {
        // Only the configuration's gateways come here: this client does not check the addresses it
        // connects to, so a client-given URL is refused rather than sent unchecked.
        guard !request.publicAddressesOnly else {
            return completion(.failure(.addressNotPublic("this client does not check destination addresses (a Web Push endpoint goes through libcurl)")),
                              newConnection: false, started: h2MonotonicNanoseconds())
        }
        let item = H2Request(request: request, userAgent: userAgent, completion: completion)
        item.audience = request.sendWhileAudience
        if let within = request.sendWithinMilliseconds {
            // From now, on the driver's clock: the wait in the inbox counts too.
            item.sendBy = monotonicNanoseconds() &+ UInt64(clamping: max(0, within)) &* 1_000_000
        }
        let accepted = shared.inbox.withLock { inbox -> Bool in
            guard inbox.running else { return false }
            inbox.pending.append(item)
            // The driver drains the whole inbox at once: one wake-up per non-empty inbox suffices.
            if inbox.pending.count == 1 { shared.wake() }
            return true
        }
        if !accepted { item.finish(.failure(.shutdown), newConnection: false) }
    }

    /// Takes `connection` out of service (`PushTransport.retireConnection(_:)`, ADR 0018): the
    /// driver drains it as after the server's GOAWAY (RFC 9113 §6.8); its streams in flight
    /// finish, then it is closed with a GOAWAY of ours. Unknown or closed: nothing.
    public func retireConnection(_ connection: PushConnectionID) {
        shared.inbox.withLock { inbox in
            guard inbox.running else { return }
            inbox.retiring.append(connection.rawValue)
            shared.wake()
        }
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
