import Synchronization

/// The in-process `Broker`: one mutex over every channel's ring, retained message and per-loop
/// subscriber counts. The lock is held only for bookkeeping and inbox hand-offs, never for I/O.
public final class MemoryBroker: Broker {
    /// History bounds (RT-5): `HERALD_HISTORY_SIZE` and `HERALD_HISTORY_TTL_SECONDS`.
    public struct Limits: Sendable {
        public var historySize: Int
        public var historyTTLNanoseconds: UInt64
        public init(historySize: Int = 256, historyTTLSeconds: Int = 600) {
            self.historySize = max(historySize, 1)
            self.historyTTLNanoseconds = UInt64(max(historyTTLSeconds, 1)) * 1_000_000_000
        }
    }

    private final class ChannelState {
        var ring: HistoryRing
        var nextOffset: UInt64 = 1
        var lastSequence: UInt64 = 0
        var retained: ChannelMessage?
        var subscribers = LoopCounts()
        var subscriberTotal = 0
        /// What the broker had already forgotten when this state was created: a resume from
        /// before it may have lost messages of an earlier incarnation of the channel.
        let floor: UInt64
        init(historySize: Int, floor: UInt64) {
            ring = HistoryRing(capacity: historySize)
            self.floor = floor
        }
    }

    private struct State: ~Copyable {
        var channels: [ChannelName: ChannelState] = [:]
        var sequence: UInt64 = 0
        /// Newest sequence of any channel whose state was forgotten: a resume from before it on a
        /// channel Herald no longer knows may have a gap, so it gets `reset`.
        var forgottenThrough: UInt64 = 0
    }

    public let epoch: UInt32
    private let limits: Limits
    private let loopCount: Int
    private let deliver: BrokerDelivery
    private let clock: @Sendable () -> UInt64
    private let state = Mutex(State())

    /// - Parameters:
    ///   - epoch: stamped into cursors; pick a random one per process start.
    ///   - loopCount: number of event loops (subscriber counts are kept per loop).
    ///   - deliver: hands messages to a loop; called with the lock held, so it must only enqueue.
    ///   - clock: monotonic ns (injected for TTL tests).
    public init(epoch: UInt32, loopCount: Int, limits: Limits = .init(),
                clock: @escaping @Sendable () -> UInt64 = monotonicNanoseconds,
                deliver: @escaping BrokerDelivery) {
        self.epoch = epoch
        self.loopCount = loopCount
        self.limits = limits
        self.clock = clock
        self.deliver = deliver
    }

    public func publish(_ batch: [PublishRequest]) -> [PublishReceipt] {
        let now = clock()
        let cutoff = now >= limits.historyTTLNanoseconds ? now - limits.historyTTLNanoseconds : 0
        return state.withLock { state in
            var receipts: [PublishReceipt] = []
            receipts.reserveCapacity(batch.count)
            var perLoop = Array(repeating: [ChannelMessage](), count: loopCount)
            for request in batch {
                let channel = channelState(request.channel, in: &state)
                state.sequence += 1
                let message = ChannelMessage(
                    channel: request.channel, event: request.event, offset: channel.nextOffset,
                    cursor: StreamCursor(epoch: epoch, sequence: state.sequence),
                    data: request.data, publishedAt: now, retain: request.retain)
                channel.nextOffset += 1
                channel.lastSequence = message.sequence
                channel.ring.expire(olderThan: cutoff)
                channel.ring.append(message)
                if request.retain { channel.retained = message }
                for loop in 0..<loopCount where channel.subscribers[loop] > 0 {
                    perLoop[loop].append(message)
                }
                receipts.append(PublishReceipt(message: message, delivered: channel.subscriberTotal))
            }
            // Inside the lock: two publishers' messages reach every loop in sequence order.
            for loop in 0..<loopCount where !perLoop[loop].isEmpty {
                deliver(loop, perLoop[loop])
            }
            return receipts
        }
    }

    public func subscribe(_ channels: [ChannelName], loop: Int, resume: ResumePoint) -> SubscribeSnapshot {
        let now = clock()
        let cutoff = now >= limits.historyTTLNanoseconds ? now - limits.historyTTLNanoseconds : 0
        return state.withLock { state in
            let current = state.sequence
            var replay: [ChannelMessage] = []
            var reset: [ChannelName] = []
            var retained: [ChannelMessage] = []
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
                channel.ring.expire(olderThan: cutoff)
                channel.subscribers[loop] += 1
                channel.subscriberTotal += 1
                if let from {
                    let gap = channel.ring.evictedThrough > from || from < channel.floor
                    if gap {
                        reset.append(name)
                        if let message = channel.retained { retained.append(message) }
                    } else {
                        replay.append(contentsOf: channel.ring.messages(after: from))
                    }
                } else if let message = channel.retained {
                    retained.append(message)
                }
            }
            if from != nil, replay.count > 1, channels.count > 1 {
                replay.sort { $0.sequence < $1.sequence }
            }
            return SubscribeSnapshot(
                position: StreamCursor(epoch: epoch, sequence: from ?? current),
                replay: replay, reset: reset, retained: retained, since: current)
        }
    }

    public func unsubscribe(_ channels: [ChannelName], loop: Int) {
        state.withLock { state in
            for name in channels {
                guard let channel = state.channels[name], channel.subscribers[loop] > 0 else { continue }
                channel.subscribers[loop] -= 1
                channel.subscriberTotal -= 1
            }
        }
    }

    public func sweep() {
        let now = clock()
        let cutoff = now >= limits.historyTTLNanoseconds ? now - limits.historyTTLNanoseconds : 0
        state.withLock { state in
            var forgotten: [ChannelName] = []
            for (name, channel) in state.channels {
                channel.ring.expire(olderThan: cutoff)
                if channel.subscriberTotal == 0, channel.ring.count == 0, channel.retained == nil {
                    forgotten.append(name)
                    state.forgottenThrough = max(state.forgottenThrough, channel.lastSequence)
                }
            }
            for name in forgotten { state.channels[name] = nil }
        }
    }

    public var publishedCount: UInt64 { state.withLock { $0.sequence } }

    /// Number of channels currently tracked (tests and metrics).
    public var channelCount: Int { state.withLock { $0.channels.count } }

    private func channelState(_ name: ChannelName, in state: inout State) -> ChannelState {
        if let existing = state.channels[name] { return existing }
        let created = ChannelState(historySize: limits.historySize, floor: state.forgottenThrough)
        state.channels[name] = created
        return created
    }
}
