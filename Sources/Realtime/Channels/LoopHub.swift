import HeraldCore
import Synchronization

/// A connection that receives channel messages (an SSE stream; later a WebSocket).
///
/// - Important: Called on the subscriber's own loop only.
public protocol StreamSubscriber: AnyObject {
    /// Writes one message (or queues it). Must not close synchronously: a subscriber that has to
    /// go asks the hub with `LoopHub.scheduleClose`.
    ///
    /// - Parameter encoded: the message's wire forms, looked up once per message by the hub, not
    ///   once per subscriber (the lookup is an atomic load and a reference count that every loop
    ///   would otherwise touch for every subscriber).
    func deliver(_ message: ChannelMessage, encoded: EncodedMessage)
    /// The broker lost messages of `channels` (a subset of this subscriber's): send one `reset`
    /// listing them, carrying `position` as the stream's id. Must not close synchronously.
    func reset(_ channels: [ChannelName], position: StreamCursor)
    /// Where this subscriber sits in the hub's lists, kept by the hub for O(1) removal.
    var hubSlots: HubSlots { get set }
}

/// One subscriber's place in one channel's list.
public struct HubSlot {
    let list: SubscriberList
    var index: Int
}

/// A subscriber's slots. The first is stored inline: most streams are on one channel (their
/// personal one), and an array of one slot would cost each idle stream a heap block.
public struct HubSlots {
    private var first: HubSlot?
    private var rest: [HubSlot] = []

    public init() {}

    var isEmpty: Bool { first == nil }

    mutating func append(_ slot: HubSlot) {
        if first == nil { first = slot } else { rest.append(slot) }
    }

    /// Removes and returns every slot.
    mutating func takeAll() -> (first: HubSlot?, rest: [HubSlot]) {
        defer { self = HubSlots() }
        return (first, rest)
    }

    /// Removes and returns the slot in the list of `channel`.
    mutating func remove(channel: ChannelName) -> HubSlot? {
        if let slot = first, slot.list.channel == channel {
            first = rest.isEmpty ? nil : rest.removeFirst()
            return slot
        }
        guard let position = rest.firstIndex(where: { $0.list.channel == channel }) else { return nil }
        return rest.remove(at: position)
    }

    /// Records that this subscriber moved to `index` in `list`.
    mutating func setIndex(_ index: Int, in list: SubscriberList) {
        if first?.list === list {
            first!.index = index
        } else if let i = rest.firstIndex(where: { $0.list === list }) {
            rest[i].index = index
        }
    }
}

/// The subscribers of one channel on one loop, at indexes 0..<count.
public final class SubscriberList {
    struct Entry {
        let subscriber: StreamSubscriber
        /// Messages at or below this sequence were replayed or predate the subscription (or a
        /// reset that covers them).
        var since: UInt64
    }
    let channel: ChannelName
    /// Index 0, inline: most lists (a stream's personal channel) hold one subscriber, and an
    /// array of one would cost each idle stream a heap block of its own (issue 17). Nil only
    /// when the list is empty.
    private(set) var first: Entry?
    /// Indexes 1..<count.
    private(set) var rest: ContiguousArray<Entry> = []
    init(channel: ChannelName) { self.channel = channel }

    var count: Int { first == nil ? 0 : 1 + rest.count }
    var isEmpty: Bool { first == nil }

    subscript(index: Int) -> Entry {
        get { index == 0 ? first! : rest[index - 1] }
        set {
            if index == 0 { first = newValue } else { rest[index - 1] = newValue }
        }
    }

    func append(_ entry: Entry) {
        if first == nil { first = entry } else { rest.append(entry) }
    }

    func removeLast() {
        if rest.isEmpty { first = nil } else { rest.removeLast() }
    }
}

/// The per-loop shard of the hub (DESIGN: sharded per loop): `channel → subscribers` for this
/// loop's connections only, so writing a message never takes a lock.
///
/// Owned by its event loop: every method must be called on that loop.
public final class LoopHub: @unchecked Sendable {
    public let loop: EventLoop
    private var channels: [ChannelName: SubscriberList] = [:]
    private var pendingClose: [() -> Void] = []
    private var delivering = false
    /// Messages written to subscribers on this loop (metrics).
    public private(set) var deliveredCount: UInt64 = 0
    /// Deliveries handed to this loop and not yet written (flushed to their sockets, `afterWrites`):
    /// for each queued message, the number of this loop's subscribers of its channel when it was
    /// handed over. How far the loop is behind
    /// its publishers (`RealtimeNode.isBehind`, issue 17). Changed from any thread.
    let queuedDeliveries = Atomic<Int>(0)

    /// Set by the server on the loop: runs an action once what the loop's connections queued so
    /// far has been flushed (`LoopContext.afterQueuedWrites`). Nil without a server.
    var afterWritesHook: ((@escaping () -> Void) -> Void)?

    public init(loop: EventLoop) {
        self.loop = loop
    }

    /// Runs `action` on this loop once the writes queued on its connections so far (the messages
    /// delivered before this call) have been flushed: the server sends stream writes a slice per
    /// turn, so a delivery is queued at once and sent up to one sweep of the loop's streams later.
    /// At once when there is no server or nothing is waiting.
    public func afterWrites(_ action: @escaping () -> Void) {
        loop.assertInEventLoop()
        if let hook = afterWritesHook { hook(action) } else { action() }
    }

    /// Number of channels with at least one subscriber on this loop.
    public var channelCount: Int { channels.count }

    /// Channels the table has room for before it grows (tests: a peak's storage goes back).
    var channelCapacity: Int { channels.capacity }

    /// Subscribers of `channel` on this loop.
    public func subscriberCount(_ channel: ChannelName) -> Int { channels[channel]?.count ?? 0 }

    /// Adds `subscriber` to `channel`; live messages with a sequence ≤ `since` are skipped for it.
    public func add(_ subscriber: StreamSubscriber, to channel: ChannelName, since: UInt64) {
        loop.assertInEventLoop()
        let list: SubscriberList
        if let existing = channels[channel] {
            list = existing
        } else {
            list = SubscriberList(channel: channel)
            channels[channel] = list
        }
        subscriber.hubSlots.append(HubSlot(list: list, index: list.count))
        list.append(SubscriberList.Entry(subscriber: subscriber, since: since))
    }

    /// Removes `subscriber` from every channel it is on (swap-remove, O(channels)).
    /// - Returns: the channels it was removed from.
    @discardableResult
    public func removeAll(_ subscriber: StreamSubscriber) -> [ChannelName] {
        loop.assertInEventLoop()
        let slots = subscriber.hubSlots.takeAll()
        guard let first = slots.first else { return [] }
        var channels = [first.list.channel]
        remove(at: first)
        for slot in slots.rest {
            channels.append(slot.list.channel)
            remove(at: slot)
        }
        return channels
    }

    /// Removes `subscriber` from one channel.
    public func remove(_ subscriber: StreamSubscriber, from channel: ChannelName) {
        loop.assertInEventLoop()
        guard let slot = subscriber.hubSlots.remove(channel: channel) else { return }
        remove(at: slot)
    }

    private func remove(at slot: HubSlot) {
        let list = slot.list
        let last = list.count - 1
        assert(slot.index <= last, "hub slot out of range")
        if slot.index != last {
            let moved = list[last]
            list[slot.index] = moved
            moved.subscriber.hubSlots.setIndex(slot.index, in: list)
        }
        list.removeLast()
        if list.isEmpty {
            channels[list.channel] = nil
            // A peak's buckets go back once it has passed (issue 17, Benchmarks/peak.py).
            channels.shrinkIfSparse()
        }
    }

    /// Writes each message to every subscriber of its channel on this loop, in order.
    public func deliver(_ messages: [ChannelMessage]) {
        loop.assertInEventLoop()
        delivering = true
        for message in messages {
            guard let list = channels[message.channel], let first = list.first else { continue }
            let sequence = message.sequence
            let encoded = message.encoded
            if sequence > first.since {
                first.subscriber.deliver(message, encoded: encoded)
                deliveredCount &+= 1
            }
            for entry in list.rest where sequence > entry.since {
                entry.subscriber.deliver(message, encoded: encoded)
                deliveredCount &+= 1
            }
        }
        delivering = false
        runPendingCloses()
    }

    /// Sends each subscriber of `channels` on this loop one `reset` naming the channels it is on
    /// (SC-3: lost messages end in a reset, never a silent gap). From then on a subscriber skips
    /// messages at or below `position.sequence` on those channels: its refetch covers them, and
    /// after a new epoch the old `since` (of a higher sequence) would hide live messages.
    public func reset(_ channels: [ChannelName], position: StreamCursor) {
        loop.assertInEventLoop()
        var affected: [ObjectIdentifier: (subscriber: StreamSubscriber, channels: [ChannelName])] = [:]
        var order: [ObjectIdentifier] = []
        for channel in channels {
            guard let list = self.channels[channel] else { continue }
            for index in 0..<list.count {
                list[index].since = position.sequence
                let subscriber = list[index].subscriber
                let key = ObjectIdentifier(subscriber)
                if affected[key] == nil {
                    affected[key] = (subscriber, [])
                    order.append(key)
                }
                affected[key]!.channels.append(channel)
            }
        }
        delivering = true
        for key in order {
            let (subscriber, names) = affected[key]!
            subscriber.reset(names, position: position)
        }
        delivering = false
        runPendingCloses()
    }

    /// Runs `close` now, or right after the current delivery pass so lists are not mutated while
    /// they are being walked.
    public func scheduleClose(_ close: @escaping () -> Void) {
        if delivering { pendingClose.append(close) } else { close() }
    }

    private func runPendingCloses() {
        while !pendingClose.isEmpty {
            let closes = pendingClose
            pendingClose.removeAll()
            for close in closes { close() }
        }
    }
}
