import CLinux
import CNGHTTP2
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
    let userAgent: UnsafeMutableBufferPointer<UInt8>?
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
        var resolutions: [H2Resolution] = []
        while true {
            let running = shared.inbox.withLock { inbox -> Bool in
                swap(&inbox.pending, &incoming)
                if !inbox.resolved.isEmpty { swap(&inbox.resolved, &resolutions) }
                return inbox.running
            }
            if !running {
                stopAll(extra: incoming)
                return
            }
            for resolution in resolutions { resolved(resolution) }
            resolutions.removeAll(keepingCapacity: true)
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
        guard let origin = origin(for: r.request.url) else {
            return complete(r, .failure(.other(code: 3, message: "URL not supported by the HTTP/2 client: \(r.request.url)")))
        }
        if r.sendBy <= now { return complete(r, .failure(.sendByPassed)) }
        if let error = buildHeaders(r, origin: origin) { return complete(r, .failure(error)) }
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

    /// The origin of an `https://host[:port]/path` URL (the last one is checked first: pushes come in
    /// runs to one gateway); nil for anything else.
    func origin(for url: String) -> H2Origin? {
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
    func buildHeaders(_ r: H2Request, origin: H2Origin) -> PushTransportError? {
        let headers = r.request.headers
        var url = r.request.url
        var lengthDigits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // room for 24 decimal digits
        let lengthCount = withUnsafeMutableBytes(of: &lengthDigits) { Self.decimal(r.request.body.count, into: $0) }
        let pathCount = url.utf8.count - origin.prefix.count
        // The sizes first (O(1) on native strings), then one pass per string that checks and copies.
        var total = pathCount + lengthCount
        for (name, value) in headers { total += name.utf8.count + value.utf8.count }
        // One allocation: the header list, then the bytes it points into.
        let nvBytes = MemoryLayout<nghttp2_nv>.stride * (4 + headers.count + 2)
        let storage = UnsafeMutableRawPointer.allocate(byteCount: nvBytes + total, alignment: MemoryLayout<nghttp2_nv>.alignment)
        let nv = storage.bindMemory(to: nghttp2_nv.self, capacity: 4 + headers.count + 2)
        let bytes = (storage + nvBytes).bindMemory(to: UInt8.self, capacity: max(1, total))
        r.headerStorage = storage
        r.nv = nv
        var at = 0
        var count = 0
        func put(_ name: UnsafeMutablePointer<UInt8>, _ nameLength: Int, _ value: UnsafeMutablePointer<UInt8>, _ valueLength: Int,
                 flags: UInt8 = Self.pinned) {
            nv[count] = nghttp2_nv(name: name, value: value, namelen: nameLength, valuelen: valueLength, flags: flags)
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
            let nameAt = bytes + at
            guard let nameCount = Self.copyName(name, to: nameAt),
                  let valueCount = Self.copyValue(value, to: nameAt + nameCount) else {
                return .other(code: 43, message: "invalid request header \(name.debugDescription)")
            }
            let lowered = UnsafeBufferPointer(start: nameAt, count: nameCount)
            if Self.equal(lowered, "accept-encoding") {
                return .other(code: 43, message: "accept-encoding is not supported by the HTTP/2 push client")
            }
            if Self.equal(lowered, "user-agent") { hasUserAgent = true }
            put(nameAt, nameCount, nameAt + nameCount, valueCount,
                flags: Self.equal(lowered, "apns-id") ? Self.pinned | Self.notIndexed : Self.pinned)
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

    /// Copies a header name lower-cased to `out` (room for its UTF-8 bytes); nil unless it is a
    /// token: not empty, no space, colon, control or non-ASCII byte (RFC 9110 §5.6.2).
    static func copyName(_ name: String, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        // Native strings lend their bytes without a copy of the String itself (no retain, no uniqueness check).
        if let copied = name.utf8.withContiguousStorageIfAvailable({ copyName($0, to: out) }) { return copied }
        var name = name
        return name.withUTF8 { copyName($0, to: out) }
    }

    static func copyName(_ n: UnsafeBufferPointer<UInt8>, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        guard let base = n.baseAddress, !n.isEmpty else { return nil }
        // Every byte copied and judged without a branch, and the name refused after the loop
        // (issue 17: one that stopped at the first bad byte cost 1.46k instructions a push over a
        // push's header names, this one 1.23k).
        var bad: UInt8 = 0
        for i in 0..<n.count {
            let b = base[i]
            // Outside 0x21...0x7E (a space, a control or non-ASCII byte), or a colon.
            let outside: UInt8 = b &- 0x21 >= 0x5E ? 1 : 0
            let colon: UInt8 = b == UInt8(ascii: ":") ? 1 : 0
            bad |= outside | colon
            out[i] = b &- 0x41 < 26 ? b | 0x20 : b
        }
        return bad == 0 ? n.count : nil
    }

    /// Copies a header value to `out` (room for its UTF-8 bytes); nil if it holds CR, LF or NUL (a
    /// header injection). One memcpy and three memchr: values are mostly long (bearer tokens).
    static func copyValue(_ value: String, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        if let copied = value.utf8.withContiguousStorageIfAvailable({ copyValue($0, to: out) }) { return copied }
        var value = value
        return value.withUTF8 { copyValue($0, to: out) }
    }

    static func copyValue(_ v: UnsafeBufferPointer<UInt8>, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        guard let base = v.baseAddress, !v.isEmpty else { return 0 }
        if memchr(base, 0x0D, v.count) != nil || memchr(base, 0x0A, v.count) != nil || memchr(base, 0, v.count) != nil {
            return nil
        }
        out.update(from: base, count: v.count)
        return v.count
    }

    /// nghttp2 takes the names and values as they are, without copying them at submit: every one
    /// lives as long as the request (its `headerStorage`), the origin (`:authority`) or the process
    /// (the static ones, the user agent), and the request outlives its stream, whose HEADERS frame is
    /// the last use. Names are lower-case already (nghttp2 lower-cases only what it copies).
    static let pinned = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)

    /// HPACK "literal never indexed" (RFC 7541 §6.2.3) for a header whose value is new on every
    /// request (APNs' `apns-id`, a UUID per push). Indexed, each would enter the encoder's dynamic
    /// table, evict the lasting entries (the bearer token among them, then sent in full again) and
    /// lengthen every later table search: nghttp2 chains entries of one name and compares each value.
    /// `:path` and `content-length` nghttp2 never indexes.
    static let notIndexed = UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)

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
        guard let session = connection.session, let nv = r.nv else { return }
        // The sweep of this pass dropped every request past its deadline; this is for the rest.
        if r.sendBy <= now { return complete(r, .failure(.sendByPassed)) }
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
        sendBys.remove(r)
        r.deadline = min(now &+ UInt64(max(1, configuration.requestTimeoutMs)) * 1_000_000, r.sendBy)
        timeouts.insert(r)
        markDirty(connection)
    }
}
