import CLinux
import CNGHTTP2
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The driver's connections: address lookup, non-blocking connect, TLS and ALPN, the HTTP/2
// session's start, and reading and writing its frames.

extension H2Driver {
    // MARK: connections

    func openConnection(_ origin: H2Origin, now: UInt64) {
        let connection = H2Connection(id: nextConnectionID, origin: origin)
        connection.driver = self
        nextConnectionID += 1
        connection.deadline = now &+ UInt64(max(1, configuration.connectTimeoutMs)) * 1_000_000
        connection.streamLimit = max(1, configuration.maxConcurrentStreams)
        origin.connections.append(connection)
        connections[connection.id] = connection
        shared.connectionsOpened.add(1, ordering: .relaxed)
        // The lookup blocks (seconds when a DNS server is slow or gone): it runs off this thread,
        // so the other connections' sends go on meanwhile. The connection waits in `.connecting`
        // with no socket; its connect deadline covers the lookup too. The answer comes back through
        // the inbox, under its lock and only while the driver runs (the eventfd is closed after).
        let id = connection.id, host = origin.host, port = Int(origin.port)
        let resolve = self.resolve, shared = self.shared
        DispatchQueue.global().async {
            let addresses = resolve(host, port)
            shared.inbox.withLock { inbox in
                guard inbox.running else { return }
                inbox.resolved.append(H2Resolution(connectionID: id, addresses: addresses))
                shared.wake()
            }
        }
    }

    /// A lookup's answer: connects to the first address that takes, or fails the connection. A
    /// connection that ended meanwhile (its deadline, a stop) is gone and the answer is dropped.
    func resolved(_ resolution: H2Resolution) {
        guard let connection = connections[resolution.connectionID], connection.state == .connecting, connection.fd < 0,
              connection.addresses.isEmpty else { return }
        switch resolution.addresses {
        case .failure(let error):
            fail(connection, .connect("Could not resolve host: \(connection.origin.host) (\(error.reason))"))
        case .success(let addresses):
            connection.addresses = addresses
            connectNextAddress(connection)
        }
    }

    func connectNextAddress(_ connection: H2Connection) {
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

    func setEvents(_ connection: H2Connection, _ events: UInt32) {
        guard connection.epollEvents != events, connection.fd >= 0 else { return }
        var event = epoll_event()
        event.events = events
        event.data.u64 = connection.id
        epoll_ctl(epollFD, EPOLL_CTL_MOD, connection.fd, &event)
        connection.epollEvents = events
    }

    func handle(_ connection: H2Connection, events: UInt32) {
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

    func startTLS(_ connection: H2Connection) {
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

    func handshake(_ connection: H2Connection) {
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
                return fail(connection, .certificateRejected("\(text) (\(connection.origin.host) port \(connection.origin.port))"))
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

    func startSession(_ connection: H2Connection) {
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
        connection.lastReadAt = monotonicNanoseconds()
        connection.state = .open
        setEvents(connection, EPOLLIN.rawValue)
        markDirty(connection)
    }

    // MARK: reading and writing

    func readAll(_ connection: H2Connection) {
        guard let ssl = connection.ssl, let session = connection.session else { return }
        ERR_clear_error()
        var readAny = false
        while true {
            let n = SSL_read(ssl, readBuffer, 32 * 1024)
            if n > 0 {
                if !readAny {
                    // Before the frames are handled: a completion they run may already see it.
                    readAny = true
                    connection.lastReadAt = monotonicNanoseconds()
                }
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

    func flushDirtyConnections() {
        // `flush` may fail a connection, which requeues requests and marks origins dirty; those are
        // dispatched on the next pass (after epoll_wait returns at once: see waitTimeout's sweep).
        while let connection = dirtyConnections.popLast() {
            connection.dirty = false
            if connection.state == .open { flush(connection) }
        }
    }

    /// Writes everything nghttp2 has queued: frames gathered into one buffer, one `SSL_write` per 64 KiB.
    func flush(_ connection: H2Connection) {
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
}
