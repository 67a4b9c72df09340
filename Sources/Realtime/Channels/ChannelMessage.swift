/// One published message, immutable and encoded once: every subscriber on every loop is written
/// the same `sseBytes`, so fan-out costs a `send()` per subscriber and no encoding (DESIGN, hub).
public final class ChannelMessage: Sendable {
    public let channel: ChannelName
    public let event: EventName
    /// Per-channel position, 1-based, gap-free (RT-4 `offset`).
    public let offset: UInt64
    /// The stream-wide position: the message's SSE `id:` (RT-4 `id`).
    public let cursor: StreamCursor
    /// The message's `data`, compact JSON on one line.
    public let data: String
    /// Monotonic ns at publish; history TTL is measured from it.
    public let publishedAt: UInt64
    /// Whether the channel keeps this message for new subscribers (RT-6).
    public let retain: Bool
    /// The complete SSE event: `id:`, `event:`, `data:` lines and the blank line.
    public let sseBytes: [UInt8]
    /// The same event without `id:`: how a retained message is shown to a new subscriber, so the
    /// client's Last-Event-ID stays at the stream position it was given in `ready`.
    public let snapshotSSEBytes: [UInt8]
    /// The complete WebSocket text frame `{"type":"event",…}` (docs/protocol.md), built once too.
    public let webSocketFrame: [UInt8]
    /// The retained-message form of the frame: `"id":null,"retained":true`.
    public let snapshotWebSocketFrame: [UInt8]

    public var sequence: UInt64 { cursor.sequence }

    public init(channel: ChannelName, event: EventName, offset: UInt64, cursor: StreamCursor,
                data: String, publishedAt: UInt64, retain: Bool) {
        self.channel = channel
        self.event = event
        self.offset = offset
        self.cursor = cursor
        self.data = data
        self.publishedAt = publishedAt
        self.retain = retain
        let envelope = Self.envelope(channel: channel, offset: offset, data: data)
        sseBytes = SSEEncoder.event(id: cursor.description, event: event.rawValue, data: envelope)
        snapshotSSEBytes = retain ? SSEEncoder.event(id: nil, event: event.rawValue, data: envelope) : []
        let common = "{\"type\":\"event\",\"channel\":\"\(channel.rawValue)\",\"event\":\"\(event.rawValue)\",\"offset\":\(offset),\"data\":\(data)"
        webSocketFrame = WebSocketFrameEncoder.text(common + ",\"id\":\"\(cursor)\"}")
        snapshotWebSocketFrame = retain ? WebSocketFrameEncoder.text(common + ",\"id\":null,\"retained\":true}") : []
    }

    /// The JSON carried on the `data:` line: `{"channel":…,"offset":…,"data":…}` (docs/protocol.md).
    static func envelope(channel: ChannelName, offset: UInt64, data: String) -> String {
        // Channel names cannot contain `"` or `\`, so no escaping is needed.
        "{\"channel\":\"\(channel.rawValue)\",\"offset\":\(offset),\"data\":\(data)}"
    }
}
