import Foundation
import HeraldCore

/// The WebSocket side of `HTTPConnection` (RT-2): the upgrade, the frame loop, the JSON protocol
/// of docs/protocol.md, and the same hub, history and slow-consumer rules as SSE.
extension HTTPConnection {
    /// What an open WebSocket needs to remember. Owned by the connection's loop.
    final class WebSocketSession {
        let connectionID: String
        let mode: WebSocketRequest.Mode
        var parser: WebSocketFrameParser
        let verifyToken: StreamTokenVerifier
        let checkMessage: WebSocketMessageCheck?
        let keepAcks: WebSocketAckKeeper?
        /// nil until the client authenticated (upgrade token or `auth` frame).
        var identity: StreamIdentity? {
            // Kept, not built per message: the write path asks for it for every message (issue 13).
            didSet { personal = identity?.personalChannel }
        }
        /// The user's personal channel (`user:{sub}`), nil before authentication.
        private(set) var personal: ChannelName?
        var channels: [ChannelName] = []
        let initialChannels: [ChannelName]
        let initialResume: ResumePoint
        let initialState: AppState
        /// Monotonic ns by which an unauthenticated client must have sent `auth`.
        var authDeadline: UInt64 = 0
        var lastReceivedAt: UInt64
        var lastPingAt: UInt64
        /// Monotonic ns when the server's unanswered ping was sent; 0 when none is outstanding.
        var pingSentAt: UInt64 = 0
        /// Which message (`parser.messagesStarted`) was seen in progress at `messageSeenAt`
        /// (monotonic ns), to time a fragmented message's assembly.
        var messageSeen: UInt64 = 0
        var messageSeenAt: UInt64 = 0
        /// A close frame was sent; only the peer's close (or the grace) remains.
        var closeSent = false
        /// The user's stream slot is held (released on close).
        var holdsUserSlot = false
        /// ADR 0026: the ids of each `ack` message whose store is in flight (one store at a time),
        /// and of those waiting for it, merged into the next store.
        var acksStoring: [[String]] = []
        var acksWaiting: [[String]] = []
        /// How many ids `acksWaiting` holds, at most `maxWaitingAckIDs`.
        var acksWaitingCount = 0

        init(connectionID: String, request: WebSocketRequest, maxMessageBytes: Int, maxFragments: Int, now: UInt64) {
            self.connectionID = connectionID
            self.mode = request.mode
            self.parser = WebSocketFrameParser(maxMessageBytes: maxMessageBytes, maxFragments: maxFragments)
            self.verifyToken = request.verifyToken
            self.checkMessage = request.checkMessage
            self.keepAcks = request.keepAcks
            self.initialChannels = request.channels
            self.initialResume = request.resume
            self.initialState = request.appState
            self.lastReceivedAt = now
            self.lastPingAt = now
        }

    }

    // MARK: - Upgrade

    func openWebSocket(_ request: WebSocketRequest, request http: HTTPRequest) {
        // Known user: refuse over the stream limit with an HTTP answer, before upgrading, as SSE does.
        var slotHeld = false
        if let identity = request.identity {
            guard context.server.perUser.acquire(identity.presenceUserID) else {
                send(.error(429, code: "too_many_streams",
                            message: "this user already has \(configuration.maxStreamsPerUser) open streams"),
                     to: http, allowOrigin: nil)
                return
            }
            slotHeld = true
        }
        context.metrics.countResponse(route: currentRoute, status: 101)
        logRequest(status: 101)
        let leftover = parser?.value.takeUnconsumedBytes() ?? []
        parser = nil
        let now = context.loop.now
        let maxBytes = request.mode == .echo ? configuration.webSocketEchoMaxMessageBytes : configuration.webSocketMaxMessageBytes
        let maxFragments = request.mode == .echo ? configuration.webSocketEchoMaxFragments : configuration.webSocketMaxFragments
        let session = WebSocketSession(connectionID: context.makeConnectionID(), request: request, maxMessageBytes: maxBytes,
                                       maxFragments: maxFragments, now: now)
        state = .websocket(session)
        // The id as every answer has it (the stream's head is not an `HTTPResponse`, so `send` cannot add it).
        let id = requestID.isEmpty ? "" : "X-Request-Id: \(requestID)\r\n"
        write(Array(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(WebSocketHandshake.acceptValue(forKey: request.key))\r\n\(id)\r\n").utf8))
        if request.mode == .herald {
            if let identity = request.identity {
                session.holdsUserSlot = slotHeld
                start(session, identity: identity)
            } else {
                session.authDeadline = now &+ UInt64(configuration.webSocketAuthTimeoutSeconds) * 1_000_000_000
            }
        }
        if !leftover.isEmpty {
            session.parser.append(leftover)
            processFrames(session)
        }
    }

    /// Authenticated: take a stream slot, report presence, subscribe the personal and URL channels.
    private func start(_ session: WebSocketSession, identity: StreamIdentity) {
        session.identity = identity
        guard let personal = identity.personalChannel else {
            failWebSocket(session, code: .policyViolation, error: "invalid_token", message: "the token's sub cannot name a channel")
            return
        }
        if !session.holdsUserSlot {
            guard context.server.perUser.acquire(identity.presenceUserID) else {
                failWebSocket(session, code: .policyViolation, error: "too_many_streams",
                              message: "this user already has \(configuration.maxStreamsPerUser) open streams")
                return
            }
            session.holdsUserSlot = true
        }
        session.authDeadline = 0
        context.server.node.presence.connected(connectionID: session.connectionID, userID: identity.presenceUserID,
                                               sessionID: identity.sessionID, transport: .websocket,
                                               state: session.initialState, channels: [])
        awaitingAnnouncement = holdUntilAnnounced(session.connectionID)
        var channels = [personal]
        for channel in session.initialChannels where !channels.contains(identity.scoped(channel)) {
            guard identity.allows(channel) else {
                sendError(session, "forbidden_channel", "the access token does not grant channel \(channel)", extra: ["channel": channel.rawValue])
                continue
            }
            channels.append(identity.scoped(channel))
        }
        let ready = "{\"type\":\"ready\",\"connection_id\":\(JSONText.quote(session.connectionID)),\"session_id\":"
            + (identity.sessionID.map(JSONText.quote) ?? "null")
            + ",\"user_id\":\(JSONText.quote(identity.userID))"
        subscribe(session, channels, resume: session.initialResume, readyPrefix: ready)
    }

    // MARK: - Frames

    func readWebSocket(_ session: WebSocketSession, _ bytes: UnsafeRawBufferPointer) {
        session.parser.append(bytes)
        processFrames(session)
    }

    /// Handles the complete frames received so far; none while the connection waits for its
    /// announcement, so no answer overtakes `ready` (`announced` handles them then).
    func processFrames(_ session: WebSocketSession) {
        while case .websocket = state, !awaitingAnnouncement {
            let event: WebSocketEvent?
            do {
                event = try session.parser.next()
            } catch {
                failWebSocket(session, code: error.closeCode, error: nil, message: error.reason)
                return
            }
            guard let event else {
                noteMessageInProgress(session)
                return
            }
            session.lastReceivedAt = context.loop.now
            if session.identity != nil, !session.closeSent {
                context.server.node.presence.life(connectionID: session.connectionID)
            }
            switch event {
            case .text(let text):
                if session.mode == .echo {
                    write(WebSocketFrameEncoder.text(text))
                } else {
                    handleMessage(session, text)
                }
            case .binary(let bytes):
                if session.mode == .echo {
                    write(WebSocketFrameEncoder.frame(.binary, payload: bytes))
                } else {
                    failWebSocket(session, code: .unsupportedData, error: nil, message: "binary messages are not supported; send JSON text")
                }
            case .ping(let payload):
                if !session.closeSent { write(WebSocketFrameEncoder.pong(payload)) }
            case .pong:
                // Any pong answers the outstanding ping (RFC 6455 §5.5.3: one pong may answer several).
                session.pingSentAt = 0
            case .close(let code, _):
                if session.closeSent {
                    close()
                } else {
                    // Echo the status code back (RFC 6455 §5.5.1), then the server closes TCP first.
                    session.closeSent = true
                    write(WebSocketFrameEncoder.close(code))
                    beginClosing()
                }
                return
            }
        }
    }

    // MARK: - The JSON protocol

    private func handleMessage(_ session: WebSocketSession, _ text: String) {
        guard !session.closeSent else { return }
        if let check = session.checkMessage, let refusal = check(Array(text.utf8)) {
            sendError(session, refusal.code, refusal.message, field: refusal.extra["field"])
            return
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
              let type = object["type"] as? String else {
            sendError(session, "invalid_request", "messages are JSON objects with a string \"type\"", field: "type")
            return
        }
        guard let identity = session.identity else {
            if type == "auth" {
                authenticate(session, object)
            } else {
                sendError(session, "unauthenticated", "send {\"type\":\"auth\",\"access_token\":…} first")
            }
            return
        }
        switch type {
        case "subscribe":
            guard let names = object["channels"] as? [String], !names.isEmpty else {
                sendError(session, "invalid_request", "channels must be a non-empty array of channel names", field: "channels")
                return
            }
            var channels: [ChannelName] = []
            for name in names {
                guard let channel = ChannelName(name) else {
                    sendError(session, "invalid_request", "'\(name.prefix(64))' is not a valid channel name", field: "channels")
                    return
                }
                guard identity.allows(channel) else {
                    sendError(session, "forbidden_channel", "the access token does not grant channel \(channel)", extra: ["channel": channel.rawValue])
                    return
                }
                let scoped = identity.scoped(channel)
                if !session.channels.contains(scoped), !channels.contains(scoped) { channels.append(scoped) }
            }
            // The limit is on channels besides the personal one, as the upgrade's `?channels=` counts them.
            let held = session.channels.count(where: { $0 != session.personal })
            guard held + channels.count <= configuration.maxChannelsPerConnection else {
                sendError(session, "invalid_request", "at most \(configuration.maxChannelsPerConnection) channels per connection", field: "channels")
                return
            }
            var resume = ResumePoint.fresh
            // null and "" mean no cursor, as an empty Last-Event-ID does for SSE.
            if let raw = object["last_event_id"], !(raw is NSNull) {
                guard let text = raw as? String else {
                    sendError(session, "invalid_request", "last_event_id must be a string", field: "last_event_id")
                    return
                }
                if !text.isEmpty { resume = StreamCursor(text).map(ResumePoint.cursor) ?? .invalid }
            }
            subscribe(session, channels, resume: resume, readyPrefix: nil)
        case "unsubscribe":
            guard let names = object["channels"] as? [String] else {
                sendError(session, "invalid_request", "channels must be an array of channel names", field: "channels")
                return
            }
            let removed = session.channels.filter { names.contains($0.clientName) && $0 != session.personal }
            if names.contains(where: { $0 == session.personal?.clientName }) {
                sendError(session, "invalid_request", "the personal channel cannot be unsubscribed", field: "channels")
                return
            }
            for channel in removed { context.hub.remove(self, from: channel) }
            session.channels.removeAll { removed.contains($0) }
            context.server.node.unsubscribe(removed, loop: context.loop.index)
            context.server.node.presence.channelsChanged(connectionID: session.connectionID, added: [], removed: removed)
            write(WebSocketFrameEncoder.text("{\"type\":\"unsubscribed\",\"channels\":\(JSONText.array(removed.map(\.clientName)))}"))
        case "state":
            guard let raw = object["state"] as? String, let appState = AppState(raw) else {
                sendError(session, "invalid_request", "state must be foreground or background", field: "state")
                return
            }
            context.server.node.presence.setState(connectionID: session.connectionID, appState)
        case "ack":
            // Each member is checked on its own and named, as `POST /v1/me/acks` does: a bad `ids`
            // beside a good `id` must not be dropped silently while the `id` is acked.
            var ids: [String] = []
            if let single = object["id"] {
                guard let id = single as? String, Self.isAckID(id) else {
                    sendError(session, "invalid_request", "id must be an event id of 1-64 characters", field: "id")
                    return
                }
                ids.append(id)
            }
            if let many = object["ids"] {
                guard let more = many as? [String], (1...1000).contains(more.count) else {
                    sendError(session, "invalid_request", "ids must hold 1 to 1000 event ids", field: "ids")
                    return
                }
                guard more.allSatisfy(Self.isAckID) else {
                    sendError(session, "invalid_request", "each id is an event id of 1-64 characters", field: "ids")
                    return
                }
                ids += more
            }
            guard !ids.isEmpty else {
                sendError(session, "invalid_request", "ack needs an event id (id) or ids", field: "id")
                return
            }
            // In memory first, as `POST /v1/me/acks` does: the live case, and the worker's check.
            context.server.node.presence.acknowledge(sessionID: identity.sessionID, connectionID: session.connectionID,
                                                     userID: identity.presenceUserID, ids: ids)
            keepAck(session, ids)
        case "ping":
            write(WebSocketFrameEncoder.text("{\"type\":\"pong\"}"))
        case "refresh":
            refresh(session, object)
        case "auth":
            sendError(session, "invalid_request", "already authenticated; use refresh for a new token", field: "type")
        default:
            sendError(session, "invalid_request", "unknown message type '\(type.prefix(32))'", field: "type")
        }
    }

    private func authenticate(_ session: WebSocketSession, _ object: [String: Any]) {
        guard let token = object["access_token"] as? String else {
            sendError(session, "invalid_request", "access_token is required", field: "access_token")
            return
        }
        switch session.verifyToken(token) {
        case .success(let identity):
            start(session, identity: identity)
        case .failure(let error):
            failWebSocket(session, code: .policyViolation, error: error.code, message: error.message)
        }
    }

    /// RT-8c: a later token for the same user extends the connection's life; its grants replace
    /// the old ones, so channels it no longer grants are unsubscribed (`revoked_channels`).
    private func refresh(_ session: WebSocketSession, _ object: [String: Any]) {
        guard let current = session.identity, let token = object["access_token"] as? String else {
            sendError(session, "invalid_request", "access_token is required", field: "access_token")
            return
        }
        switch session.verifyToken(token) {
        case .success(let identity):
            guard identity.userID == current.userID, identity.sessionID == current.sessionID, identity.app == current.app else {
                sendError(session, "invalid_token", "the new token belongs to another user or session")
                return
            }
            session.identity?.expiresAt = identity.expiresAt
            session.identity?.grants = identity.grants
            // The new token is the connection's authority from now on: channels it no longer
            // grants are left at once, and the client is told which.
            let revoked = session.channels.filter { $0 != session.personal && !identity.allows($0.unscoped) }
            if !revoked.isEmpty {
                for channel in revoked { context.hub.remove(self, from: channel) }
                session.channels.removeAll { revoked.contains($0) }
                context.server.node.unsubscribe(revoked, loop: context.loop.index)
                context.server.node.presence.channelsChanged(connectionID: session.connectionID, added: [], removed: revoked)
            }
            let expires = identity.expiresAt.map(String.init) ?? "null"
            write(WebSocketFrameEncoder.text("{\"type\":\"refreshed\",\"expires_at\":\(expires),"
                + "\"revoked_channels\":\(JSONText.array(revoked.map(\.clientName)))}"))
        case .failure(let error):
            sendError(session, error.code, error.message)
        }
    }

    /// Subscribes, then sends `ready` (first time) or `subscribed`, `reset`, replay and retained
    /// messages — the same snapshot rules as SSE.
    private func subscribe(_ session: WebSocketSession, _ channels: [ChannelName], resume: ResumePoint, readyPrefix: String?) {
        let snapshot: SubscribeSnapshot
        do {
            snapshot = try context.server.node.subscribe(channels, loop: context.loop.index, resume: resume)
        } catch {
            let message = "the broker cannot be reached; retry shortly"
            if readyPrefix != nil {
                // Nothing to stream without the first subscription: the client reconnects later.
                failWebSocket(session, code: .tryAgainLater, error: "broker_unavailable", message: message)
            } else {
                sendError(session, "broker_unavailable", message)
            }
            return
        }
        for channel in channels { context.hub.add(self, to: channel, since: snapshot.since) }
        session.channels += channels
        context.server.node.presence.channelsChanged(connectionID: session.connectionID, added: channels, removed: [])
        let list = JSONText.array(channels.map(\.clientName))
        // Through the backlog, so an answer never overtakes a replay still being paced out.
        if let readyPrefix {
            backlog.append(.bytes(WebSocketFrameEncoder.text(readyPrefix + ",\"channels\":\(list),\"id\":\"\(snapshot.position)\"}")))
        } else {
            backlog.append(.bytes(WebSocketFrameEncoder.text("{\"type\":\"subscribed\",\"channels\":\(list),\"id\":\"\(snapshot.position)\"}")))
        }
        // A resumed channel's state before what was missed since the cursor (see SSE).
        for message in snapshot.baseline { backlog.append(.bytes(message.snapshotWebSocketFrame)) }
        for message in snapshot.replay { backlog.append(.message(message)) }
        if !snapshot.reset.isEmpty {
            // After the replay, carrying the live position, as SSE's reset: a client that keeps
            // it as its last id and reconnects is not reset again for the same gap.
            let live = StreamCursor(epoch: snapshot.position.epoch, sequence: snapshot.since)
            backlog.append(.bytes(WebSocketFrameEncoder.text("{\"type\":\"reset\",\"channels\":\(JSONText.array(snapshot.reset.map(\.clientName))),"
                + "\"id\":\"\(live)\"}")))
        }
        for message in snapshot.retained { backlog.append(.bytes(message.snapshotWebSocketFrame)) }
        refill()
    }

    // MARK: - Acks kept in storage (ADR 0026)

    /// Ids of `ack` messages waiting while a store is in flight, at most: one `POST /v1/me/acks`'
    /// worth, so a connection holds two batches at most, whatever it sends.
    static let maxWaitingAckIDs = 1000

    /// Stores `ids` (already acked in memory) off the read loop, or queues them behind the store in
    /// flight; past `maxWaitingAckIDs` the message is refused at once (`too_many_acks`).
    private func keepAck(_ session: WebSocketSession, _ ids: [String]) {
        guard session.keepAcks != nil else {
            write(Self.ackedFrame(ids))
            return
        }
        if session.acksStoring.isEmpty {
            session.acksStoring = [ids]
            storeAcks(session)
        } else if session.acksWaitingCount + ids.count <= Self.maxWaitingAckIDs {
            session.acksWaiting.append(ids)
            session.acksWaitingCount += ids.count
        } else {
            sendError(session, "too_many_acks",
                      "this ack is held in memory but not stored: \(Self.maxWaitingAckIDs) ids already wait for storage; send it again once the earlier acks are answered",
                      ids: ids)
        }
    }

    /// Hands the in-flight batch to the keeper; its answer comes back on this loop.
    private func storeAcks(_ session: WebSocketSession) {
        guard let keep = session.keepAcks, let identity = session.identity else { return }
        let reference = LoopBound(self, loop: context.loop), storing = LoopBound(session, loop: context.loop)
        let loop = context.loop
        keep(identity, session.acksStoring.flatMap { $0 }) { failure in
            loop.execute { reference.value.acksStored(storing.value, failure: failure) }
        }
    }

    /// Answers each message of the stored batch in the order sent, then starts the next batch.
    private func acksStored(_ session: WebSocketSession, failure: HTTPError?) {
        let answered = session.acksStoring
        session.acksStoring = []
        // A connection that ended meanwhile is told nothing; what was stored stays stored.
        guard case .websocket(let current) = state, current === session, !session.closeSent else { return }
        for ids in answered {
            if let failure {
                sendError(session, failure.code, "this ack is held in memory but was not stored (send it again): \(failure.message)", ids: ids)
            } else {
                write(Self.ackedFrame(ids))
            }
        }
        guard !session.acksWaiting.isEmpty else { return }
        session.acksStoring = session.acksWaiting
        session.acksWaiting = []
        session.acksWaitingCount = 0
        storeAcks(session)
    }

    private static func ackedFrame(_ ids: [String]) -> [UInt8] {
        WebSocketFrameEncoder.text("{\"type\":\"acked\",\"ids\":\(JSONText.array(ids))}")
    }

    private func sendError(_ session: WebSocketSession, _ code: String, _ message: String, field: String? = nil, extra: [String: String] = [:],
                           ids: [String]? = nil) {
        var json = "{\"type\":\"error\",\"error\":\(JSONText.quote(code)),\"message\":\(JSONText.quote(message))"
        if let field { json += ",\"field\":\(JSONText.quote(field))" }
        if let ids { json += ",\"ids\":\(JSONText.array(ids))" }
        for (key, value) in extra.sorted(by: { $0.key < $1.key }) { json += ",\(JSONText.quote(key)):\(JSONText.quote(value))" }
        write(WebSocketFrameEncoder.text(json + "}"))
    }

    /// Ends the WebSocket: an `error` message when there is an application reason, then a close
    /// frame with `code`, then the TCP close once the peer answers or the grace ends.
    func failWebSocket(_ session: WebSocketSession, code: WebSocketCloseCode, error: String?, message: String) {
        guard !session.closeSent else { return }
        if session.mode == .herald {
            Log.info("websocket closed", ["connection_id": session.connectionID, "user_id": session.identity?.userID ?? "",
                                          "code": String(code.rawValue), "reason": error ?? message])
        }
        if let error { sendError(session, error, message) }
        session.closeSent = true
        write(WebSocketFrameEncoder.close(code, reason: error ?? message))
        beginClosing()
    }

    /// Leaves the hub and presence when the connection ends.
    func leaveWebSocket(_ session: WebSocketSession) {
        guard let identity = session.identity else { return }
        if session.holdsUserSlot {
            context.server.perUser.release(identity.presenceUserID)
            session.holdsUserSlot = false
        }
        context.server.node.presence.disconnected(connectionID: session.connectionID)
        let hub = context.hub
        let node = context.server.node
        let loopIndex = context.loop.index
        let channels = session.channels
        hub.scheduleClose { [self] in
            hub.removeAll(self)
            node.unsubscribe(channels, loop: loopIndex)
        }
    }

    /// Remembers when the message now being reassembled was first seen in progress, so the
    /// tick can bound its assembly time (a later message restarts the clock).
    private func noteMessageInProgress(_ session: WebSocketSession) {
        guard session.parser.isMessageInProgress else { return }
        if session.messageSeen != session.parser.messagesStarted {
            session.messageSeen = session.parser.messagesStarted
            session.messageSeenAt = context.loop.now
        }
    }

    /// Once a second: auth timeout, token expiry, the unanswered ping, a message taking too long
    /// to assemble, pings and the idle timeout.
    func tickWebSocket(_ session: WebSocketSession, now: UInt64, unixNow: Int64) {
        guard !session.closeSent else { return }
        if session.authDeadline != 0, now > session.authDeadline {
            failWebSocket(session, code: .policyViolation, error: "unauthenticated", message: "no auth message in time")
        } else if let expiresAt = session.identity?.expiresAt, unixNow >= expiresAt {
            failWebSocket(session, code: WebSocketCloseCode(rawValue: 4003), error: "token_expired",
                          message: "the access token expired; reconnect with a fresh token, or send refresh before exp")
        } else if session.pingSentAt != 0,
                  now &- session.pingSentAt > UInt64(configuration.webSocketPongTimeoutSeconds) * 1_000_000_000 {
            // A suspended app's TCP socket stays open, but nothing answers the ping: closing now
            // takes the connection out of presence, so the next notification pushes to the device.
            failWebSocket(session, code: .goingAway, error: nil, message: "pong timeout")
        } else if session.mode == .herald, session.parser.isMessageInProgress, session.messageSeen == session.parser.messagesStarted,
                  now &- session.messageSeenAt > UInt64(configuration.webSocketAssemblyTimeoutSeconds) * 1_000_000_000 {
            // Fragments (or one frame's payload) trickling in keep the idle timeout at bay; this
            // bounds how long a message may hold its buffer. The echo endpoint's 16 MiB
            // conformance messages are exempt.
            failWebSocket(session, code: .policyViolation, error: nil, message: "message not completed in time")
        } else if now &- session.lastReceivedAt > UInt64(configuration.webSocketIdleTimeoutSeconds) * 1_000_000_000 {
            failWebSocket(session, code: .goingAway, error: nil, message: "idle timeout")
        } else if session.pingSentAt == 0, now &- session.lastPingAt >= UInt64(configuration.heartbeatSeconds) * 1_000_000_000,
                  outbound.isEmpty {
            session.lastPingAt = now
            // Only a herald-protocol client's liveness matters to presence; the echo endpoint
            // (conformance runs) is pinged but not timed.
            if session.mode == .herald { session.pingSentAt = now }
            write(WebSocketFrameEncoder.ping([]))
        }
    }

    /// Server shutdown: tell the client to reconnect after its spread delay, then close with 1001.
    func shutdownWebSocket(_ session: WebSocketSession) {
        if session.mode == .herald, session.identity != nil, !session.closeSent {
            // Spread per connection, like SSE's `retry:`, so clients do not all return at once.
            let delay = configuration.retryMilliseconds(for: session.connectionID)
            write(WebSocketFrameEncoder.text("{\"type\":\"shutdown\",\"reconnect\":true,\"retry_ms\":\(delay)}"))
        }
        failWebSocket(session, code: .goingAway, error: nil, message: "server shutting down")
    }

    /// An event id an `ack` may name, by the rule of `POST /v1/me/acks`: 1-64 bytes.
    static func isAckID(_ id: String) -> Bool { !id.isEmpty && id.utf8.count <= 64 }
}
