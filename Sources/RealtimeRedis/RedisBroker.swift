import Dispatch
import Foundation
import HeraldCore
import Synchronization

/// The `Broker` on Redis (SC-1, `HERALD_BROKER=redis://…`): history, retained messages and the
/// stream sequence live in Redis, shared by every node; each node SUBSCRIBEs per channel while it
/// has local subscribers and hands what it receives to its loops.
///
/// # Publishing
/// One `EVALSHA` per batch (`BrokerScripts.publish`): the sequence (`HINCRBY` on the namespace's
/// meta hash, ADR 0002), the channel's offset, `XADD` with a `MAXLEN` bound and `EXPIRE`, and a
/// `PUBLISH` of the framed message. A node receives its own publishes back through Redis like
/// every other node; `publish` returns once its own copy reached the node (bounded wait), so the
/// push planner's loop barrier after a publish still sees the local connections written (ADR 0005).
///
/// # Subscribing without a gap
/// The channel is SUBSCRIBEd (and confirmed) before history is read, in one script, with the
/// stream sequence: every message after that sequence arrives over pub/sub, every one at or
/// before it is in the replay (`SubscribeSnapshot.since`).
///
/// # Lost messages
/// Pub/sub is at most once. A live message whose `previous` is not the last one this node saw on
/// the channel, a new epoch (Redis lost its data), a reconnect after which a channel's newest
/// sequence is past what arrived, or a periodic position check that finds a channel behind twice
/// in a row, all end in the reset handler for the channels concerned; never a silent gap.
///
/// # Thread safety
/// `state` is guarded by its mutex; `handoff` serialises the calls into the node (messages from
/// the subscriber thread, resets from it and from the position check).
public final class RedisBroker: Broker {
    /// Where Redis is and how the broker uses it.
    public struct Configuration: Sendable {
        public var endpoint: RedisEndpoint
        /// Prefix of every key and pub/sub channel (`{namespace}:…`); nodes of one cluster share it.
        public var namespace: String
        /// Messages kept per channel (`HERALD_HISTORY_SIZE`, RT-5).
        public var historySize: Int
        /// A channel's history expires this long after its last publish (`HERALD_HISTORY_TTL_SECONDS`).
        public var historyTTLSeconds: Int
        /// A retained message's key expires this long after its publish (`HERALD_RETAINED_TTL_SECONDS`, ADR 0028).
        public var retainedTTLSeconds: Int
        /// How often the node compares each channel's newest sequence with what arrived.
        public var positionCheckMilliseconds: Int
        /// How long `publish` waits for its own messages to come back before returning anyway.
        public var echoWaitMilliseconds: Int
        public var client: RedisClientOptions

        public init(endpoint: RedisEndpoint, namespace: String = "herald", historySize: Int = 256, historyTTLSeconds: Int = 600,
                    retainedTTLSeconds: Int = 86_400,
                    positionCheckMilliseconds: Int = 5_000, echoWaitMilliseconds: Int = 500, client: RedisClientOptions = .init()) {
            self.endpoint = endpoint
            self.namespace = namespace
            self.historySize = max(historySize, 1)
            self.historyTTLSeconds = max(historyTTLSeconds, 1)
            self.retainedTTLSeconds = max(retainedTTLSeconds, 1)
            self.positionCheckMilliseconds = max(positionCheckMilliseconds, 50)
            self.echoWaitMilliseconds = echoWaitMilliseconds
            self.client = client
        }
    }

    private struct ChannelState {
        /// This node's subscribers of the channel.
        var subscribers = 0
        /// Sequence of the newest message of the channel this node accounted for; nil when
        /// unknown (after an epoch change), then the next message is taken as it comes.
        var last: UInt64?
        /// The epoch `last` belongs to: the node's subscribers of the channel are positioned in
        /// it. A channel first subscribed after Redis changed epochs is in the new one already
        /// and needs no reset. Nil while the channel's first subscription on this node waits for
        /// its history read: `last` is not known yet, and messages heard meanwhile go to `heard`.
        var epoch: UInt32?
        /// Messages heard (sequence, the channel's previous) while `epoch` is nil, in arrival
        /// order: their chain is checked from the read's newest message once it is known
        /// (`chain(from:heard:)`). Empty otherwise.
        var heard: [(sequence: UInt64, previous: UInt64)] = []
        /// The channel's newest sequence as the previous position check read it, when that was
        /// past `last`: still behind at the next check means lost.
        var suspect: UInt64?
    }

    private struct EchoWaiter {
        let epoch: UInt32
        let sequence: UInt64
        let done: DispatchSemaphore
    }

    private struct State: ~Copyable {
        var channels: [ChannelName: ChannelState] = [:]
        var epoch: UInt32
        /// The newest stream sequence this node knows of.
        var sequence: UInt64 = 0
        /// Newest message handed to the node (epoch, sequence).
        var handed: (epoch: UInt32, sequence: UInt64) = (0, 0)
        var waiters: [EchoWaiter] = []
        var inbound: BrokerInboundHandler?
        var reset: BrokerResetHandler?
        var closed = false
    }

    public let configuration: Configuration
    private let commander: RedisCommander
    private let subscriber: RedisSubscriber
    private let state: Mutex<State>
    private let handoff = Mutex(())
    private let clock: any Clock
    private let logger: Logger
    private let checkWake = DispatchSemaphore(value: 0)
    private let keyPrefix: String
    /// Resets sent to the node, channels counted once per reset (metrics, tests).
    private let resetCount = Atomic<UInt64>(0)

    /// Starts the client threads and learns the epoch (creating it when Redis has none). Redis
    /// being down at start is no error: the epoch is then a random placeholder until Redis
    /// answers, and calls fail with `BrokerError` meanwhile.
    public init(_ configuration: Configuration, clock: any Clock = SystemClock(), logger: Logger = .silent) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        keyPrefix = "{\(configuration.namespace)}:"
        commander = RedisCommander(endpoint: configuration.endpoint, options: configuration.client, name: "herald.redis.broker")
        state = Mutex(State(epoch: UInt32.random(in: 1...UInt32.max)))
        subscriber = RedisSubscriber(endpoint: configuration.endpoint, options: configuration.client)
        subscriber.start(onMessage: { [unowned self] messages in received(messages) },
                         onReady: { [unowned self] reconnected in if reconnected { checkPositions(afterReconnect: true) } })
        if let positions = try? readPositions([]) {
            state.withLock { state in
                state.epoch = positions.epoch
                state.sequence = positions.sequence
            }
        }
        let thread = Thread { [self] in runPositionChecks() }
        thread.name = "herald.redis.positions"
        thread.start()
    }

    /// Stops the threads and closes the connections; calls fail with `BrokerError` afterwards.
    public func shutdown() {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        checkWake.signal()
        subscriber.shutdown()
        commander.shutdown()
    }

    public var epoch: UInt32 { state.withLock { $0.epoch } }

    /// The newest stream sequence this node has seen (its own publishes, messages received, the
    /// position check): never ahead of Redis, possibly behind messages of channels this node does
    /// not subscribe to (a cursor from it may replay such a message, never skip one).
    public var publishedCount: UInt64 { state.withLock { $0.sequence } }

    /// Channels reset so far (each channel of each reset counts once).
    public var resetChannelCount: UInt64 { resetCount.load(ordering: .relaxed) }

    /// What this broker cost Redis so far (benchmarks, the capacity model of SC-2).
    public struct Costs: Sendable, Equatable {
        /// Commands on the command connection (a publish batch is one `EVALSHA`, or two after
        /// `NOSCRIPT`), and their argument bytes.
        public var commands: UInt64
        public var commandBytes: UInt64
        /// Pub/sub messages this node received (one per publish of a channel it subscribes to),
        /// and their payload bytes.
        public var messagesReceived: UInt64
        public var messageBytes: UInt64
    }

    public var costs: Costs {
        let received = subscriber.messagesReceived
        return Costs(commands: commander.commandsSent, commandBytes: commander.bytesSent,
                     messagesReceived: received.count, messageBytes: received.bytes)
    }

    public func setInboundHandler(_ handler: @escaping BrokerInboundHandler) {
        state.withLock { $0.inbound = handler }
    }

    public func setResetHandler(_ handler: @escaping BrokerResetHandler) {
        state.withLock { $0.reset = handler }
    }

    // MARK: Keys

    private var metaKey: String { keyPrefix + "meta" }
    private var ticksKey: String { keyPrefix + "ticks" }
    private func keys(_ channel: ChannelName) -> [String] {
        [keyPrefix + "m:" + channel.rawValue, keyPrefix + "h:" + channel.rawValue, keyPrefix + "r:" + channel.rawValue]
    }
    private func pubsubName(_ channel: ChannelName) -> String { keyPrefix + "c:" + channel.rawValue }
    private var candidateEpoch: [UInt8] { Array(BrokerFrame.epochText(UInt32.random(in: 1...UInt32.max)).utf8) }

    // MARK: Publish

    public func publish(_ batch: [PublishRequest]) throws(BrokerError) -> [PublishReceipt] {
        guard !batch.isEmpty else { return [] }
        var keys = [metaKey, ticksKey]
        var arguments: [[UInt8]] = [candidateEpoch, Array(String(configuration.historySize).utf8),
                                    Array(String(configuration.historyTTLSeconds).utf8),
                                    Array(String(configuration.retainedTTLSeconds).utf8)]
        for request in batch {
            keys.append(contentsOf: self.keys(request.channel))
            arguments.append(Array(request.channel.rawValue.utf8))
            arguments.append(Array(pubsubName(request.channel).utf8))
            arguments.append(Array(request.event.rawValue.utf8))
            arguments.append(request.retain ? [49] : [48])
            arguments.append(Array(request.data.utf8))
        }
        let reply = try brokerCall(RedisCommand(script: BrokerScripts.publish, keys: keys, arguments: arguments))
        guard let values = reply.elements, values.count == 1 + 2 * batch.count,
              let epochText = values[0].text, let epoch = UInt32(epochText, radix: 16) else {
            throw .unconfirmed("unexpected publish reply")
        }
        let now = clock.monotonicNanoseconds
        var receipts: [PublishReceipt] = []
        receipts.reserveCapacity(batch.count)
        var newest: UInt64 = 0
        var echoed = false
        let counts = state.withLock { state -> [Int] in batch.map { state.channels[$0.channel]?.subscribers ?? 0 } }
        for (index, request) in batch.enumerated() {
            guard let sequence = values[1 + 2 * index].int64, let offset = values[2 + 2 * index].int64 else {
                throw .unconfirmed("unexpected publish reply")
            }
            let message = ChannelMessage(channel: request.channel, event: request.event, offset: UInt64(offset),
                                         cursor: StreamCursor(epoch: epoch, sequence: UInt64(sequence)),
                                         data: request.data, publishedAt: now, retain: request.retain)
            receipts.append(PublishReceipt(message: message, delivered: counts[index]))
            newest = max(newest, UInt64(sequence))
            if counts[index] > 0 { echoed = true }
        }
        // `publishedCount` (Herald-Cursor) covers what this node published; never ahead of Redis.
        state.withLock { state in
            if state.epoch == epoch { state.sequence = max(state.sequence, newest) }
        }
        if echoed { waitForEcho(epoch: epoch, sequence: newest) }
        return receipts
    }

    /// Waits (bounded) until the subscriber thread handed over the message at `sequence`.
    private func waitForEcho(epoch: UInt32, sequence: UInt64) {
        let done = DispatchSemaphore(value: 0)
        let arrived = state.withLock { state -> Bool in
            if state.handed.epoch == epoch, state.handed.sequence >= sequence { return true }
            state.waiters.append(EchoWaiter(epoch: epoch, sequence: sequence, done: done))
            return false
        }
        if arrived { return }
        if done.wait(timeout: .now() + .milliseconds(configuration.echoWaitMilliseconds)) == .timedOut {
            state.withLock { state in state.waiters.removeAll { $0.done === done } }
        }
    }

    // MARK: Subscribe

    public func subscribe(_ channels: [ChannelName], resume: ResumePoint) throws(BrokerError) -> SubscribeSnapshot {
        let added = state.withLock { state -> [ChannelName] in
            var added: [ChannelName] = []
            for channel in channels {
                state.channels[channel, default: ChannelState()].subscribers += 1
                if state.channels[channel]!.subscribers == 1 { added.append(channel) }
            }
            return added
        }
        if !added.isEmpty { subscriber.subscribe(added.map(pubsubName)) }
        let read: ReadResult
        do throws(BrokerError) {
            do {
                try subscriber.waitUntilSubscribed(channels.map(pubsubName), timeoutMilliseconds: configuration.client.callTimeoutMilliseconds)
            } catch {
                throw Self.brokerError(error)
            }
            let since: Int64
            switch resume {
            case .cursor(let cursor): since = Int64(clamping: cursor.sequence)
            case .fresh, .invalid: since = -1
            }
            read = try readChannels(channels, since: since, retained: true)
        } catch {
            unsubscribe(channels)
            throw error
        }
        // A channel new to this node starts its chain at the newest message read, and checks
        // the messages heard since its SUBSCRIBE against it.
        handoff.withLock { _ in
            let (broken, resetHandler) = state.withLock { state -> ([ChannelName: UInt64], BrokerResetHandler?) in
                state.sequence = max(state.sequence, read.sequence)
                var broken: [ChannelName: UInt64] = [:]
                for (index, channel) in channels.enumerated() {
                    guard var entry = state.channels[channel], entry.epoch == nil else { continue }
                    let chain = Self.chain(from: read.rows[index].last, heard: entry.heard)
                    entry.epoch = read.epoch
                    entry.last = chain.last
                    entry.heard = []
                    state.channels[channel] = entry
                    if let gap = chain.gap { broken[channel] = gap }
                }
                return (broken, state.reset)
            }
            for (channel, sequence) in broken.sorted(by: { $0.value < $1.value }) {
                let position = StreamCursor(epoch: read.epoch, sequence: sequence - 1)
                resetCount.add(1, ordering: .relaxed)
                logger.warning("redis broker: channels reset", ["channels": "1", "position": position.description])
                resetHandler?([channel], position)
            }
        }
        var from: UInt64?
        var reset: [ChannelName] = []
        switch resume {
        case .fresh:
            break
        case .cursor(let cursor) where cursor.epoch == read.epoch && cursor.sequence <= read.sequence:
            from = cursor.sequence
        case .cursor, .invalid:
            reset = channels
        }
        var replay: [ChannelMessage] = []
        var retained: [ChannelMessage] = []
        var baseline: [ChannelMessage] = []
        let now = clock.monotonicNanoseconds
        for (index, channel) in channels.enumerated() {
            let row = read.rows[index]
            let kept = row.retained.flatMap { $0.epoch == read.epoch ? $0.message(publishedAt: now) : nil }
            if let from {
                if row.isComplete(after: from, floor: read.floor) {
                    replay.append(contentsOf: row.frames.map { $0.message(publishedAt: now) })
                    if let kept, kept.sequence <= from { baseline.append(kept) }
                } else {
                    reset.append(channel)
                    if let kept { retained.append(kept) }
                }
            } else if let kept {
                retained.append(kept)
            }
        }
        if channels.count > 1, replay.count > 1 { replay.sort { $0.sequence < $1.sequence } }
        return SubscribeSnapshot(position: StreamCursor(epoch: read.epoch, sequence: from ?? read.sequence),
                                 replay: replay, reset: reset, retained: retained, baseline: baseline, since: read.sequence)
    }

    public func unsubscribe(_ channels: [ChannelName]) {
        let removed = state.withLock { state -> [ChannelName] in
            var removed: [ChannelName] = []
            for channel in channels {
                guard var entry = state.channels[channel], entry.subscribers > 0 else { continue }
                entry.subscribers -= 1
                if entry.subscribers == 0 {
                    state.channels[channel] = nil
                    removed.append(channel)
                } else {
                    state.channels[channel] = entry
                }
            }
            // A peak's buckets go back once it has passed (issue 17, Benchmarks/peak.py).
            state.channels.shrinkIfSparse()
            return removed
        }
        if !removed.isEmpty { subscriber.unsubscribe(removed.map(pubsubName)) }
    }

    // MARK: History and retained

    public func history(_ channel: ChannelName, after position: StreamCursor) throws(BrokerError) -> ChannelHistory {
        let read = try readChannels([channel], since: Int64(clamping: position.sequence), retained: false)
        guard position.epoch == read.epoch, position.sequence <= read.sequence,
              read.rows[0].isComplete(after: position.sequence, floor: read.floor) else {
            return ChannelHistory(messages: [], complete: false)
        }
        let now = clock.monotonicNanoseconds
        return ChannelHistory(messages: read.rows[0].frames.map { $0.message(publishedAt: now) }, complete: true)
    }

    public func retained(_ channel: ChannelName) throws(BrokerError) -> ChannelMessage? {
        let read = try readChannels([channel], since: -1, retained: true)
        guard let frame = read.rows[0].retained, frame.epoch == read.epoch else { return nil }
        return frame.message(publishedAt: clock.monotonicNanoseconds)
    }

    public func clearRetained(_ channel: ChannelName) throws(BrokerError) {
        _ = try brokerCall(RedisCommand([Array("DEL".utf8), Array(keys(channel)[2].utf8)]))
    }

    /// Redis expires history and retained messages itself; the node's own state holds only
    /// channels with subscribers.
    public func sweep() {}

    /// Deletes the app's channel keys (meta, history, retained) with SCAN + DEL, a page at a time,
    /// so Redis is never blocked by one long command.
    public func removeChannels(app: String) throws(BrokerError) {
        for kind in ["m", "h", "r"] {
            let pattern = Self.globEscaped(keyPrefix + kind + ":" + AppNamespace.prefix(app)) + "*"
            var cursor = "0"
            repeat {
                let reply = try brokerCall(RedisCommand([Array("SCAN".utf8), Array(cursor.utf8), Array("MATCH".utf8), Array(pattern.utf8),
                                                         Array("COUNT".utf8), Array("500".utf8)]))
                guard case .array(let parts) = reply, parts.count == 2, let next = parts[0].text, case .array(let found) = parts[1] else {
                    throw .unavailable("unexpected SCAN reply")
                }
                let keys = found.compactMap { reply -> [UInt8]? in if case .string(let bytes) = reply { bytes } else { nil } }
                if !keys.isEmpty { _ = try brokerCall(RedisCommand([Array("DEL".utf8)] + keys)) }
                cursor = next
            } while cursor != "0"
        }
    }

    /// `text` with Redis glob's special characters (`* ? [ ] \`) escaped.
    static func globEscaped(_ text: String) -> String {
        var out = ""
        for character in text {
            if "*?[]\\".contains(character) { out.append("\\") }
            out.append(character)
        }
        return out
    }

    // MARK: Reading

    private struct Row {
        /// The channel has a meta hash in the current epoch.
        var known: Bool
        /// Sequence before the channel's first message in this incarnation.
        var born: UInt64
        /// Newest sequence trimmed from its stream.
        var trimmed: UInt64
        /// Its newest message's sequence (0 when unknown).
        var last: UInt64
        var retained: BrokerFrame?
        var frames: [BrokerFrame]

        /// Whether the frames are every message of the channel after `since`: nothing trimmed
        /// after it, either the channel's current incarnation began at or before it or every
        /// earlier incarnation expired before it (`floor`), and the frames link up from `since`
        /// to the channel's newest message (each names the one before it), so a stream that lost
        /// entries the meta hash does not know of (evicted under a `maxmemory` policy, deleted
        /// by hand) is a gap rather than a silent skip.
        func isComplete(after since: UInt64, floor: UInt64) -> Bool {
            guard known else { return since >= floor }
            guard trimmed <= since && (since >= born || since >= floor) else { return false }
            var reached = since
            for frame in frames {
                // The first may follow any message up to `since`; each next one its predecessor.
                guard reached == since ? frame.previous <= since : frame.previous == reached else { return false }
                reached = frame.sequence
            }
            return last <= since || reached == last
        }
    }

    private struct ReadResult {
        var epoch: UInt32
        var sequence: UInt64
        var floor: UInt64
        var rows: [Row]
    }

    private func readChannels(_ channels: [ChannelName], since: Int64, retained: Bool) throws(BrokerError) -> ReadResult {
        var keys = [metaKey, ticksKey]
        for channel in channels { keys.append(contentsOf: self.keys(channel)) }
        let reply = try brokerCall(RedisCommand(script: BrokerScripts.read, keys: keys, arguments: [
            candidateEpoch, Array(String(since).utf8), Array(String(configuration.historyTTLSeconds).utf8),
            Array(String(configuration.historySize).utf8), retained ? [49] : [48],
        ]))
        guard let values = reply.elements, values.count == 3 + channels.count, let epochText = values[0].text,
              let epoch = UInt32(epochText, radix: 16), let sequence = values[1].int64, let floor = values[2].int64 else {
            throw .unavailable("unexpected history reply")
        }
        var rows: [Row] = []
        for value in values[3...] {
            guard let parts = value.elements, parts.count == 6 else { throw .unavailable("unexpected history reply") }
            let frames = (parts[5].elements ?? []).compactMap { element -> BrokerFrame? in
                if case .string(let bytes) = element { return BrokerFrame(bytes) }
                return nil
            }
            var retainedFrame: BrokerFrame?
            if case .string(let bytes) = parts[4] { retainedFrame = BrokerFrame(bytes) }
            rows.append(Row(known: parts[0].int64 == 1, born: UInt64(max(parts[1].int64 ?? 0, 0)),
                            trimmed: UInt64(max(parts[2].int64 ?? 0, 0)), last: UInt64(max(parts[3].int64 ?? 0, 0)),
                            retained: retainedFrame, frames: frames))
        }
        return ReadResult(epoch: epoch, sequence: UInt64(max(sequence, 0)), floor: UInt64(max(floor, 0)), rows: rows)
    }

    private struct Positions {
        var epoch: UInt32
        var sequence: UInt64
        var last: [UInt64]
    }

    private func readPositions(_ channels: [ChannelName]) throws(BrokerError) -> Positions {
        let keys = [metaKey, ticksKey] + channels.map { self.keys($0)[0] }
        let reply = try brokerCall(RedisCommand(script: BrokerScripts.positions, keys: keys, arguments: [candidateEpoch]))
        guard let values = reply.elements, values.count == 2 + channels.count, let epochText = values[0].text,
              let epoch = UInt32(epochText, radix: 16), let sequence = values[1].int64 else {
            throw .unavailable("unexpected position reply")
        }
        return Positions(epoch: epoch, sequence: UInt64(max(sequence, 0)),
                         last: values[2...].map { UInt64(max($0.int64 ?? 0, 0)) })
    }

    /// One PING through the command connection (its own backoff answers at once while Redis is
    /// known to be down).
    public func checkReachable() throws(BrokerError) {
        _ = try brokerCall(RedisCommand("PING"))
    }

    private func brokerCall(_ command: RedisCommand) throws(BrokerError) -> RedisReply {
        do {
            return try commander.call(command)
        } catch {
            throw Self.brokerError(error)
        }
    }

    static func brokerError(_ error: RedisError) -> BrokerError {
        switch error {
        case .timedOut: .timedOut
        // The commands were written (or being written) when the answer went missing.
        case .connectionLost, .unexpectedReply: .unconfirmed(error.description)
        default: .unavailable(error.description)
        }
    }

    // MARK: Live messages (subscriber thread)

    /// Hands a read's worth of live messages to the node in one call (resets in between, in
    /// order), checking each channel's chain and the epoch on the way.
    private func received(_ batch: [(channel: String, payload: [UInt8])]) {
        let now = clock.monotonicNanoseconds
        var frames: [BrokerFrame] = []
        frames.reserveCapacity(batch.count)
        for item in batch {
            if let frame = BrokerFrame(item.payload) {
                frames.append(frame)
            } else {
                logger.warning("redis broker: a message that is not a frame", ["channel": item.channel])
            }
        }
        guard let newest = frames.last else { return }
        handoff.withLock { _ in
            // What to do, in order: runs of messages, and resets between them.
            var steps: [(messages: [ChannelMessage], reset: (channels: [ChannelName], position: StreamCursor)?)] = []
            var run: [ChannelMessage] = []
            let (inbound, resetHandler) = state.withLock { state -> (BrokerInboundHandler?, BrokerResetHandler?) in
                for frame in frames {
                    var resets: [(channels: [ChannelName], position: StreamCursor)] = []
                    if frame.epoch != state.epoch {
                        // Redis lost its data (restart, flush): positions of the old epoch are void.
                        let void = Self.moveToEpoch(frame.epoch, &state)
                        if !void.isEmpty { resets.append((void, StreamCursor(epoch: frame.epoch, sequence: frame.sequence - 1))) }
                    }
                    state.sequence = max(state.sequence, frame.sequence)
                    if var entry = state.channels[frame.channel], entry.epoch == nil {
                        // Its first subscription here has not read history yet: checked then.
                        entry.heard.append((frame.sequence, frame.previous))
                        state.channels[frame.channel] = entry
                    } else if var entry = state.channels[frame.channel] {
                        if let last = entry.last, frame.sequence > last, frame.previous != last, frame.previous != 0 {
                            resets.append(([frame.channel], StreamCursor(epoch: frame.epoch, sequence: frame.sequence - 1)))
                        }
                        if frame.sequence > (entry.last ?? 0) { entry.last = frame.sequence }
                        state.channels[frame.channel] = entry
                    }
                    for reset in resets {
                        steps.append((run, reset))
                        run = []
                    }
                    run.append(frame.message(publishedAt: now))
                }
                steps.append((run, nil))
                return (state.inbound, state.reset)
            }
            for step in steps {
                if !step.messages.isEmpty { inbound?(step.messages) }
                if let reset = step.reset {
                    resetCount.add(UInt64(reset.channels.count), ordering: .relaxed)
                    logger.warning("redis broker: channels reset", ["channels": "\(reset.channels.count)", "position": reset.position.description])
                    resetHandler?(reset.channels, reset.position)
                }
            }
            // Only now are the messages on their loops' queues: a publish waiting for one may return.
            let released = state.withLock { state -> [DispatchSemaphore] in
                if state.handed.epoch != newest.epoch || state.handed.sequence < newest.sequence {
                    state.handed = (newest.epoch, newest.sequence)
                }
                var released: [DispatchSemaphore] = []
                state.waiters.removeAll { waiter in
                    guard waiter.epoch != state.handed.epoch || waiter.sequence <= state.handed.sequence else { return false }
                    released.append(waiter.done)
                    return true
                }
                return released
            }
            for semaphore in released { semaphore.signal() }
        }
    }

    /// Where the chain of a channel first subscribed on this node starts: at the newest message
    /// its history read found (`newestRead`, 0 for none), or past it at the newest message heard
    /// since the SUBSCRIBE.
    ///
    /// Messages heard meanwhile may be newer than the read (published after it) or older (the
    /// read saw them too, or a previous subscription's last messages still in flight). Starting
    /// at the read alone took the next message after a newer one heard for a gap: a `reset`
    /// after a replay that was complete (a resume on one node while another publishes).
    ///
    /// - Parameter heard: (sequence, the channel's previous sequence) of each message heard, in
    ///   arrival order.
    /// - Returns: the chain's newest sequence, and the sequence of the first message heard whose
    ///   previous message was neither read nor heard (a real gap: the channel's subscribers must
    ///   be reset before it), nil when none.
    static func chain(from newestRead: UInt64, heard: [(sequence: UInt64, previous: UInt64)]) -> (last: UInt64, gap: UInt64?) {
        var last = newestRead
        var gap: UInt64?
        for link in heard where link.sequence > last {
            // Previous 0: the channel began again (its history expired), as in `received`.
            if link.previous != last, link.previous != 0, gap == nil { gap = link.sequence }
            last = link.sequence
        }
        return (last, gap)
    }

    /// Adopts a new epoch: channels with subscribers positioned in another epoch are returned
    /// (they must be reset) and positioned in the new one with their chain unknown.
    private static func moveToEpoch(_ epoch: UInt32, _ state: inout State) -> [ChannelName] {
        state.epoch = epoch
        var void: [ChannelName] = []
        for (name, var entry) in state.channels where entry.epoch != epoch {
            if entry.subscribers > 0 { void.append(name) }
            entry.epoch = epoch
            entry.last = nil
            entry.suspect = nil
            entry.heard = []
            state.channels[name] = entry
        }
        return void.sorted()
    }

    // MARK: Position checks

    private func runPositionChecks() {
        while true {
            _ = checkWake.wait(timeout: .now() + .milliseconds(configuration.positionCheckMilliseconds))
            if state.withLock({ $0.closed }) { return }
            checkPositions(afterReconnect: false)
        }
    }

    /// Compares each subscribed channel's newest sequence in Redis with what this node received.
    /// After a reconnect a channel behind is lost at once (messages published while the
    /// connection was down never come); otherwise only when still behind at the next check
    /// (the message may just be in flight).
    func checkPositions(afterReconnect: Bool) {
        let channels = state.withLock { state in state.channels.filter { $0.value.subscribers > 0 }.map(\.key) }
        for start in stride(from: 0, to: max(channels.count, 1), by: 500) {
            let chunk = Array(channels[start..<min(start + 500, channels.count)])
            guard let positions = try? readPositions(chunk) else { return }
            handoff.withLock { _ in
                var resets: [(channels: [ChannelName], position: StreamCursor)] = []
                let resetHandler = state.withLock { state -> BrokerResetHandler? in
                    let position = StreamCursor(epoch: positions.epoch, sequence: positions.sequence)
                    state.sequence = positions.epoch == state.epoch ? max(state.sequence, positions.sequence) : positions.sequence
                    if positions.epoch != state.epoch {
                        let void = Self.moveToEpoch(positions.epoch, &state)
                        for (index, channel) in chunk.enumerated() { state.channels[channel]?.last = positions.last[index] }
                        if !void.isEmpty { resets.append((void, position)) }
                        return state.reset
                    }
                    var behind: [ChannelName] = []
                    for (index, channel) in chunk.enumerated() {
                        // A channel still waiting for its first read is positioned by it (`chain(from:heard:)`).
                        guard var entry = state.channels[channel], entry.subscribers > 0, entry.epoch != nil else { continue }
                        let newest = positions.last[index]
                        guard let last = entry.last else {
                            entry.last = newest
                            state.channels[channel] = entry
                            continue
                        }
                        if afterReconnect ? newest > last : (entry.suspect.map { last < $0 } ?? false) {
                            behind.append(channel)
                            entry.last = newest
                            entry.suspect = nil
                        } else {
                            entry.suspect = newest > last ? newest : nil
                        }
                        state.channels[channel] = entry
                    }
                    if !behind.isEmpty { resets.append((behind, position)) }
                    return state.reset
                }
                for reset in resets {
                    resetCount.add(UInt64(reset.channels.count), ordering: .relaxed)
                    logger.warning("redis broker: channels reset", ["channels": "\(reset.channels.count)", "position": reset.position.description])
                    resetHandler?(reset.channels, reset.position)
                }
            }
        }
    }
}
