import HeraldCore
import Synchronization

/// A message's wire forms, built once per message and shared: every subscriber on every loop is
/// written the same `sseBytes` (or the same WebSocket frame), so fan-out costs no encoding per
/// subscriber (DESIGN, hub). Attached to the `ChannelMessage` it encodes, so a message replayed
/// from history reuses the bytes built when it was live.
public final class EncodedMessage: Sendable {
    /// The complete SSE event: `id:`, `event:`, `data:` lines and the blank line.
    let sseBytes: [UInt8]
    /// The same event without `id:`: how a retained message is shown to a new subscriber, so the
    /// client's Last-Event-ID stays at the stream position it was given in `ready`.
    let snapshotSSEBytes: [UInt8]

    /// Both WebSocket frames, built once on first use.
    final class Frames: Sendable {
        let live: [UInt8]
        let snapshot: [UInt8]
        init(live: [UInt8], snapshot: [UInt8]) {
            self.live = live
            self.snapshot = snapshot
        }
    }

    /// nil until a WebSocket subscriber asks; then set once (a racing builder's copy is dropped).
    /// Most messages have no WebSocket subscriber, and building the frame for each publish was a
    /// cost of every publish (issue 8).
    private let builtFrames = Atomic<Unmanaged<Frames>?>(nil)

    init(_ message: ChannelMessage) {
        let envelope = Self.envelope(channel: message.channel, offset: message.offset, data: message.data)
        sseBytes = SSEEncoder.event(id: message.cursor.description, event: message.event.rawValue, data: envelope)
        snapshotSSEBytes = message.retain ? SSEEncoder.event(id: nil, event: message.event.rawValue, data: envelope) : []
    }

    deinit {
        builtFrames.load(ordering: .acquiring)?.release()
    }

    /// The frames, built on the first call. Returned as the shared object, not a tuple of both
    /// arrays: a WebSocket subscriber reads one of them, once per message (issue 13).
    func frames(_ message: ChannelMessage) -> Frames {
        if let built = builtFrames.load(ordering: .acquiring) {
            return built.takeUnretainedValue()
        }
        let common = "{\"type\":\"event\",\"channel\":\"\(message.channel.clientName)\",\"event\":\"\(message.event.rawValue)\",\"offset\":\(message.offset),\"data\":\(message.data)"
        let made = Frames(live: WebSocketFrameEncoder.text(common + ",\"id\":\"\(message.cursor)\"}"),
                          snapshot: message.retain ? WebSocketFrameEncoder.text(common + ",\"id\":null,\"retained\":true}") : [])
        let candidate = Unmanaged.passRetained(made)
        let (exchanged, original) = builtFrames.compareExchange(expected: nil, desired: candidate,
                                                                ordering: .acquiringAndReleasing)
        if exchanged { return made }
        candidate.release()
        return original!.takeUnretainedValue()
    }

    /// The JSON carried on the `data:` line: `{"channel":…,"offset":…,"data":…}` (docs/protocol.md).
    static func envelope(channel: ChannelName, offset: UInt64, data: String) -> String {
        // Channel names cannot contain `"` or `\`, so no escaping is needed.
        "{\"channel\":\"\(channel.clientName)\",\"offset\":\(offset),\"data\":\(data)}"
    }
}

extension ChannelMessage {
    /// This message's wire forms, built on first use (normally by `RealtimeNode` as the message
    /// arrives from the broker, before any loop writes it).
    var encoded: EncodedMessage { attachment(EncodedMessage.init) }

    /// The complete SSE event: `id:`, `event:`, `data:` lines and the blank line.
    public var sseBytes: [UInt8] { encoded.sseBytes }
    /// The same event without `id:`, for a retained message shown to a new subscriber.
    public var snapshotSSEBytes: [UInt8] { encoded.snapshotSSEBytes }
    /// The complete WebSocket text frame `{"type":"event",…}` (docs/protocol.md).
    public var webSocketFrame: [UInt8] { encoded.frames(self).live }
    /// The retained-message form of the frame: `"id":null,"retained":true`.
    public var snapshotWebSocketFrame: [UInt8] { encoded.frames(self).snapshot }
}
