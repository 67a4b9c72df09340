import HeraldCore
/// Writing channel messages to a stream (SSE or WebSocket): the hub's entry point, the paced
/// backlog, and the slow-consumer rule (RT-8).
extension HTTPConnection {
    /// An open SSE stream, or a WebSocket that has not sent its close frame: what messages and
    /// resets may still be written to.
    private var acceptsStreamMessages: Bool {
        switch state {
        case .stream: true
        case .websocket(let session): !session.closeSent
        default: false
        }
    }

    /// Called by the hub for every live message of a subscribed channel.
    func deliver(_ message: ChannelMessage, encoded: EncodedMessage) {
        guard acceptsStreamMessages else { return }
        // This stream's wire form, looked up once: its size is judged and the same bytes written.
        let bytes = isWebSocket ? encoded.frames(message).live : encoded.sseBytes
        let size = bytes.count
        if !backlog.isEmpty {
            // Behind a replay: queue in order, as bounded as the outbound queue itself.
            guard backlog.liveCount < configuration.outboundMaxEvents,
                  backlog.liveBytes + size <= configuration.outboundMaxBytes else {
                cutSlowConsumer()
                return
            }
            backlog.append(.message(message), liveBytes: max(size, 1))
            return
        }
        if !outbound.isEmpty, exceedsOutboundBound(adding: size) {
            // Only a socket that refused bytes makes a slow reader: what was merely coalesced in
            // this turn is sent first, then the bound is judged.
            if flushQueued { flush() }
            if !outbound.isEmpty, exceedsOutboundBound(adding: size) {
                cutSlowConsumer()
                return
            }
        }
        writeStreamMessage(message, bytes: bytes)
    }

    /// Called by the hub when the broker lost messages of `channels` (SC-3): one `reset` event
    /// (SSE) or frame (WebSocket), with `position` as its id so a reconnect is not reset again
    /// for the same gap, in order with the messages around it.
    func reset(_ channels: [ChannelName], position: StreamCursor) {
        guard acceptsStreamMessages else { return }
        // As the client named them: a stored app's channels are namespaced inside (ADR 0006).
        let list = JSONText.array(channels.map(\.clientName))
        let bytes = isWebSocket
            ? WebSocketFrameEncoder.text("{\"type\":\"reset\",\"channels\":\(list),\"id\":\"\(position)\"}")
            : SSEEncoder.event(id: position.description, event: "reset", data: "{\"channels\":\(list)}")
        if !backlog.isEmpty {
            backlog.append(.bytes(bytes))
            return
        }
        write(bytes)
    }

    private func exceedsOutboundBound(adding size: Int) -> Bool {
        outbound.byteCount + size > configuration.outboundMaxBytes || outbound.count >= configuration.outboundMaxEvents
    }

    /// Whether a stream just reported to presence must hold `ready` until the other nodes know
    /// it (a cluster, SC-1): true when it must, and `announced` then runs on this loop once they
    /// do. Until then its backlog is not written (live messages queue behind `ready`, as behind
    /// a replay), so a notification the client causes after `ready` finds the connection on
    /// whichever node it enters and is not pushed as well (NO-8).
    func holdUntilAnnounced(_ connectionID: String) -> Bool {
        let reference = LoopBound(self, loop: context.loop)
        let loop = context.loop
        return !context.server.node.presence.awaitAnnounced(connectionID: connectionID) {
            loop.execute { reference.value.announced(connectionID) }
        }
    }

    /// The other nodes know stream `connectionID`: write its `ready` and what queued behind it,
    /// then (WebSocket) the frames the client sent meanwhile. Nothing when the connection closed
    /// (or is another one) since.
    private func announced(_ connectionID: String) {
        switch state {
        case .stream(let stream) where stream.connectionID == connectionID && awaitingAnnouncement:
            awaitingAnnouncement = false
            refill()
        case .websocket(let session) where session.connectionID == connectionID && awaitingAnnouncement:
            awaitingAnnouncement = false
            refill()
            processFrames(session)
        default:
            break
        }
    }

    /// Moves backlog items into the outbound queue while it is below half its bounds, so a
    /// replay flows at the reader's pace without ever looking like a slow reader.
    func refill() {
        while !backlog.isEmpty,
              outbound.byteCount < configuration.outboundMaxBytes / 2,
              outbound.count < max(configuration.outboundMaxEvents / 2, 1) {
            switch state {
            case .stream where !awaitingAnnouncement: break
            case .websocket(let session) where !session.closeSent && !awaitingAnnouncement: break
            default: return
            }
            switch backlog.popFirst() {
            case .message(let message)?:
                let encoded = message.encoded
                writeStreamMessage(message, bytes: isWebSocket ? encoded.frames(message).live : encoded.sseBytes)
            case .bytes(let bytes)?: write(bytes)
            case nil: return
            }
        }
    }

    private var isWebSocket: Bool {
        if case .websocket = state { return true }
        return false
    }

    /// Writes one message in the stream's encoding and notes personal-channel deliveries for
    /// presence (the push planner's "did this session receive it").
    ///
    /// - Parameter bytes: the message in this stream's encoding (SSE event or WebSocket frame).
    private func writeStreamMessage(_ message: ChannelMessage, bytes: [UInt8]) {
        let connectionID: String
        let personal: ChannelName?
        switch state {
        case .stream(let stream):
            connectionID = stream.connectionID
            personal = stream.personal
        case .websocket(let session):
            connectionID = session.connectionID
            personal = session.personal
        default:
            return
        }
        write(bytes)
        if message.channel == personal {
            context.server.node.presence.deliveredPersonal(connectionID: connectionID, sequence: message.sequence)
        }
    }

    /// The reader fell too far behind: what it was not yet sent is dropped, it gets a final
    /// `slow_consumer` error (SSE event, or WebSocket message and close 1013) and is closed.
    /// It resumes with its last id.
    private func cutSlowConsumer() {
        context.metrics.slowConsumerCuts += 1
        backlog = StreamBacklog()
        outbound.dropAllButPartialHead()
        let message = "the client did not read fast enough; reconnect and resume with the last event id"
        switch state {
        case .stream:
            endStream(error: "slow_consumer", message: message, dropQueued: false)
        case .websocket(let session):
            failWebSocket(session, code: .tryAgainLater, error: "slow_consumer", message: message)
        default:
            break
        }
    }
}
