/// One message to publish (RT-4), already validated.
public struct PublishRequest: Sendable {
    public var channel: ChannelName
    public var event: EventName
    /// Compact JSON on one line (no raw CR/LF).
    public var data: String
    /// Keep as the channel's retained message for new subscribers (RT-6).
    public var retain: Bool

    public init(channel: ChannelName, event: EventName, data: String, retain: Bool = false) {
        self.channel = channel
        self.event = event
        self.data = data
        self.retain = retain
    }
}

/// What a publish produced: the stored message and how many connections it was handed to.
public struct PublishReceipt: Sendable {
    public let message: ChannelMessage
    /// Connections subscribed to the channel when it was published (RT-4 `delivered`).
    public let delivered: Int
}

/// Where a subscriber wants to start.
public enum ResumePoint: Sendable, Equatable {
    /// No Last-Event-ID: live messages only, plus retained ones.
    case fresh
    /// A Last-Event-ID that parsed as a cursor (it may still be from another epoch).
    case cursor(StreamCursor)
    /// A Last-Event-ID Herald could not have issued (RT-8b): every channel gets `reset`.
    case invalid
}

/// What a new subscription starts with, computed atomically with respect to publishes.
public struct SubscribeSnapshot: Sendable {
    /// Where the subscriber starts: its resume cursor, or the newest sequence when fresh or
    /// reset. The `ready` event carries it, so a client that drops mid-replay resumes from it.
    public let position: StreamCursor
    /// Missed messages of every channel, in stream order (so per-channel order too).
    public let replay: [ChannelMessage]
    /// Channels whose gap cannot be filled; the client must refetch them over GET.
    public let reset: [ChannelName]
    /// Retained messages to show right after `ready` (fresh or reset channels only).
    public let retained: [ChannelMessage]
    /// Live messages with a sequence at or below this were replayed or predate the
    /// subscription; the hub skips them so nothing arrives twice.
    public let since: UInt64
}

/// Takes publishes, keeps history and retained messages, counts subscribers per loop, and hands
/// each message to the loops that have subscribers for it (DESIGN "Broker" seam).
///
/// Ordering: messages of one channel reach every loop in offset order, and the
/// subscribe snapshot is consistent with the live messages that follow it (nothing lost or
/// doubled between the two). Later a Redis broker implements the same contract across nodes.
public protocol Broker: Sendable {
    /// The epoch stamped into every cursor this broker issues.
    var epoch: UInt32 { get }
    /// Publishes messages in order; each gets the next offset on its channel and the next stream id.
    func publish(_ batch: [PublishRequest]) -> [PublishReceipt]
    /// Registers one subscriber on `loop` for `channels` and returns what it must be sent first.
    func subscribe(_ channels: [ChannelName], loop: Int, resume: ResumePoint) -> SubscribeSnapshot
    /// Removes one subscriber on `loop` from `channels`.
    func unsubscribe(_ channels: [ChannelName], loop: Int)
    /// Drops history past its age and forgets idle channels; called periodically.
    func sweep()
    /// Messages published since start (metrics).
    var publishedCount: UInt64 { get }
}

/// How a broker hands messages to an event loop: `(loop index, messages in publish order)`.
public typealias BrokerDelivery = @Sendable (Int, [ChannelMessage]) -> Void
