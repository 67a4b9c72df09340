import Synchronization

/// One published message, immutable and encoded once: every subscriber on every loop is written
/// the same `sseBytes` (or the same WebSocket frame), so fan-out costs no encoding per subscriber
/// (DESIGN, hub).
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
    /// The complete WebSocket text frame `{"type":"event",…}` (docs/protocol.md), built by the
    /// first WebSocket subscriber that needs it and then shared: most messages have none, and
    /// building it for each publish was a cost of every publish (issue 8).
    public var webSocketFrame: [UInt8] { frames.live }
    /// The retained-message form of the frame: `"id":null,"retained":true`.
    public var snapshotWebSocketFrame: [UInt8] { frames.snapshot }

    /// Both WebSocket frames, built once on first use.
    private final class Frames: Sendable {
        let live: [UInt8]
        let snapshot: [UInt8]
        init(live: [UInt8], snapshot: [UInt8]) {
            self.live = live
            self.snapshot = snapshot
        }
    }

    /// nil until a WebSocket subscriber asks; then set once (a racing builder's copy is dropped).
    private let builtFrames = Atomic<Unmanaged<Frames>?>(nil)

    private var frames: Frames {
        if let built = builtFrames.load(ordering: .acquiring) { return built.takeUnretainedValue() }
        let common = "{\"type\":\"event\",\"channel\":\"\(channel.rawValue)\",\"event\":\"\(event.rawValue)\",\"offset\":\(offset),\"data\":\(data)"
        let made = Frames(live: WebSocketFrameEncoder.text(common + ",\"id\":\"\(cursor)\"}"),
                          snapshot: retain ? WebSocketFrameEncoder.text(common + ",\"id\":null,\"retained\":true}") : [])
        let candidate = Unmanaged.passRetained(made)
        let (exchanged, original) = builtFrames.compareExchange(expected: nil, desired: candidate,
                                                                ordering: .acquiringAndReleasing)
        if exchanged { return made }
        candidate.release()
        return original!.takeUnretainedValue()
    }

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
    }

    deinit {
        builtFrames.load(ordering: .acquiring)?.release()
    }

    /// The JSON carried on the `data:` line: `{"channel":…,"offset":…,"data":…}` (docs/protocol.md).
    static func envelope(channel: ChannelName, offset: UInt64, data: String) -> String {
        // Channel names cannot contain `"` or `\`, so no escaping is needed.
        "{\"channel\":\"\(channel.rawValue)\",\"offset\":\(offset),\"data\":\(data)}"
    }
}
