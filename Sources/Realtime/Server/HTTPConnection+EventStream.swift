import HeraldCore
/// The SSE side of `HTTPConnection` (RT-1, RT-5, RT-6, RT-8).
extension HTTPConnection {
    /// What an open SSE stream needs to remember. Its channels are not kept here: the hub's
    /// slots name them (one array less per idle stream).
    final class EventStream {
        let connectionID: String
        let userID: String
        let sessionID: String?
        let app: String
        /// The token's `exp` (Unix s), `Int64.max` for none: an `Int64?` is 9 bytes, which made
        /// the object 112 bytes, a 128-byte heap block; 104 fit a 112-byte one (issue 17: 16 of
        /// an idle stream's bytes).
        private let expiry: Int64
        /// The flag that `ready` waits for the announcement is the connection's
        /// (`HTTPConnection.awaitingAnnouncement`): a byte here made the object 105 bytes, a
        /// 128-byte block (issue 17).
        let personal: ChannelName?
        /// When the stream's token expires (Unix s); nil when it does not.
        var expiresAt: Int64? { expiry == .max ? nil : expiry }
        init(connectionID: String, request: EventStreamRequest) {
            self.connectionID = connectionID
            self.userID = request.userID
            self.sessionID = request.sessionID
            self.app = request.app
            self.expiry = request.expiresAt ?? .max
            self.personal = request.channels.first
        }
    }

    // MARK: - SSE

    func openStream(_ request: EventStreamRequest, request http: HTTPRequest, allowOrigin: String?) {
        var head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nX-Accel-Buffering: no\r\n"
        for (name, value) in request.headers { head += "\(name): \(value)\r\n" }
        // Written here, not by `send`: a stream's head is not an `HTTPResponse`. Every answer
        // carries the id (the OpenAPI's XRequestId), a HEAD's and a stream's too.
        if !requestID.isEmpty { head += "X-Request-Id: \(requestID)\r\n" }
        if let allowOrigin {
            head += "Access-Control-Allow-Origin: \(allowOrigin)\r\n"
            if allowOrigin != "*" { head += "Vary: Origin\r\n" }
        }
        // The stream is delimited by the connection's end (RFC 9112 §6.3), so every subscriber
        // gets identical event bytes with no per-connection chunk framing.
        head += "Connection: close\r\n\r\n"
        if http.method == .head {
            parser = nil
            write(Array(head.utf8))
            beginClosing()
            return
        }
        guard context.server.perUser.acquire(request.presenceUserID) else {
            send(.error(429, code: "too_many_streams",
                        message: "this user already has \(configuration.maxStreamsPerUser) open streams"),
                 to: http, allowOrigin: allowOrigin)
            return
        }
        // Before anything is written, so a broker that cannot be reached gets a plain 503.
        let snapshot: SubscribeSnapshot
        do {
            snapshot = try context.server.node.subscribe(request.channels, loop: context.loop.index, resume: request.resume)
        } catch {
            context.server.perUser.release(request.presenceUserID)
            send(.error(503, code: "broker_unavailable", message: "the broker cannot be reached; retry shortly"),
                 to: http, allowOrigin: allowOrigin)
            return
        }
        parser = nil
        context.metrics.countResponse(route: currentRoute, status: 200)
        logRequest(status: 200)
        let stream = EventStream(connectionID: context.makeConnectionID(), request: request)
        state = .stream(stream)
        context.server.node.presence.connected(connectionID: stream.connectionID, userID: request.presenceUserID, sessionID: stream.sessionID,
                                               transport: .sse, state: request.appState, channels: request.channels)
        awaitingAnnouncement = holdUntilAnnounced(stream.connectionID)
        for channel in request.channels {
            context.hub.add(self, to: channel, since: snapshot.since)
        }
        // `retry:` shares the ready event's block: a block without data is no event to browsers
        // but some client libraries report it as an empty `message`.
        // Spread per connection (± 50 %): after a restart the clients come back over a window,
        // not in one instant.
        var opening = Array("retry: \(configuration.retryMilliseconds(for: stream.connectionID))\n".utf8)
        let ready = "{\"connection_id\":\(JSONText.quote(stream.connectionID)),\"session_id\":"
            + (stream.sessionID.map(JSONText.quote) ?? "null")
            + ",\"user_id\":\(JSONText.quote(stream.userID)),\"channels\":\(JSONText.array(request.channels.map(\.clientName)))}"
        opening += SSEEncoder.event(id: snapshot.position.description, event: "ready", data: ready)
        if awaitingAnnouncement {
            // The head now (a heartbeat may follow it), `ready` once the other nodes know the stream.
            write(Array(head.utf8))
            backlog.append(.bytes(opening))
        } else {
            write(Array(head.utf8) + opening)
        }
        // A resumed channel's state first (a channel new to this stream has no other way to it),
        // then what was missed since the cursor.
        if !snapshot.baseline.isEmpty { backlog.append(.bytes(snapshot.baseline.flatMap(\.snapshotSSEBytes))) }
        for message in snapshot.replay { backlog.append(.message(message)) }
        var tail: [UInt8] = []
        if !snapshot.reset.isEmpty {
            // After the replay of the other channels, carrying the live position as its id: a
            // client that reconnects later is not reset again for the same gap.
            let live = StreamCursor(epoch: snapshot.position.epoch, sequence: snapshot.since)
            tail += SSEEncoder.event(id: live.description, event: "reset",
                                     data: "{\"channels\":\(JSONText.array(snapshot.reset.map(\.clientName)))}")
        }
        for message in snapshot.retained { tail += message.snapshotSSEBytes }
        if !tail.isEmpty { backlog.append(.bytes(tail)) }
        refill()
    }

    /// Ends an SSE stream with a final `event: error` (RT-8, RT-8c) and closes once it is sent.
    func endStream(error code: String, message: String, dropQueued: Bool) {
        guard case .stream(let stream) = state else { return }
        Log.info("stream ended", ["connection_id": stream.connectionID, "user_id": stream.userID, "reason": code])
        if dropQueued { outbound.dropAllButPartialHead() }
        write(SSEEncoder.event(id: nil, event: "error", data: "{\"error\":\(JSONText.quote(code)),\"message\":\(JSONText.quote(message))}"))
        beginClosing()
    }

    /// Server shutdown: a `shutdown` event whose block also sets `retry:` to this connection's
    /// spread delay (a browser's `EventSource` reconnects after it), and the same delay in its
    /// data as `retry_ms` for clients that reconnect by hand.
    func shutdownStream(_ stream: EventStream) {
        let delay = configuration.retryMilliseconds(for: stream.connectionID)
        write(Array("retry: \(delay)\n".utf8)
              + SSEEncoder.event(id: nil, event: "shutdown", data: "{\"reconnect\":true,\"retry_ms\":\(delay)}"))
        beginClosing()
    }

    func leaveStream(_ stream: EventStream) {
        context.server.perUser.release(Presence.userKey(app: stream.app, userID: stream.userID))
        context.server.node.presence.disconnected(connectionID: stream.connectionID)
        let hub = context.hub
        let node = context.server.node
        let loopIndex = context.loop.index
        hub.scheduleClose { [self] in
            node.unsubscribe(hub.removeAll(self), loop: loopIndex)
        }
    }

}
