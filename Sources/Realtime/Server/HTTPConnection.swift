import CLinux
import Glibc

/// One accepted TCP connection: HTTP/1.1 requests answered in order, or, after `GET /v1/stream`,
/// an SSE stream fed by the hub.
///
/// Owned by the event loop that accepted it (`context.loop`); every method runs there.
final class HTTPConnection: EventLoopHandler, StreamSubscriber {
    enum State {
        /// Reading and answering requests.
        case reading
        /// A `.deferred` route is running elsewhere; later pipelined requests wait.
        case awaiting(Pending)
        /// An open SSE stream.
        case stream(EventStream)
        /// An open WebSocket.
        case websocket(WebSocketSession)
        /// Sending the last bytes, then closing (also: lingering after `shutdown(SHUT_WR)`).
        case closing
        case closed
    }

    /// A class, so `State` stays one word plus a tag: every idle stream carries a `State`.
    final class Pending {
        let ticket: UInt64
        let keepAlive: Bool
        let isHead: Bool
        let versionMinor: Int
        let allowOrigin: String?
        init(ticket: UInt64, keepAlive: Bool, isHead: Bool, versionMinor: Int, allowOrigin: String?) {
            self.ticket = ticket
            self.keepAlive = keepAlive
            self.isHead = isHead
            self.versionMinor = versionMinor
            self.allowOrigin = allowOrigin
        }
    }

    // Stored properties are laid out in declaration order: `registryIndex` shares `fd`'s word and
    // the flags come last, after the words, where they take 5 bytes and no padding. Between 8-byte
    // fields each flag took a word, and every idle stream is one of these (issue 17: 186 → 165
    // bytes, glibc's block 208 → 176; with `awaitingAnnouncement` moved here from `EventStream`).
    let fd: Int32
    /// Where `context.connections` holds this connection; -1 when it does not.
    var registryIndex: Int32 = -1
    let remoteAddress: String
    /// `unowned(unsafe)`: the loop's context outlives every connection it adopts (it holds them in
    /// its registry and lives as long as the server), and a checked `unowned` read costs an atomic
    /// strong retain and release on each of the several reads per message written (issue 13).
    unowned(unsafe) let context: LoopContext
    // The properties below marked `@exclusivity(unchecked)` are on the per-subscriber write path
    // (every message to every subscriber reads or changes them). A connection is touched by its own
    // loop only, one call at a time, and no method holds an access across a call that could reenter
    // (the hub defers closes until its pass ends), so the runtime's dynamic exclusivity check
    // (a thread-local access set, ~75 instructions a property access) guards nothing here; it was
    // 38 % of the instructions of a burst to 1,000 subscribers (callgrind, issue 13).
    @exclusivity(unchecked) var hubSlots = HubSlots()

    @exclusivity(unchecked) var state: State = .reading
    /// Boxed: a stream or WebSocket drops it after its one request, and inline it would cost every
    /// idle stream the parser's few hundred bytes (issue 8: ≤ 2 KiB per idle SSE stream).
    var parser: RequestParserBox?
    @exclusivity(unchecked) var outbound = OutboundQueue()
    /// Stream messages waiting for room in `outbound` (replays, paced).
    @exclusivity(unchecked) var backlog = StreamBacklog()
    /// When the request being received began (monotonic ns); 0 when between requests.
    private var requestStartedAt: UInt64
    private var lastActivityAt: UInt64
    @exclusivity(unchecked) var lastWriteAt: UInt64
    private var closeDeadline: UInt64 = 0
    /// What answering requests needs beyond the parser; nil once the connection is a stream.
    private var requests: RequestState? = RequestState()
    /// `outbound` holds bytes no `send` has been tried for yet; the loop flushes it at turn end.
    @exclusivity(unchecked) var flushQueued = false
    private var readPaused = false
    private var lingering = false
    /// The peer half-closed (read returned 0) while an answer was still owed or queued, or on an
    /// open SSE stream (RFC 9112 §9.6: it may still read): finish sending, then close without
    /// lingering for an EOF that already came.
    private var peerClosed = false
    /// The open SSE stream's or WebSocket's `ready` and what follows wait in the backlog (and a
    /// WebSocket client's frames in its parser) until presence told the other nodes about the
    /// connection (`holdUntilAnnounced`).
    var awaitingAnnouncement = false

    var configuration: HTTPServerConfiguration { context.configuration }

    /// The request log's and metrics' view of the request being answered. A class the connection
    /// drops when it becomes a stream (with its parser): inline, these 64 bytes stayed with every
    /// idle stream (issue 17: ≤ 1.2 KiB per idle SSE stream).
    final class RequestState {
        /// `METHOD /pattern` of the request being answered: the metrics label (bounded: patterns, not paths).
        var currentRoute = "unparsed"
        /// The request's id (`X-Request-Id`, echoed), its method and path (no query: it may hold a
        /// token), and when it arrived — for the request log.
        var requestID = ""
        var method = HTTPMethod.get
        var path = ""
        var startedForLog: UInt64 = 0
        /// Tickets of deferred answers, so a late answer for an earlier request is ignored.
        var ticketCounter: UInt64 = 0
    }

    /// `METHOD /pattern` of the request being answered ("stream" once the connection is one).
    var currentRoute: String {
        get { requests?.currentRoute ?? "stream" }
        set { requests?.currentRoute = newValue }
    }
    /// The request's id, echoed as `X-Request-Id`; empty once the connection is a stream.
    var requestID: String {
        get { requests?.requestID ?? "" }
        set { requests?.requestID = newValue }
    }
    /// The request's method and path, for the request log: made only when a line is logged
    /// (issue 17: not one interpolated String per request). The path as a 404 shows it (its first
    /// `shownPathBytes` bytes, then `…`): a 15 KB path does not make a 15 KB log line.
    var requestLine: String {
        guard let requests else { return "" }
        return "\(requests.method) \(Self.shown(requests.path))"
    }
    /// When the request arrived (monotonic ns), for the request log.
    var requestStartedForLog: UInt64 {
        get { requests?.startedForLog ?? 0 }
        set { requests?.startedForLog = newValue }
    }

    init(fd: Int32, address: String, context: LoopContext) {
        self.fd = fd
        self.remoteAddress = address
        self.context = context
        self.parser = RequestParserBox(HTTPRequestParser(limits: context.configuration.parserLimits))
        let now = context.loop.now
        requestStartedAt = now
        lastActivityAt = now
        lastWriteAt = now
    }

    // MARK: - Events

    func handleEvents(_ events: UInt32) {
        // After the peer's FIN a read returns 0 even once the connection has failed (a reset, or
        // `ETIMEDOUT` from the dead-peer bound): the hang-up or error event is what tells.
        if peerClosed, events & (EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            close()
            return
        }
        if events & EPOLLOUT.rawValue != 0 { flush() }
        if events & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0 {
            readAvailable()
        }
    }

    /// Edge-triggered: read until the socket is empty (or input is paused).
    /// Reads per wake-up before the connection yields to the rest of the loop: a busy publisher
    /// must not hold up the deliveries its own publishes queued (edge-triggered, so the rest is
    /// picked up by a task queued behind them).
    private static let readsPerTurn = 8

    private func readAvailable() {
        let buffer = context.readBuffer
        var reads = 0
        while !readPaused {
            if case .closed = state { return }
            if reads == Self.readsPerTurn {
                let reference = LoopBound(self, loop: context.loop)
                context.loop.execute { reference.value.readAvailable() }
                return
            }
            reads += 1
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                lastActivityAt = context.loop.now
                switch state {
                case .reading:
                    parser?.value.append(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                    processRequests()
                case .awaiting:
                    parser?.value.append(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                    // Pipelined input beyond one full request waits in the kernel, not in memory.
                    let cap = configuration.parserLimits.maxHeadBytes + configuration.parserLimits.maxBodyBytes
                    if (parser?.value.bufferedByteCount ?? 0) > cap { readPaused = true }
                case .websocket(let session):
                    readWebSocket(session, UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                case .stream, .closing:
                    continue  // SSE clients have nothing more to say; drain and ignore.
                case .closed:
                    return
                }
            } else if n == 0 {
                // A client may half-close once its request is sent (RFC 9112 §9.6): what it is
                // owed still goes out, since answers wait for the end of the loop turn.
                switch state {
                case .awaiting:
                    peerClosed = true
                    return
                case .reading where !outbound.isEmpty, .closing where !outbound.isEmpty:
                    peerClosed = true
                    beginClosing()
                    return
                case .stream:
                    // An SSE client has nothing to send after its request, and one that says so
                    // still reads: the stream goes on. A FIN does not tell a half-close from a
                    // client that left, so a heartbeat goes now (unless bytes are queued, which
                    // do the same): a closed socket answers it with a reset within a round trip,
                    // and its stream and presence end then, not a heartbeat later. A vanished
                    // one is ended by the kernel's dead-peer bound (ADR 0021); both arrive as
                    // `handleEvents`' hang-up or error, or a failed send.
                    if !peerClosed, outbound.isEmpty { write(context.heartbeatBytes) }
                    peerClosed = true
                    return
                default:
                    close()
                    return
                }
            } else {
                switch errno {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK: return
                default:
                    close()
                    return
                }
            }
        }
    }

    private func processRequests() {
        while case .reading = state, parser != nil {
            // A client that pipelines requests but does not read the answers must not make us
            // buffer them without bound: stop parsing and reading until it catches up.
            if outbound.byteCount > configuration.outboundMaxBytes {
                readPaused = true
                return
            }
            let request: HTTPRequest?
            do {
                request = try parser!.value.next()
            } catch {
                refuse(status: error.status, code: error.code, message: error.message)
                return
            }
            guard let request else {
                // The parser notices `Expect: 100-continue` while looking for the body.
                if parser!.value.takeContinueRequest() {
                    if let head = parser!.value.headOfBodyBeingRead, let refusal = refusalBeforeBody(head) {
                        refuseBeforeBody(refusal, head: head)
                        return
                    }
                    write(Self.continueBytes)
                }
                if parser!.value.isIdle {
                    requestStartedAt = 0
                } else if requestStartedAt == 0 {
                    requestStartedAt = context.loop.now
                }
                return
            }
            requestStartedAt = parser!.value.isIdle ? 0 : context.loop.now
            handle(request)
        }
    }

    private static let continueBytes = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// What the route's head check (`Router.checkHead`) answers a request whose body is awaited.
    private func refusalBeforeBody(_ head: HTTPRequest) -> (HTTPResponse, pattern: String)? {
        guard case .found(_, let parameters, let pattern, _) = context.server.router.match(method: head.method, path: head.path),
              let check = context.server.router.headCheck(method: head.method, pattern: pattern) else { return nil }
        let requestContext = RequestContext(request: head, pathParameters: parameters, remoteAddress: remoteAddress, loopIndex: context.loop.index)
        return check(requestContext).map { ($0, pattern) }
    }

    /// Sends the final answer instead of `100 Continue` (RFC 9110 §10.1.1) and closes: the body the
    /// client may still send is not read, so the byte stream no longer holds request boundaries.
    private func refuseBeforeBody(_ refusal: (HTTPResponse, pattern: String), head: HTTPRequest) {
        parser = nil
        currentRoute = "\(head.method) \(refusal.pattern)"
        requestID = context.makeRequestID()
        requests?.method = head.method
        requests?.path = head.path
        requestStartedForLog = context.loop.now
        write(refusal.0, keepAlive: false, isHead: false, versionMinor: head.versionMinor,
              allowOrigin: configuration.cors.allowOrigin(for: head, preflight: false))
    }

    /// The longest part of a request path an error message repeats, in bytes.
    static let shownPathBytes = 200

    /// `path` as a 404 or 405 message repeats it: its first `shownPathBytes` bytes (whole
    /// characters), then `…`, so a long path does not make a long answer.
    static func shown(_ path: String) -> String {
        guard path.utf8.count > shownPathBytes else { return path }
        var kept = 0
        var end = path.unicodeScalars.startIndex
        for scalar in path.unicodeScalars {
            let size = UTF8.width(scalar)
            if kept + size > shownPathBytes { break }
            kept += size
            end = path.unicodeScalars.index(after: end)
        }
        return String(path.unicodeScalars[..<end]) + "…"
    }

    // MARK: - Requests

    private func handle(_ request: HTTPRequest) {
        currentRoute = "unmatched"
        // A caller's X-Request-Id is kept when it is short and printable, so logs line up across services.
        if let given = request.headers["X-Request-Id"], (1...64).contains(given.utf8.count),
           given.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            requestID = given
        } else {
            requestID = context.makeRequestID()
        }
        requestStartedForLog = context.loop.now
        requests?.method = request.method
        requests?.path = request.path
        let isPreflight = request.method == .options && request.headers.contains("Origin")
            && request.headers.contains("Access-Control-Request-Method")
        let allowOrigin = configuration.cors.allowOrigin(for: request, preflight: isPreflight)
        if isPreflight {
            var response = HTTPResponse.empty(204)
            if allowOrigin != nil {
                response.headers.add(name: "Access-Control-Allow-Methods", value: configuration.cors.allowedMethods)
                response.headers.add(name: "Access-Control-Allow-Headers", value: configuration.cors.allowedHeaders)
                response.headers.add(name: "Access-Control-Max-Age", value: "\(configuration.cors.maxAgeSeconds)")
            }
            send(response, to: request, allowOrigin: allowOrigin)
            return
        }
        switch context.server.router.match(method: request.method, path: request.path) {
        case .notFound:
            send(.error(404, code: "not_found", message: "no route for \(request.method) \(Self.shown(request.path))"), to: request, allowOrigin: allowOrigin)
        case .badParameter(let name):
            send(.error(400, code: "invalid_request", message: "the path's \(name) is not percent-encoded UTF-8", extra: [("field", name)]),
                 to: request, allowOrigin: allowOrigin)
        case .methodNotAllowed(let methods):
            var names = methods.map(\.rawValue)
            if names.contains("GET") { names.append("HEAD") }
            var response = HTTPResponse.error(405, code: "method_not_allowed", message: "\(request.method) is not allowed on \(Self.shown(request.path))")
            response.headers.add(name: "Allow", value: names.joined(separator: ", "))
            send(response, to: request, allowOrigin: allowOrigin)
        case .found(let handler, let parameters, _, let label):
            currentRoute = label
            let requestContext = RequestContext(request: request, pathParameters: parameters,
                                                remoteAddress: remoteAddress, loopIndex: context.loop.index)
            let result: RouteResult
            do {
                result = try handler(requestContext)
            } catch let error as HTTPResponseError {
                result = .response(error.response)
            } catch {
                Log.error("route failed", ["path": Self.shown(request.path), "error": "\(error)"])
                result = .response(.error(500, code: "internal_error", message: "internal error"))
            }
            switch result {
            case .response(let response):
                send(response, to: request, allowOrigin: allowOrigin)
            case .deferred(let work):
                let ticket = (requests?.ticketCounter ?? 0) + 1
                requests?.ticketCounter = ticket
                let pending = Pending(ticket: ticket, keepAlive: request.keepAlive, isHead: request.method == .head,
                                      versionMinor: request.versionMinor, allowOrigin: allowOrigin)
                state = .awaiting(pending)
                work(makeWriter(ticket: pending.ticket))
            case .eventStream(let streamRequest):
                openStream(streamRequest, request: request, allowOrigin: allowOrigin)
            case .webSocket(let webSocketRequest):
                openWebSocket(webSocketRequest, request: request)
            }
            // A stream answers no more requests (its open was logged and counted above).
            if isStream { requests = nil }
        }
    }

    private func makeWriter(ticket: UInt64) -> ResponseWriter {
        let reference = LoopBound(self, loop: context.loop)
        let loop = context.loop
        return ResponseWriter { response in
            loop.execute { reference.value.completeDeferred(response, ticket: ticket) }
        }
    }

    private func completeDeferred(_ response: HTTPResponse, ticket: UInt64) {
        guard case .awaiting(let pending) = state, pending.ticket == ticket else { return }
        state = .reading
        write(response, keepAlive: pending.keepAlive && !peerClosed, isHead: pending.isHead,
              versionMinor: pending.versionMinor, allowOrigin: pending.allowOrigin)
        guard case .reading = state else { return }
        processRequests()
        resumeReading()
    }

    /// Reads again after a pause (a deferred answer arrived, or unread answers drained).
    private func resumeReading() {
        guard readPaused, case .reading = state, outbound.byteCount <= configuration.outboundMaxBytes / 2 else { return }
        readPaused = false
        processRequests()
        if !readPaused { readAvailable() }
    }

    func send(_ response: HTTPResponse, to request: HTTPRequest, allowOrigin: String?) {
        write(response, keepAlive: request.keepAlive, isHead: request.method == .head,
              versionMinor: request.versionMinor, allowOrigin: allowOrigin)
    }

    private func write(_ response: HTTPResponse, keepAlive: Bool, isHead: Bool, versionMinor: Int, allowOrigin: String?) {
        var response = response
        if !requestID.isEmpty { response.headers.add(name: "X-Request-Id", value: requestID) }
        if let allowOrigin {
            response.headers.add(name: "Access-Control-Allow-Origin", value: allowOrigin)
            if allowOrigin != "*" { response.headers.add(name: "Vary", value: "Origin") }
        }
        let hasBody = response.status != 204 && response.status != 304 && !(100..<200).contains(response.status)
        // While the server stops, an answer is the connection's last (`Connection: close`).
        let keepAlive = keepAlive && !context.isShuttingDown
        var bytes = response.serializedHead(keepAlive: keepAlive, versionMinor: versionMinor,
                                            contentLength: hasBody ? response.body.count : nil)
        if hasBody && !isHead { bytes.append(contentsOf: response.body) }
        context.metrics.countResponse(route: currentRoute, status: response.status)
        logRequest(status: response.status)
        write(bytes)
        if !keepAlive { beginClosing() }
    }

    /// Answers a request that cannot be parsed (400/413/431/408…) and closes: the byte stream can
    /// no longer be trusted to hold request boundaries (RFC 9112 §9.6 and §11.2).
    private func refuse(status: Int, code: String, message: String) {
        parser = nil
        let response = HTTPResponse.error(status, code: code, message: message)
        context.metrics.countResponse(route: currentRoute == "unparsed" ? "unparsed" : currentRoute, status: status)
        write(response.serializedHead(keepAlive: false, versionMinor: 1, contentLength: response.body.count) + response.body)
        beginClosing()
    }

    // MARK: - Writing

    /// Queues `bytes` behind what is already queued. They go out when the loop ends its current
    /// turn (`LoopContext.flushPending`), with everything else written to this connection in that
    /// turn, in one `send`: pipelined answers and a burst of events cost one system call, not one each.
    func write(_ bytes: [UInt8]) {
        switch state {
        case .closed: return
        default: break
        }
        let wasEmpty = outbound.isEmpty
        outbound.append(bytes)
        // A queue that was not empty is already due to flush, or waits for `EPOLLOUT`.
        if wasEmpty {
            flushQueued = true
            context.queueFlush(self)
        }
    }

    /// Sends what is queued now (the loop's turn ended, the socket became writable, or a bound
    /// is about to be judged), as much as the socket takes.
    func flush() {
        flushQueued = false
        guard !outbound.isEmpty else { return }
        switch outbound.flush(to: fd, scratch: context.writeScratch) {
        case .drained:
            lastWriteAt = context.loop.now
            if case .closing = state { finishClosing() }
        case .wouldBlock:
            lastWriteAt = context.loop.now
        case .failed:
            close()
            return
        }
        if !backlog.isEmpty { refill() }
        if readPaused { resumeReading() }
    }

    // MARK: - Timers

    func tick(now: UInt64, unixNow: Int64) {
        switch state {
        case .reading:
            let timeout = UInt64(configuration.requestTimeoutSeconds) * 1_000_000_000
            if requestStartedAt != 0, now &- requestStartedAt > timeout {
                refuse(status: 408, code: "request_timeout", message: "the request was not received in time")
            } else if requestStartedAt == 0, outbound.isEmpty,
                      now &- lastActivityAt > UInt64(configuration.idleTimeoutSeconds) * 1_000_000_000 {
                close()
            }
        case .awaiting:
            break
        case .stream(let stream):
            if let expiresAt = stream.expiresAt, unixNow >= expiresAt {
                endStream(error: "token_expired", message: "the access token expired; reconnect with a fresh token and Last-Event-ID", dropQueued: false)
            } else if outbound.isEmpty, now &- lastWriteAt >= UInt64(configuration.heartbeatSeconds) * 1_000_000_000 {
                write(context.heartbeatBytes)
            }
        case .websocket(let session):
            tickWebSocket(session, now: now, unixNow: unixNow)
        case .closing:
            if now > closeDeadline { close() }
        case .closed:
            break
        }
    }

    /// One structured line per answered request: errors at `warning` (5xx) or `info` (4xx), the
    /// rest at `debug`. Paths only: a query may carry an access token.
    func logRequest(status: Int) {
        let level: LogLevel = status >= 500 ? .warning : status >= 400 ? .info : .debug
        guard Log.enabled(level) else { return }
        let ms = Double(context.loop.now &- requestStartedForLog) / 1_000_000
        Log.log(level, "request", metadata: [("request_id", requestID), ("request", requestLine), ("route", currentRoute),
                                               ("status", String(status)), ("duration_ms", String(format: "%.2f", ms)),
                                               ("remote", remoteAddress)])
    }

    /// An open SSE stream or WebSocket (flushed before request/response connections).
    var isStream: Bool {
        switch state {
        case .stream, .websocket: return true
        default: return false
        }
    }

    /// `http`, `sse` or `websocket`: what the connection is now (metrics).
    var kind: String {
        switch state {
        case .stream: return "sse"
        case .websocket: return "websocket"
        default: return "http"
        }
    }

    /// The session was ended by the app backend (DV-4): its streams stop for good. Only app
    /// `app`'s streams: another app's stream with a `sid` of that name is not the same session
    /// (ADR 0006).
    func endSession(_ sid: String, app: String) {
        switch state {
        case .stream(let stream) where stream.sessionID == sid && stream.app == app:
            endStream(error: "session_ended", message: "the session has ended; sign in again", dropQueued: false)
        case .websocket(let session) where session.identity?.sessionID == sid && session.identity?.app == app:
            failWebSocket(session, code: WebSocketCloseCode(rawValue: 4001), error: "session_ended", message: "the session has ended; sign in again")
        default:
            break
        }
    }

    /// App `app`'s streams end: it was deleted (AP-3), or its token keys changed (`AppStreamEnd`).
    func endApp(_ app: String, reason: AppStreamEnd) {
        let revoked = "the app's access-token keys changed; reconnect with a fresh token and Last-Event-ID"
        switch (state, reason) {
        case (.stream(let stream), .deleted) where stream.app == app:
            endStream(error: "app_deleted", message: "the app was deleted", dropQueued: false)
        case (.websocket(let session), .deleted) where session.identity?.app == app:
            failWebSocket(session, code: WebSocketCloseCode(rawValue: 4001), error: "app_deleted", message: "the app was deleted")
        case (.stream(let stream), .tokensChanged) where stream.app == app:
            endStream(error: "token_expired", message: revoked, dropQueued: false)
        case (.websocket(let session), .tokensChanged) where session.identity?.app == app:
            failWebSocket(session, code: WebSocketCloseCode(rawValue: 4003), error: "token_expired", message: revoked)
        default:
            break
        }
    }

    /// Server shutdown: streams are told to reconnect elsewhere, idle connections closed.
    func shutdown() {
        switch state {
        case .stream(let stream):
            shutdownStream(stream)
        case .websocket(let session):
            shutdownWebSocket(session)
        case .reading where requestStartedAt == 0:
            // Between requests, but the last answer may still be queued for this turn's flush:
            // closing now would drop it (a stored call's 201 lost at SIGTERM).
            beginClosing()
        default:
            break
        }
    }

    /// Whether a graceful stop should still wait for this connection: a request being received
    /// or answered, or bytes not yet sent.
    var isBusyForShutdown: Bool {
        switch state {
        case .closed: return false
        case .awaiting: return true
        case .reading: return requestStartedAt != 0 || !outbound.isEmpty
        case .closing, .stream, .websocket: return !outbound.isEmpty
        }
    }

    // MARK: - Closing

    /// Stops taking requests or events; closes once queued bytes are out or the grace ends.
    func beginClosing() {
        switch state {
        case .closing, .closed: return
        case .stream(let stream): leaveStream(stream)
        case .websocket(let session): leaveWebSocket(session)
        default: break
        }
        state = .closing
        closeDeadline = context.loop.now &+ UInt64(configuration.closeGraceSeconds) * 1_000_000_000
        if outbound.isEmpty { finishClosing() }
    }

    /// Half-closes and lingers until the peer closes (or the grace ends), so a client still
    /// sending does not get a reset that would destroy the response it has not read yet.
    private func finishClosing() {
        if peerClosed {
            close()
            return
        }
        guard !lingering else { return }
        lingering = true
        Glibc.shutdown(fd, Int32(SHUT_WR))
        closeDeadline = min(closeDeadline, context.loop.now &+ 2_000_000_000)
    }

    func close() {
        switch state {
        case .closed: return
        case .stream(let stream): leaveStream(stream)
        case .websocket(let session): leaveWebSocket(session)
        default: break
        }
        state = .closed
        parser = nil
        outbound = OutboundQueue()
        context.loop.deregister(fd: fd)
        Glibc.close(fd)
        context.forget(self)
    }
}

/// A connection's request parser, in a box of its own (see `HTTPConnection.parser`). Owned by
/// the connection, on its loop.
final class RequestParserBox {
    var value: HTTPRequestParser
    init(_ value: HTTPRequestParser) { self.value = value }
}

/// Carries a loop-owned object through a `@Sendable` closure back to its loop. Sendability is
/// checked at run time (debug builds): the value may only be touched on `loop`.
struct LoopBound<Value: AnyObject>: @unchecked Sendable {
    private let wrapped: Value
    private let loop: EventLoop
    init(_ value: Value, loop: EventLoop) {
        wrapped = value
        self.loop = loop
    }
    var value: Value {
        loop.assertInEventLoop()
        return wrapped
    }
}
