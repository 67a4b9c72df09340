/// The realtime core of one process: its event loops, the per-loop hub shards, the broker that
/// feeds them and the presence store the transports report into. The API publishes through
/// `broker`; transports subscribe through `subscribe(_:loop:resume:)`.
import Dispatch
import HeraldCore
import Synchronization

public final class RealtimeNode: PublishPacer, Sendable {
    public let group: EventLoopGroup
    /// Publishes, history and retained messages (node-level; injected by the executable).
    public let broker: any Broker
    /// Hub shard of each loop, indexed like `group.loops`.
    public let hubs: [LoopHub]
    /// Who is connected and in the foreground (RT-7), and who received what (NO-2).
    public let presence: any PresenceStore
    /// Random per process: connection and request ids carry it, so ids minted by several nodes
    /// sharing one broker epoch (Redis) never collide.
    public let instanceTag = UInt32.random(in: 1...UInt32.max)
    /// Which loops want which channel; hands each inbound message to those loops.
    private let fanOut: LoopFanOut
    /// Transports that can end a session's connections; the server registers at start.
    private let sessionEnders = Mutex<[@Sendable (_ sid: String, _ app: String) -> Void]>([])
    /// Deliveries (one per subscriber of a message) a loop may have queued and not yet written
    /// before `isBehind` says publishers must wait.
    public let backlogLimit: Int
    private let appEnders = Mutex<[@Sendable (String, AppStreamEnd) -> Void]>([])
    /// Where `endSession` goes when the node is one of several (the control bus); nil in one process.
    private let sessionEndRelay = Mutex<(@Sendable (_ sid: String, _ app: String) -> Void)?>(nil)
    /// Times out `afterPendingDeliveries` barriers.
    private let watchdog = BarrierWatchdog()
    /// Sweeps done since start (`sweep()`).
    private let sweeps = Atomic<UInt64>(0)
    /// The server's counters, once it has started.
    private let snapshotSource = Mutex<(@Sendable (@escaping @Sendable (ServerSnapshot) -> Void) -> Void)?>(nil)

    /// Registers the node as `broker`'s inbound handler: every message the broker hands over is
    /// encoded once and queued on the loops that have subscribers for its channel.
    ///
    /// - Parameters:
    ///   - group: the event loops (not yet started is fine).
    ///   - broker: the node's broker (`MemoryBroker` in one process); nothing else may set its
    ///     inbound handler.
    ///   - presence: connection and session presence (`MemoryPresenceStore` in one process).
    ///   - backlogLimit: deliveries a loop may have queued before publishes wait for it
    ///     (`isBehind`).
    public init(group: EventLoopGroup, broker: any Broker, presence: any PresenceStore,
                backlogLimit: Int = RealtimeNode.defaultBacklogLimit) {
        self.group = group
        self.backlogLimit = backlogLimit
        self.broker = broker
        self.presence = presence
        let hubs = group.loops.map { LoopHub(loop: $0) }
        self.hubs = hubs
        let fanOut = LoopFanOut(hubs: hubs)
        self.fanOut = fanOut
        broker.setInboundHandler { messages in fanOut.deliver(messages) }
        broker.setResetHandler { channels, position in fanOut.reset(channels, position: position) }
    }

    /// Subscribes one connection of loop `loop` to `channels` and returns what it must be sent
    /// first. The caller then adds the connection to `hubs[loop]` with `snapshot.since`, in the
    /// same loop turn.
    ///
    /// Why nothing is lost or doubled between replay and live: the loop's interest is registered
    /// *before* the broker takes the snapshot, so every message published after the snapshot is
    /// queued on this loop's inbox — after the current turn, so after the hub entry exists.
    /// Messages that reach the loop but were published before the snapshot have a sequence at or
    /// below `since`, and the hub skips them for this connection: they are in the replay, or
    /// predate the subscription.
    ///
    /// - Important: Call on loop `loop`.
    /// - Throws: `BrokerError` from the broker; the loop's interest is then withdrawn again.
    public func subscribe(_ channels: [ChannelName], loop: Int, resume: ResumePoint) throws(BrokerError) -> SubscribeSnapshot {
        fanOut.register(channels, loop: loop)
        do {
            return try broker.subscribe(channels, resume: resume)
        } catch {
            fanOut.unregister(channels, loop: loop)
            throw error
        }
    }

    /// Withdraws one connection of loop `loop` from `channels` (after the hub removed it).
    public func unsubscribe(_ channels: [ChannelName], loop: Int) {
        guard !channels.isEmpty else { return }
        broker.unsubscribe(channels)
        fanOut.unregister(channels, loop: loop)
    }

    /// Loops with subscribers on `channel`, by index (tests).
    func loopsSubscribed(to channel: ChannelName) -> [Int] {
        fanOut.loops(subscribedTo: channel)
    }

    /// Closes every live connection of session `sid` (DV-4): SSE streams get
    /// `event: error {"error":"session_ended"}`, WebSockets close with 4001. In a cluster the
    /// relay sends it to every node (SC-1), which each call `endSessionHere`. Safe from any thread.
    /// Only app `app`'s connections of that `sid`: a session is named by its app and sid (ADR 0019).
    public func endSession(_ sid: String, app: String) {
        if let relay = sessionEndRelay.withLock({ $0 }) { relay(sid, app) } else { endSessionHere(sid, app: app) }
    }

    /// Closes every live connection of app `app`'s session `sid` on this node's loops.
    public func endSessionHere(_ sid: String, app: String) {
        for end in sessionEnders.withLock({ $0 }) { end(sid, app) }
    }

    /// Closes every live connection of app `app` on every loop, saying why (`AppStreamEnd`).
    /// Safe from any thread.
    public func endApp(_ app: String, reason: AppStreamEnd = .deleted) {
        for end in appEnders.withLock({ $0 }) { end(app, reason) }
    }

    /// Registers a transport's way of ending an app's connections.
    public func onEndApp(_ end: @escaping @Sendable (String, AppStreamEnd) -> Void) {
        appEnders.withLock { $0.append(end) }
    }

    /// Sends `endSession` through `relay` (a cluster's control bus) instead of ending locally;
    /// the relay must end the session here too (directly when it cannot reach the others).
    public func relaySessionEnds(_ relay: @escaping @Sendable (_ sid: String, _ app: String) -> Void) {
        sessionEndRelay.withLock { $0 = relay }
    }

    /// Calls `done` once every loop has run the work queued on it before this call and flushed
    /// the stream writes that work queued (`LoopHub.afterWrites`), so every message published
    /// before it has been written to its subscribers' sockets (or waits for a full one): the push
    /// planner then asks presence who received it (NO-2). A loop that does not answer within
    /// `timeoutNanoseconds` (stopped, or wedged) does not hold the caller forever: `done` runs
    /// then, and the planner treats that loop's connections as not having received the message.
    ///
    /// - Parameters:
    ///   - timeoutNanoseconds: the longest wait, give or take `BarrierWatchdog.tickNanoseconds`.
    ///   - done: called exactly once, on a loop thread or a dispatch thread.
    public func afterPendingDeliveries(timeoutNanoseconds: UInt64 = 1_000_000_000, _ done: @escaping @Sendable () -> Void) {
        let barrier = Barrier(count: group.loops.count, done)
        watchdog.watch(barrier, timeoutNanoseconds: timeoutNanoseconds)
        for hub in hubs {
            hub.loop.execute { hub.afterWrites { barrier.arrive() } }
        }
    }

    /// The default `backlogLimit`: about a hundred messages to 10,000 subscribers on one loop. A
    /// loop writes everything queued in its inbox with one `send` per subscriber, so a backlog
    /// that builds while it writes costs it one more pass, not one per message: normal bursts stay
    /// under this, and pacing stays out of their way (their writes stay coalesced). It catches a
    /// loop that stops keeping up at all (starved of CPU, or wedged), so publishers cannot queue
    /// work on it without bound.
    public static let defaultBacklogLimit = 1 << 20

    /// True when some loop has more than `backlogLimit` deliveries queued and not yet written: the
    /// loops are behind the publishers. A publish route then answers only once every loop has
    /// written what it was handed (`afterPendingDeliveries`), so a publisher that waits for its
    /// answers cannot queue work faster than the loops write it, and a message's latency stays
    /// bounded by the backlog instead of growing with the burst (issue 17). Safe from any thread;
    /// a snapshot, not a lock.
    public var isBehind: Bool {
        hubs.contains { $0.queuedDeliveries.load(ordering: .relaxed) > backlogLimit }
    }

    /// Registers a transport's way of ending a session's connections.
    public func onEndSession(_ end: @escaping @Sendable (_ sid: String, _ app: String) -> Void) {
        sessionEnders.withLock { $0.append(end) }
    }

    /// Drops what has aged out: the broker's expired history and idle channels, and presence's
    /// idle sessions (in a cluster also the connections of nodes not heard from within their TTL).
    /// The server calls it every 5 s, off the hot path; safe from any thread.
    public func sweep() {
        broker.sweep()
        presence.sweep()
        sweeps.add(1, ordering: .relaxed)
    }

    /// Sweeps finished since start (`herald_presence_sweeps_total`): a test or an operator can
    /// tell that one ran after a moment, e.g. that a dead node's connections are forgotten.
    public var sweepsDone: UInt64 { sweeps.load(ordering: .relaxed) }

    /// The loops' counters summed (`/metrics`, `/readyz`); an empty snapshot before the server starts.
    public func snapshot(_ done: @escaping @Sendable (ServerSnapshot) -> Void) {
        if let source = snapshotSource.withLock({ $0 }) { source(done) } else { done(ServerSnapshot()) }
    }

    /// Registers where snapshots come from (the HTTP server, at start).
    public func onSnapshot(_ source: @escaping @Sendable (@escaping @Sendable (ServerSnapshot) -> Void) -> Void) {
        snapshotSource.withLock { $0 = source }
    }
}

/// The node's per-loop fan-out: channel → subscriber count on each loop, and the hand-off of
/// inbound messages to the loops that want them (DESIGN: the fan-out stays in Realtime, not in
/// the broker).
///
/// # Thread safety
/// `interest` is guarded by its mutex; `deliver` is called by the broker (for the memory broker
/// with its lock held, which fixes the order in which loops' inboxes see messages).
private final class LoopFanOut: Sendable {
    private let hubs: [LoopHub]
    private let interest = Mutex<[ChannelName: LoopCounts]>([:])

    init(hubs: [LoopHub]) {
        self.hubs = hubs
    }

    func register(_ channels: [ChannelName], loop: Int) {
        interest.withLock { interest in
            for channel in channels { interest[channel, default: LoopCounts()][loop] += 1 }
        }
    }

    func unregister(_ channels: [ChannelName], loop: Int) {
        interest.withLock { interest in
            for channel in channels {
                guard var counts = interest[channel], counts[loop] > 0 else { continue }
                counts[loop] -= 1
                interest[channel] = counts.isZero ? nil : counts
            }
            interest.shrinkIfSparse()
        }
    }

    func loops(subscribedTo channel: ChannelName) -> [Int] {
        interest.withLock { interest in
            guard let counts = interest[channel] else { return [] }
            return hubs.indices.filter { counts[$0] > 0 }
        }
    }

    /// Queues a reset of `channels` on each loop with subscribers of any of them, after the
    /// messages already queued there (the broker calls this in order with `deliver`).
    func reset(_ channels: [ChannelName], position: StreamCursor) {
        let loopCount = hubs.count
        var perLoop = Array(repeating: [ChannelName](), count: loopCount)
        interest.withLock { interest in
            for channel in channels {
                guard let counts = interest[channel] else { continue }
                for loop in 0..<loopCount where counts[loop] > 0 { perLoop[loop].append(channel) }
            }
        }
        for loop in 0..<loopCount where !perLoop[loop].isEmpty {
            let hub = hubs[loop]
            let names = perLoop[loop]
            hub.loop.execute { hub.reset(names, position: position) }
        }
    }

    /// Encodes each message that some loop wants (once, here, not per subscriber) and queues the
    /// messages on each such loop in the order given, so per-channel order holds on every loop.
    /// Each loop's `queuedDeliveries` grows by its subscriber count of every message it is handed
    /// until it has written them.
    func deliver(_ messages: [ChannelMessage]) {
        let loopCount = hubs.count
        var perLoop = Array(repeating: [ChannelMessage](), count: loopCount)
        var work = Array(repeating: 0, count: loopCount)
        var routed: [ChannelMessage] = []
        routed.reserveCapacity(messages.count)
        interest.withLock { interest in
            for message in messages {
                guard let counts = interest[message.channel] else { continue }
                routed.append(message)
                for loop in 0..<loopCount where counts[loop] > 0 {
                    perLoop[loop].append(message)
                    work[loop] += counts[loop]
                }
            }
        }
        for message in routed { _ = message.encoded }
        for loop in 0..<loopCount where !perLoop[loop].isEmpty {
            let hub = hubs[loop]
            let batch = perLoop[loop]
            let deliveries = work[loop]
            hub.queuedDeliveries.add(deliveries, ordering: .relaxed)
            hub.loop.execute {
                hub.deliver(batch)
                hub.afterWrites { hub.queuedDeliveries.subtract(deliveries, ordering: .relaxed) }
            }
        }
    }
}

/// Counts loops down to zero, then runs its action once (or at expiry, whichever is first).
private final class Barrier: Sendable {
    private let state: Mutex<(remaining: Int, action: (@Sendable () -> Void)?)>

    init(count: Int, _ action: @escaping @Sendable () -> Void) {
        state = Mutex((count, action))
    }

    func arrive() {
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            state.remaining -= 1
            guard state.remaining <= 0 else { return nil }
            defer { state.action = nil }
            return state.action
        }
        action?()
    }

    func expire() {
        state.withLock { state -> (@Sendable () -> Void)? in
            defer { state.action = nil }
            return state.action
        }?()
    }

    /// Its action ran (every loop arrived, or it expired).
    var isDone: Bool { state.withLock { $0.action == nil } }
}

/// Expires the barriers whose loops did not all arrive in time, with one timer for all of them.
/// A dispatch timer per barrier (one per published batch at the choke point) kept libdispatch's
/// manager thread waking thousands of times a second, for timeouts that almost never fire.
private final class BarrierWatchdog: Sendable {
    /// How often waiting barriers are checked: a timeout fires up to this much late.
    static let tickNanoseconds: UInt64 = 50_000_000

    /// Barriers not known to be done, with their deadlines (uptime ns); whether a tick is queued.
    private let state = Mutex<(waiting: [(deadline: UInt64, barrier: Barrier)], ticking: Bool)>(([], false))
    private let queue = DispatchQueue(label: "herald.barrier-watchdog")

    func watch(_ barrier: Barrier, timeoutNanoseconds: UInt64) {
        let deadline = DispatchTime.now().uptimeNanoseconds &+ timeoutNanoseconds
        let start = state.withLock { state -> Bool in
            state.waiting.append((deadline, barrier))
            defer { state.ticking = true }
            return !state.ticking
        }
        if start { scheduleTick() }
    }

    private func scheduleTick() {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(Self.tickNanoseconds))) { [self] in tick() }
    }

    /// Drops the barriers that are done, expires those past their deadline, and ticks again
    /// while any is left.
    private func tick() {
        let now = DispatchTime.now().uptimeNanoseconds
        let (expired, again) = state.withLock { state -> ([Barrier], Bool) in
            var expired: [Barrier] = []
            state.waiting.removeAll { entry in
                if entry.barrier.isDone { return true }
                guard entry.deadline <= now else { return false }
                expired.append(entry.barrier)
                return true
            }
            state.ticking = !state.waiting.isEmpty
            return (expired, state.ticking)
        }
        for barrier in expired { barrier.expire() }
        if again { scheduleTick() }
    }
}

/// Back-pressure for publish routes (issue 17): whether the loops are behind, and a barrier to
/// wait for them. `RealtimeNode` is the one in the server; tests may answer at once.
public protocol PublishPacer: DeliveryBarrier {
    /// True when a publish just made should be answered only after `afterPendingDeliveries`.
    var isBehind: Bool { get }
}

/// Why all of an app's streams end (`RealtimeNode.endApp`).
public enum AppStreamEnd: Sendable, Equatable {
    /// The app was deleted (AP-3): its streams stop for good, like an ended session's. SSE
    /// streams get `event: error {"error":"app_deleted"}`, WebSockets close with 4001.
    case deleted
    /// The app's access-token settings changed (a secret retired, keys replaced): the tokens the
    /// streams were opened with may no longer verify, so they end as at `exp`, `token_expired`
    /// (WebSocket 4003), and clients reconnect with a fresh token and their last id.
    case tokensChanged
}
