import HeraldCore
import Synchronization

/// The in-process `Broker`: one mutex over every channel's ring, retained message and subscriber
/// count. The lock is held only for bookkeeping and the inbound hand-off, never for I/O, and it
/// never fails.
///
/// Ordering: the inbound handler is called with the lock held, so two publishers' messages reach
/// the node in sequence order, and a `subscribe` snapshot (taken under the same lock) sits
/// exactly between the messages handed over before it and those after.
public final class MemoryBroker: Broker {
    /// History bounds (RT-5): `HERALD_HISTORY_SIZE` and `HERALD_HISTORY_TTL_SECONDS`; how long a
    /// retained message is kept (RT-6, ADR 0028): `HERALD_RETAINED_TTL_SECONDS`.
    public struct Limits: Sendable {
        public var historySize: Int
        public var historyTTLNanoseconds: UInt64
        public var retainedTTLNanoseconds: UInt64
        /// Values below 1 are taken as 1.
        public init(historySize: Int = 256, historyTTLSeconds: Int = 600, retainedTTLSeconds: Int = 86_400) {
            self.historySize = max(historySize, 1)
            self.historyTTLNanoseconds = UInt64(max(historyTTLSeconds, 1)) * 1_000_000_000
            self.retainedTTLNanoseconds = UInt64(max(retainedTTLSeconds, 1)) * 1_000_000_000
        }
    }

    /// A channel the broker knows: subscribed to, or published on and not yet forgotten.
    ///
    /// What publishing creates is boxed in `history`, made at the first publish: most channels
    /// are a user's personal one, subscribed by an idle stream and rarely published on, and the
    /// ring, offsets and retained message inline made every idle stream's channel 112 bytes
    /// instead of 48 (issue 17: ≤ 1.2 KiB per idle SSE stream).
    private final class ChannelState {
        /// nil until the channel's first publish; then kept as long as the channel is.
        var history: ChannelHistoryState?
        /// This node's subscribers of the channel (`delivered`; idle channels are forgotten).
        var subscriberTotal = 0
        /// What the broker had already forgotten when this state was created: a resume from
        /// before it may have lost messages of an earlier incarnation of the channel.
        let floor: UInt64
        init(floor: UInt64) {
            self.floor = floor
        }

        /// Sequence of the newest message evicted from the ring; 0 before any publish.
        var evictedThrough: UInt64 { history?.ring.evictedThrough ?? 0 }
        /// The retained message unless it was published before `cutoff` (ADR 0028: a read
        /// honours the age at once; the sweep frees it later).
        func retained(since cutoff: UInt64) -> ChannelMessage? {
            guard let message = history?.retained, message.publishedAt >= cutoff else { return nil }
            return message
        }
        var lastSequence: UInt64 { history?.lastSequence ?? 0 }
        var storedCount: Int { history?.ring.count ?? 0 }

        func expire(olderThan cutoff: UInt64) {
            history?.ring.expire(olderThan: cutoff)
        }

        func messages(after sequence: UInt64) -> [ChannelMessage] {
            history?.ring.messages(after: sequence) ?? []
        }

        /// The history, made on the first call (the first publish).
        func publishing(historySize: Int) -> ChannelHistoryState {
            if let history { return history }
            let made = ChannelHistoryState(historySize: historySize)
            history = made
            return made
        }
    }

    /// What a channel's publishes left: its ring (RT-5), offsets and retained message.
    private final class ChannelHistoryState {
        var ring: HistoryRing
        var nextOffset: UInt64 = 1
        var lastSequence: UInt64 = 0
        var retained: ChannelMessage?
        init(historySize: Int) {
            ring = HistoryRing(capacity: historySize)
        }
    }

    private struct State: ~Copyable {
        var channels: [ChannelName: ChannelState] = [:]
        var sequence: UInt64 = 0
        /// Newest sequence of any channel whose state was forgotten: a resume from before it on a
        /// channel Herald no longer knows may have a gap, so it gets `reset`.
        var forgottenThrough: UInt64 = 0
        /// Where messages go; nil until the node registers (messages published before are only stored).
        var inbound: BrokerInboundHandler?
    }

    public let epoch: UInt32
    private let limits: Limits
    private let clock: any Clock
    private let state = Mutex(State())

    /// - Parameters:
    ///   - epoch: stamped into cursors; random per process start unless a test pins it.
    ///   - limits: per-channel ring bounds (RT-5).
    ///   - clock: monotonic time for the history TTL (tests pass a `ManualClock`).
    public init(epoch: UInt32 = UInt32.random(in: 1...UInt32.max), limits: Limits = .init(), clock: any Clock = SystemClock()) {
        self.epoch = epoch
        self.limits = limits
        self.clock = clock
    }

    public func setInboundHandler(_ handler: @escaping BrokerInboundHandler) {
        state.withLock { $0.inbound = handler }
    }

    private var cutoff: UInt64 {
        let now = clock.monotonicNanoseconds
        return now >= limits.historyTTLNanoseconds ? now - limits.historyTTLNanoseconds : 0
    }

    /// Publish time (monotonic) before which a retained message has expired.
    private var retainedCutoff: UInt64 {
        let now = clock.monotonicNanoseconds
        return now >= limits.retainedTTLNanoseconds ? now - limits.retainedTTLNanoseconds : 0
    }

    public func publish(_ batch: [PublishRequest]) -> [PublishReceipt] {
        let now = clock.monotonicNanoseconds
        let cutoff = now >= limits.historyTTLNanoseconds ? now - limits.historyTTLNanoseconds : 0
        return state.withLock { state in
            var receipts: [PublishReceipt] = []
            receipts.reserveCapacity(batch.count)
            var messages: [ChannelMessage] = []
            messages.reserveCapacity(batch.count)
            for request in batch {
                let channel = channelState(request.channel, in: &state)
                let history = channel.publishing(historySize: limits.historySize)
                state.sequence += 1
                let message = ChannelMessage(
                    channel: request.channel, event: request.event, offset: history.nextOffset,
                    cursor: StreamCursor(epoch: epoch, sequence: state.sequence),
                    data: request.data, publishedAt: now, retain: request.retain)
                history.nextOffset += 1
                history.lastSequence = message.sequence
                history.ring.expire(olderThan: cutoff)
                history.ring.append(message)
                if request.retain { history.retained = message }
                if channel.subscriberTotal > 0 { messages.append(message) }
                receipts.append(PublishReceipt(message: message, delivered: channel.subscriberTotal))
            }
            // Inside the lock: two publishers' messages reach the node in sequence order, and no
            // subscribe snapshot falls between storing a message and handing it over.
            if !messages.isEmpty { state.inbound?(messages) }
            return receipts
        }
    }

    public func subscribe(_ channels: [ChannelName], resume: ResumePoint) -> SubscribeSnapshot {
        let cutoff = self.cutoff
        let retainedCutoff = self.retainedCutoff
        return state.withLock { state in
            let current = state.sequence
            var replay: [ChannelMessage] = []
            var reset: [ChannelName] = []
            var retained: [ChannelMessage] = []
            var baseline: [ChannelMessage] = []
            var from: UInt64? = nil
            switch resume {
            case .fresh:
                break
            case .cursor(let cursor) where cursor.epoch == epoch && cursor.sequence <= current:
                from = cursor.sequence
            case .cursor, .invalid:
                reset = channels
            }
            for name in channels {
                let channel = channelState(name, in: &state)
                channel.expire(olderThan: cutoff)
                channel.subscriberTotal += 1
                if let from {
                    let gap = channel.evictedThrough > from || from < channel.floor
                    if gap {
                        reset.append(name)
                        if let message = channel.retained(since: retainedCutoff) { retained.append(message) }
                    } else {
                        replay.append(contentsOf: channel.messages(after: from))
                        // Newer than the cursor, it is in the replay already.
                        if let message = channel.retained(since: retainedCutoff), message.sequence <= from { baseline.append(message) }
                    }
                } else if let message = channel.retained(since: retainedCutoff) {
                    retained.append(message)
                }
            }
            if from != nil, replay.count > 1, channels.count > 1 {
                replay.sort { $0.sequence < $1.sequence }
            }
            return SubscribeSnapshot(
                position: StreamCursor(epoch: epoch, sequence: from ?? current),
                replay: replay, reset: reset, retained: retained, baseline: baseline, since: current)
        }
    }

    public func unsubscribe(_ channels: [ChannelName]) {
        state.withLock { state in
            for name in channels {
                guard let channel = state.channels[name], channel.subscriberTotal > 0 else { continue }
                channel.subscriberTotal -= 1
            }
        }
    }

    public func history(_ name: ChannelName, after position: StreamCursor) -> ChannelHistory {
        let cutoff = self.cutoff
        return state.withLock { state in
            guard position.epoch == epoch, position.sequence <= state.sequence else {
                return ChannelHistory(messages: [], complete: false)
            }
            guard let channel = state.channels[name] else {
                // Never known, or forgotten: complete only if nothing was forgotten after the position.
                return ChannelHistory(messages: [], complete: state.forgottenThrough <= position.sequence)
            }
            channel.expire(olderThan: cutoff)
            let gap = channel.evictedThrough > position.sequence || position.sequence < channel.floor
            return ChannelHistory(messages: gap ? [] : channel.messages(after: position.sequence), complete: !gap)
        }
    }

    public func retained(_ name: ChannelName) -> ChannelMessage? {
        let retainedCutoff = self.retainedCutoff
        return state.withLock { $0.channels[name]?.retained(since: retainedCutoff) }
    }

    public func clearRetained(_ name: ChannelName) {
        state.withLock { $0.channels[name]?.history?.retained = nil }
    }

    public func sweep() {
        let cutoff = self.cutoff
        let retainedCutoff = self.retainedCutoff
        state.withLock { state in
            var forgotten: [ChannelName] = []
            for (name, channel) in state.channels {
                channel.expire(olderThan: cutoff)
                if let history = channel.history, let message = history.retained, message.publishedAt < retainedCutoff {
                    history.retained = nil
                }
                if channel.subscriberTotal == 0, channel.storedCount == 0, channel.history?.retained == nil {
                    forgotten.append(name)
                    state.forgottenThrough = max(state.forgottenThrough, channel.lastSequence)
                }
            }
            for name in forgotten { state.channels[name] = nil }
            // A peak's buckets go back once it has passed (issue 17, Benchmarks/peak.py).
            state.channels.shrinkIfSparse()
        }
    }

    public var publishedCount: UInt64 { state.withLock { $0.sequence } }

    public func removeChannels(app: String) {
        let prefix = AppNamespace.prefix(app)
        state.withLock { state in
            for (name, channel) in state.channels where name.rawValue.hasPrefix(prefix) {
                // As a sweep forgets a channel: a resume from before it cannot be told complete.
                state.forgottenThrough = max(state.forgottenThrough, channel.lastSequence)
                state.channels[name] = nil
            }
            state.channels.shrinkIfSparse()
        }
    }

    /// Number of channels currently tracked (tests and metrics).
    public var channelCount: Int { state.withLock { $0.channels.count } }

    private func channelState(_ name: ChannelName, in state: inout State) -> ChannelState {
        if let existing = state.channels[name] { return existing }
        let created = ChannelState(floor: state.forgottenThrough)
        state.channels[name] = created
        return created
    }
}
