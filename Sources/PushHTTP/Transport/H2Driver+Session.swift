import CLinux
import CNGHTTP2
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// What nghttp2 reports back to the driver (headers, data, stream close, frames) and how requests
// finish: retries after GOAWAY, timeouts, a failed connection, shutdown.

extension H2Driver {
    // MARK: session callbacks (called from nghttp2_session_mem_recv / mem_send)

    func onHeader(_ connection: H2Connection, streamID: Int32, category: Int32,
                  name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let r = connection.request(onStream: streamID), !r.done else { return }
        if name.count == 7, name[0] == UInt8(ascii: ":"), name[1] == UInt8(ascii: "s") {   // ":status"
            var status = 0
            for b in value where b >= 0x30 && b <= 0x39 { status = status * 10 + Int(b - 0x30) }
            if status >= 100 && status < 200 { r.responseHeaders.removeAll(keepingCapacity: true); return }
            r.status = status
            return
        }
        if name.first == UInt8(ascii: ":") { return }
        if category == Int32(NGHTTP2_HCAT_HEADERS.rawValue) && r.status == 0 { return }
        // One allocation for a provider's few answer headers, not a growth per header.
        if r.responseHeaders.capacity == 0 { r.responseHeaders.reserveCapacity(4) }
        r.responseHeaders.append((Self.headerName(name), String(decoding: value, as: UTF8.self)))
    }

    /// An answer header's name as a `String`: the providers' usual ones are literals (no decoding,
    /// no storage of their own), any other is decoded.
    static func headerName(_ name: UnsafeBufferPointer<UInt8>) -> String {
        switch name.count {
        case 7 where H2RequestBlock.equal(name, "apns-id"): return "apns-id"
        case 11 where H2RequestBlock.equal(name, "retry-after"): return "retry-after"
        case 12 where H2RequestBlock.equal(name, "content-type"): return "content-type"
        case 14 where H2RequestBlock.equal(name, "apns-unique-id"): return "apns-unique-id"
        case 14 where H2RequestBlock.equal(name, "content-length"): return "content-length"
        default: return String(decoding: name, as: UTF8.self)
        }
    }

    func onData(_ connection: H2Connection, streamID: Int32, data: UnsafeBufferPointer<UInt8>) {
        guard let r = connection.request(onStream: streamID), !r.done else { return }
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
        guard let r = connection.request(onStream: streamID), r.connection === connection else { return }
        connection.streams.remove(r)
        if connection.streams.isEmpty { connection.idleSince = monotonicNanoseconds() }
        r.connection = nil
        r.origin.map { markDirty($0) }
        if connection.draining && connection.streams.isEmpty {
            if connection.retired { sayGoodbye(connection) }
            markDirty(connection)
        }
        guard !r.done else { return }
        if errorCode == 0 && r.status > 0 {
            let response = PushHTTPResponse(status: r.status, headers: r.responseHeaders, body: r.responseBody,
                                            connection: PushConnectionID(connection.id))
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
            if connection.idleSince == 0 { connection.idleSince = monotonicNanoseconds() }
            markDirty(connection.origin)
        case NGHTTP2_PING.rawValue:
            // nghttp2 answers the server's PINGs itself; an ACK answers ours.
            guard CNGHTTP2_frame_flags(frame) & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0, connection.pingSentAt != 0 else { return }
            connection.pingSentAt = 0
            shared.pingsAcknowledged.add(1, ordering: .relaxed)
        case NGHTTP2_GOAWAY.rawValue:
            connection.goawayLastStreamID = CNGHTTP2_goaway_last_stream_id(frame)
            drain(connection)
        default:
            break
        }
    }

    /// A connection that takes no new streams (RFC 9113 §6.8): the server's GOAWAY, or an answer
    /// that said it is unusable (`retire`). Its waiting requests go to another connection (opened
    /// if none is left: `dispatch` counts only connections not draining); its streams in flight
    /// finish, and `flush` closes it once they all did.
    func drain(_ connection: H2Connection) {
        connection.draining = true
        markDirty(connection.origin)
        markDirty(connection)
    }

    /// Retires a connection an answer on it condemned (APNs `Shutdown`, `IdleTimeout`…: ADR 0018):
    /// drained as after the server's GOAWAY, then, once its last stream ended, closed with a
    /// GOAWAY of ours (`sayGoodbye`). Not sooner: a server may take a client's GOAWAY for the
    /// connection's end and drop the streams still on it (hypercorn does).
    func retire(_ connection: H2Connection) {
        guard connection.state == .open, !connection.draining else { return }
        connection.retired = true
        drain(connection)
        if connection.streams.isEmpty { sayGoodbye(connection) }
    }

    /// GOAWAY NO_ERROR and close once written (`flush` sees nghttp2 want nothing more): the end of
    /// a retired connection whose streams all ended, or of one idle too long.
    func sayGoodbye(_ connection: H2Connection) {
        guard let session = connection.session else { return }
        nghttp2_session_terminate_session(session, UInt32(NGHTTP2_NO_ERROR.rawValue))
        connection.draining = true
        markDirty(connection)
    }

    func onFrameSend(_ connection: H2Connection, type: UInt8, streamID: Int32) {
        guard UInt32(type) == NGHTTP2_HEADERS.rawValue, let r = connection.request(onStream: streamID) else { return }
        r.headersSent = true
    }

    // MARK: finishing

    /// Puts a request the server did not process back in its origin's queue (at the front: it is the
    /// oldest); false once it was retried `maxRetries` times.
    func retry(_ r: H2Request) -> Bool {
        guard r.retries < Self.maxRetries, let origin = r.origin else { return false }
        timeouts.remove(r)
        r.retries += 1
        r.connection = nil
        r.streamID = -1
        origin.queue.insert(r, at: origin.queueHead)
        insertSendBy(r)
        markDirty(origin)
        return true
    }

    /// Puts a request waiting for a stream in the send-by list; nothing for a request without a
    /// deadline or one already in it.
    func insertSendBy(_ r: H2Request) {
        guard r.sendBy != .max, !sendBys.contains(r) else { return }
        sendBys.insert(r)
    }

    func complete(_ r: H2Request, _ result: Result<PushHTTPResponse, PushTransportError>) {
        guard !r.done else { return }
        r.done = true
        timeouts.remove(r)
        sendBys.remove(r)
        shared.completed.add(1, ordering: .relaxed)
        r.finish(result, newConnection: r.newConnection)
    }

    /// Ends a connection: its unfinished streams are retried (if the server never processed them) or
    /// fail with `error`; if it never opened and no other connection serves its origin, the origin's
    /// waiting requests fail with `error` too.
    func fail(_ connection: H2Connection, _ error: PushTransportError) {
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
        let streams = connection.streams.removeAll()
        // Oldest first, inserted at the front in reverse so the queue keeps their order.
        var retried: [H2Request] = []
        for r in streams where !r.done {
            r.connection = nil
            let unprocessed = !r.headersSent || r.streamID > connection.goawayLastStreamID
            if unprocessed && r.retries < Self.maxRetries {
                timeouts.remove(r)
                r.retries += 1
                r.streamID = -1
                retried.append(r)
            } else {
                complete(r, .failure(error))
            }
        }
        origin.queue.insert(contentsOf: retried, at: origin.queueHead)
        for r in retried { insertSendBy(r) }
        if !wasUsable && !origin.connections.contains(where: { $0.state == .open && $0.settingsReceived }) {
            while origin.waiting > 0 { complete(origin.popWaiting(), .failure(error)) }
        }
        markDirty(origin)
    }

    /// Send-by deadlines of waiting requests, stream timeouts, connection deadlines (connect + TLS +
    /// SETTINGS) and idle age.
    func sweep(now: UInt64) {
        if let first = sendBys.head, first.sendBy <= now {
            // Never on the wire: dropped where they wait, then taken out of their queues.
            while let r = sendBys.head, r.sendBy <= now {
                r.origin?.holdsDone = true
                complete(r, .failure(r.origin.flatMap(Self.unreachedBySendBy) ?? .sendByPassed))
            }
            for origin in origins where origin.holdsDone { origin.removeDone() }
        }
        while let r = timeouts.head, r.deadline <= now {
            let connection = r.connection
            complete(r, .failure(.timeout))
            if let connection, let session = connection.session {
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), r.streamID, UInt32(NGHTTP2_CANCEL.rawValue))
                markDirty(connection)
                // A stream that got no answer in time may sit on a dead connection: ask now rather
                // than after the idle interval, while new requests keep going to it.
                if pingIdle > 0 && connection.pingSentAt == 0 { sendPing(connection, now: now) }
            }
        }
        let idleLimit = UInt64(max(1, configuration.maxIdleConnectionSeconds)) * 1_000_000_000
        var expired: [H2Connection] = []   // no allocation while none expire (every wake-up runs this)
        var dead: [H2Connection] = []
        for connection in connections.values {
            if connection.state != .open || !connection.settingsReceived {
                if connection.deadline <= now { expired.append(connection) }
                continue
            }
            if connection.pingSentAt != 0 {
                if now &- connection.pingSentAt >= pingTimeout { dead.append(connection); continue }
            } else if pingIdle > 0 && now > connection.lastReadAt && now - connection.lastReadAt >= pingIdle {
                sendPing(connection, now: now)
            }
            if connection.streams.isEmpty && connection.idleSince > 0 && now &- connection.idleSince > idleLimit,
               connection.session != nil {
                // Idle too long: say goodbye and close once that is written.
                sayGoodbye(connection)
            }
        }
        for connection in expired { fail(connection, .timeout) }
        for connection in dead {
            fail(connection, .protocolError("HTTP/2 PING not acknowledged within \(configuration.pingTimeoutMilliseconds) ms: connection to \(connection.origin.host) presumed dead"))
        }
    }

    /// Why a request waiting at `origin` is dropped at its send-by deadline when no connection to
    /// it is ready (TCP, TLS or the server's SETTINGS still pending: a host that accepts and never
    /// answers, ADR 0015): `.connect`, retried alike (it never left the host) but a provider that
    /// did not answer, not a busy connection's backlog (`.sendByPassed`, nil here).
    static func unreachedBySendBy(_ origin: H2Origin) -> PushTransportError? {
        guard !origin.connections.contains(where: { $0.state == .open && $0.settingsReceived }) else { return nil }
        return .connect("no connection to \(origin.host) port \(origin.port) was ready by the send-by deadline (TCP, TLS or the server's SETTINGS pending)")
    }

    /// The idle interval after which a connection is sent a PING, ns (0: never).
    var pingIdle: UInt64 { UInt64(max(0, configuration.pingIdleMilliseconds)) &* 1_000_000 }
    /// How long a PING may go unacknowledged before its connection is closed, ns.
    var pingTimeout: UInt64 { UInt64(max(1, configuration.pingTimeoutMilliseconds)) &* 1_000_000 }

    /// Sends a health PING (RFC 9113 §6.7) on an open connection; its ACK clears `pingSentAt`.
    func sendPing(_ connection: H2Connection, now: UInt64) {
        guard let session = connection.session,
              nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil) == 0 else { return }
        connection.pingSentAt = max(1, now)
        shared.pingsSent.add(1, ordering: .relaxed)
        markDirty(connection)
    }

    /// Shutdown: everything queued or in flight completes with `.shutdown`, then the resources go.
    func stopAll(extra: [H2Request]) {
        for connection in Array(connections.values) {
            let streams = connection.streams.removeAll()
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
        while let r = timeouts.head { timeouts.remove(r) }
        while let r = sendBys.head { sendBys.remove(r) }
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
