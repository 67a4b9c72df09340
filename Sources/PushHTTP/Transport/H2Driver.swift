import CLinux
import CNGHTTP2
import HeraldCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// NativeHTTP2Client's driver thread: the epoll loop, accepting requests from the inbox, and
// dispatching them onto connections' streams.

/// The driver thread's state; touched only by that thread after `init`.
///
/// The lists and maps changed in place on every push are `@exclusivity(unchecked)`: one thread
/// only, so the dynamic check of overlapping accesses can find nothing, and it cost ~20 checks a
/// push across the driver's types (~1.3k instructions, issue 17).
final class H2Driver: @unchecked Sendable {
    let shared: H2Shared
    let configuration: NativeHTTP2Client.Configuration
    let epollFD: Int32
    let sslContext: OpaquePointer
    let callbacks: OpaquePointer
    var origins: [H2Origin] = []
    var lastOrigin: H2Origin?
    @exclusivity(unchecked) var connections: [UInt64: H2Connection] = [:]
    var nextConnectionID: UInt64 = 1
    @exclusivity(unchecked) var dirtyConnections: [H2Connection] = []
    @exclusivity(unchecked) var dirtyOrigins: [H2Origin] = []
    /// Requests holding a stream, in deadline order: most streams get the same timeout, so a new one
    /// goes at the end (one sooner for its send-by deadline is placed from the end).
    @exclusivity(unchecked) var timeouts = H2RequestList(order: .deadline)
    /// Requests with a send-by deadline waiting in their origin's queue, earliest `sendBy` first.
    @exclusivity(unchecked) var sendBys = H2RequestList(order: .sendBy)
    let readBuffer = UnsafeMutableRawPointer.allocate(byteCount: 32 * 1024, alignment: 16)
    static let maxRetries = 5
    static let writeBatchBytes = 64 * 1024
    static let wakeID: UInt64 = 0

    /// The clock of deadlines and idle ages, ns (CLOCK_MONOTONIC outside tests).
    let monotonicNanoseconds: @Sendable () -> UInt64
    /// A new connection's host lookup, run off the driver thread (`getaddrinfo` outside tests).
    let resolve: H2Resolver

    init(configuration: NativeHTTP2Client.Configuration,
         monotonicNanoseconds: @escaping @Sendable () -> UInt64,
         resolve: @escaping H2Resolver = h2SystemResolver) throws(PushTransportError) {
        self.configuration = configuration
        self.monotonicNanoseconds = monotonicNanoseconds
        self.resolve = resolve
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
    }

    /// Frees what `init` acquired (after the thread stopped, or when it never started).
    func releaseResources() {
        nghttp2_session_callbacks_del(callbacks)
        SSL_CTX_free(sslContext)
        close(epollFD)
        close(shared.wakeFD)
        readBuffer.deallocate()
    }

    // MARK: loop

    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 64)
        // The inbox's array and this one trade places under the lock, so draining allocates nothing.
        var incoming: [H2Request] = []
        incoming.reserveCapacity(256)
        var resolutions: [H2Resolution] = []
        var retiring: [UInt64] = []
        while true {
            let running = shared.inbox.withLock { inbox -> Bool in
                swap(&inbox.pending, &incoming)
                if !inbox.resolved.isEmpty { swap(&inbox.resolved, &resolutions) }
                if !inbox.retiring.isEmpty { swap(&inbox.retiring, &retiring) }
                return inbox.running
            }
            if !running {
                stopAll(extra: incoming)
                return
            }
            for resolution in resolutions { resolved(resolution) }
            resolutions.removeAll(keepingCapacity: true)
            // Before this pass dispatches: an answer read in the last pass condemned its
            // connection, and no request may get a stream on it now.
            for id in retiring { if let connection = connections[id] { retire(connection) } }
            retiring.removeAll(keepingCapacity: true)
            let now = monotonicNanoseconds()
            for request in incoming { accept(request, now: now) }
            incoming.removeAll(keepingCapacity: true)
            sweep(now: now)
            dispatchDirtyOrigins(now: now)
            flushDirtyConnections()
            let timeout = waitTimeout(now: monotonicNanoseconds())
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
    func waitTimeout(now: UInt64) -> Int32 {
        // A failed write requeued requests or closed a connection: dispatch them without waiting.
        if !dirtyOrigins.isEmpty || !dirtyConnections.isEmpty { return 0 }
        var next = UInt64.max
        if let head = timeouts.head { next = head.deadline }
        if let head = sendBys.head { next = min(next, head.sendBy) }
        let pingIdle = self.pingIdle, pingTimeout = self.pingTimeout
        for connection in connections.values {
            if connection.state != .open || !connection.settingsReceived {
                next = min(next, connection.deadline)
            } else if connection.pingSentAt != 0 {
                next = min(next, connection.pingSentAt &+ pingTimeout)
            } else if pingIdle > 0 {
                next = min(next, connection.lastReadAt &+ pingIdle)
            }
        }
        if !connections.isEmpty { next = min(next, now + 1_000_000_000) }
        if next == UInt64.max { return -1 }
        if next <= now { return 0 }
        return Int32(min((next - now + 999_999) / 1_000_000, 60_000))
    }

    // MARK: accepting requests

    func accept(_ r: H2Request, now: UInt64) {
        // Built on the sending thread; a request it refused fails here, on this thread, like any other.
        guard let block = r.block else { return complete(r, .failure(r.buildError ?? .other(code: 3, message: "no request"))) }
        if r.sendBy <= now { return complete(r, .failure(.sendByPassed)) }
        let origin = origin(for: block)
        r.origin = origin
        enqueue(r, at: origin)
    }

    func enqueue(_ r: H2Request, at origin: H2Origin) {
        origin.queue.append(r)
        insertSendBy(r)
        markDirty(origin)
    }

    func markDirty(_ origin: H2Origin) {
        if !origin.dirty { origin.dirty = true; dirtyOrigins.append(origin) }
    }

    func markDirty(_ connection: H2Connection) {
        if !connection.dirty { connection.dirty = true; dirtyConnections.append(connection) }
    }

    /// The origin of a request's `host[:port]` (the last one is checked first: pushes come in runs
    /// to one gateway), made on first use.
    func origin(for block: H2RequestBlock) -> H2Origin {
        let authority = block.authority
        if let last = lastOrigin, last.matches(authority) { return last }
        if let known = origins.first(where: { $0.matches(authority) }) {
            lastOrigin = known
            return known
        }
        let created = H2Origin(host: String(decoding: UnsafeBufferPointer(rebasing: authority[block.host]), as: UTF8.self),
                               port: block.port, authority: Array(authority))
        origins.append(created)
        lastOrigin = created
        return created
    }

    // MARK: dispatching

    func dispatchDirtyOrigins(now: UInt64) {
        while let origin = dirtyOrigins.popLast() {
            origin.dirty = false
            dispatch(origin, now: now)
        }
    }

    /// Gives waiting requests streams on the least loaded ready connection; opens another connection
    /// when more wait than the open and opening ones can take, up to `maxHostConnections`.
    func dispatch(_ origin: H2Origin, now: UInt64) {
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

    func submit(_ r: H2Request, on connection: H2Connection, now: UInt64) {
        guard let session = connection.session, let block = r.block else { return }
        // The sweep of this pass dropped every request past its deadline; this is for the rest.
        if r.sendBy <= now { return complete(r, .failure(.sendByPassed)) }
        // A write that can take a device out of pushes since its device was read (a delete
        // answered while it waited for a stream): given back unsent, to read the device again.
        if let audience = r.audience, !audience.isCurrent { return complete(r, .failure(.audienceChanged)) }
        r.bodyOffset = 0
        r.headersSent = false
        r.status = 0
        r.responseHeaders.removeAll()
        r.responseBody.removeAll()
        let me = Unmanaged.passUnretained(r).toOpaque()
        let id: Int32
        if block.bodyCount == 0 {
            id = nghttp2_submit_request(session, nil, block.nv, block.nvCount, nil, me)
        } else {
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: me), read_callback: h2ReadBody)
            id = nghttp2_submit_request(session, nil, block.nv, block.nvCount, &provider, me)
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
        connection.streams.append(r)
        sendBys.remove(r)
        r.deadline = min(now &+ UInt64(max(1, configuration.requestTimeoutMs)) * 1_000_000, r.sendBy)
        timeouts.insert(r)
        markDirty(connection)
    }
}
