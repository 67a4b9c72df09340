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

/// What a publish produced: the stored message (its offset and stream position) and how many
/// connections it was handed to.
public struct PublishReceipt: Sendable {
    public let message: ChannelMessage
    /// Connections subscribed to the channel when it was published (RT-4 `delivered`), as the
    /// broker counts them through `subscribe`/`unsubscribe`.
    public let delivered: Int

    public init(message: ChannelMessage, delivered: Int) {
        self.message = message
        self.delivered = delivered
    }
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
    /// On a resume: the retained messages of channels replayed without a gap whose retained
    /// message is at or before the cursor, to show before the replay. The cursor does not say
    /// which channels the client had, so a channel added on resume would otherwise never get its
    /// state; a channel it had gets its state snapshot again (as after a `reset`).
    public let baseline: [ChannelMessage]
    /// The newest stream sequence when the snapshot was taken: live messages with a sequence at
    /// or below it were replayed or predate the subscription, so the hub skips them and nothing
    /// arrives twice.
    public let since: UInt64

    public init(position: StreamCursor, replay: [ChannelMessage], reset: [ChannelName], retained: [ChannelMessage],
                baseline: [ChannelMessage] = [], since: UInt64) {
        self.position = position
        self.replay = replay
        self.reset = reset
        self.retained = retained
        self.baseline = baseline
        self.since = since
    }
}

/// A channel's messages after a stream position (RT-5).
public struct ChannelHistory: Sendable {
    /// Messages after the position, oldest first.
    public let messages: [ChannelMessage]
    /// False when messages after the position were dropped (ring size, TTL, another epoch): the
    /// reader cannot fill the gap from history and must refetch (a `reset`).
    public let complete: Bool

    public init(messages: [ChannelMessage], complete: Bool) {
        self.messages = messages
        self.complete = complete
    }
}

/// How a broker hands messages to its node: every message it publishes (or receives from
/// another node), in stream order per channel. Called on a broker thread — for the memory broker
/// with its lock held — so it must only hand the messages on (an inbox enqueue), never block.
public typealias BrokerInboundHandler = @Sendable ([ChannelMessage]) -> Void

/// How a broker tells its node that subscribers of `channels` may have missed messages it cannot
/// replay in place (a lost pub/sub message, a Redis restart that changed the epoch): the node
/// sends those subscribers one `reset` carrying `position` and treats messages at or below
/// `position` as covered by the refetch (SPEC RT-5, SC-3: never a silent gap). Called on a broker
/// thread, ordered with the inbound handler's calls; it must only hand the work on.
public typealias BrokerResetHandler = @Sendable (_ channels: [ChannelName], _ position: StreamCursor) -> Void

/// Takes publishes, keeps history and retained messages, counts the node's subscribers per
/// channel, and hands every message back to the node through its inbound handler (DESIGN,
/// "Ports and adapters": the broker is node-level; which event loops want a message is the
/// node's business, not the broker's).
///
/// # Ordering
/// Messages of one channel reach the inbound handler in offset order. A `subscribe` snapshot is
/// consistent with the inbound messages: every message with a sequence above `since` reaches the
/// handler after the snapshot was taken or later, none at or below it is missing from `replay`
/// (when the resume point is covered). The node relies on this to lose or double nothing between
/// replay and live (see `RealtimeNode.subscribe`).
///
/// # Errors
/// Calls that may need a remote store throw `BrokerError` (the memory broker never throws);
/// publish routes answer 503 `broker_unavailable`.
///
/// # Thread safety
/// Every method may be called from any thread, including an event loop: they must not block for
/// long (a remote adapter bounds its waits and throws `.timedOut`).
public protocol Broker: Sendable {
    /// The epoch stamped into every cursor this broker issues (random per start for the memory
    /// broker, so a cursor from an earlier process gets a clean `reset`).
    var epoch: UInt32 { get }

    /// Registers where messages go (one handler per broker; a later call replaces it). Set by
    /// `RealtimeNode` at init, before any publish.
    func setInboundHandler(_ handler: @escaping BrokerInboundHandler)

    /// Registers where "these channels must be reset for their subscribers" goes (one handler per
    /// broker). A broker that cannot lose messages (the memory broker) never calls it; the
    /// default implementation ignores the handler.
    func setResetHandler(_ handler: @escaping BrokerResetHandler)

    /// Publishes messages in order; each gets the next offset on its channel and the next stream
    /// position, and reaches the inbound handler.
    /// - Returns: one receipt per request, in order.
    /// - Throws: `BrokerError`: the batch is all or nothing; when the error `mayHaveTakenEffect`
    ///   (the store's answer timed out or was lost) it may all have been published.
    func publish(_ batch: [PublishRequest]) throws(BrokerError) -> [PublishReceipt]

    /// Counts one more subscriber of this node on `channels` and returns what it must be sent
    /// first, atomically with respect to publishes.
    /// - Throws: `BrokerError`; then nothing was counted.
    func subscribe(_ channels: [ChannelName], resume: ResumePoint) throws(BrokerError) -> SubscribeSnapshot

    /// Counts one subscriber less on `channels`. Cannot fail: an adapter that lost its store
    /// forgets the interest locally and resubscribes what remains when it reconnects.
    func unsubscribe(_ channels: [ChannelName])

    /// Messages of `channel` after stream position `position`, from history (RT-5).
    /// - Throws: `BrokerError` when history cannot be read.
    func history(_ channel: ChannelName, after position: StreamCursor) throws(BrokerError) -> ChannelHistory

    /// The channel's retained message (RT-6), if it has one.
    /// - Throws: `BrokerError` when it cannot be read.
    func retained(_ channel: ChannelName) throws(BrokerError) -> ChannelMessage?

    /// Forgets the channel's retained message (RT-6, ADR 0028: `DELETE /v1/channels/{name}/retained`);
    /// nothing is sent to subscribers. Clearing a channel with none is not an error.
    /// - Throws: `BrokerError` when the store cannot be reached; then it may still be there.
    func clearRetained(_ channel: ChannelName) throws(BrokerError)

    /// Drops history past its age and retained messages past theirs (ADR 0028), and forgets idle
    /// channels; called every few seconds.
    func sweep()

    /// Messages published since start; with `epoch`, the newest stream position (`Herald-Cursor`,
    /// metrics).
    var publishedCount: UInt64 { get }

    /// Forgets every channel of app `app` (ADR 0006: names `~{app}~…`): history, retained
    /// messages and offsets. The app was deleted and its streams closed; a new app of the same id
    /// must not see them.
    /// - Throws: `BrokerError` when a remote store cannot be reached (what it held expires then).
    func removeChannels(app: String) throws(BrokerError)

    /// Asks the broker's store whether it answers now (`GET /readyz`): a node whose broker cannot
    /// be reached answers every publish 503 and must not be reported ready. Blocks up to the
    /// adapter's call timeout; call it off the event loops. The in-process broker always answers.
    /// - Throws: `BrokerError` when the store does not answer.
    func checkReachable() throws(BrokerError)
}

extension Broker {
    /// A broker that never loses a message to its node has nothing to report.
    public func setResetHandler(_ handler: @escaping BrokerResetHandler) {}

    /// An in-process broker is always there.
    public func checkReachable() throws(BrokerError) {}
}
