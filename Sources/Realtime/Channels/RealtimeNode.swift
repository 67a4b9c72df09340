/// The realtime core of one process: its event loops, the per-loop hub shards and the broker
/// that feeds them. The API publishes through `broker`; transports subscribe through it.
import Dispatch
import Synchronization

public final class RealtimeNode: Sendable {
    public let group: EventLoopGroup
    public let broker: any Broker
    /// Hub shard of each loop, indexed like `group.loops`.
    public let hubs: [LoopHub]
    /// Who is connected and in the foreground (RT-7).
    public let presence: Presence
    /// Transports that can end a session's connections; the server registers at start.
    private let sessionEnders = Mutex<[@Sendable (String) -> Void]>([])
    /// Times out `afterPendingDeliveries` barriers.
    private let watchdog = BarrierWatchdog()
    /// The server's counters, once it has started.
    private let snapshotSource = Mutex<(@Sendable (@escaping @Sendable (ServerSnapshot) -> Void) -> Void)?>(nil)

    /// - Parameters:
    ///   - group: the event loops (not yet started is fine).
    ///   - historyLimits: per-channel ring bounds (RT-5).
    ///   - epoch: cursor epoch; random per start unless a test pins it.
    ///   - presence: connection and session presence; its lease is `HERALD_FOREGROUND_LEASE_SECONDS`.
    public init(group: EventLoopGroup, historyLimits: MemoryBroker.Limits, presence: Presence = Presence(),
                epoch: UInt32 = UInt32.random(in: 1...UInt32.max)) {
        self.group = group
        self.presence = presence
        let hubs = group.loops.map { LoopHub(loop: $0) }
        self.hubs = hubs
        self.broker = MemoryBroker(epoch: epoch, loopCount: hubs.count, limits: historyLimits) { loop, messages in
            let hub = hubs[loop]
            hub.loop.execute { hub.deliver(messages) }
        }
    }

    /// Closes every live connection of session `sid` on every loop (DV-4): SSE streams get
    /// `event: error {"error":"session_ended"}`, WebSockets close with 4001. Safe from any thread.
    public func endSession(_ sid: String) {
        for end in sessionEnders.withLock({ $0 }) { end(sid) }
    }

    /// Calls `done` once every loop has run the work queued on it before this call, so every
    /// message published before it has been written to (or queued for) its subscribers: the push
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
        for loop in group.loops {
            loop.execute { barrier.arrive() }
        }
    }

    /// Registers a transport's way of ending a session's connections.
    public func onEndSession(_ end: @escaping @Sendable (String) -> Void) {
        sessionEnders.withLock { $0.append(end) }
    }

    /// The loops' counters summed (`/metrics`, `/readyz`); an empty snapshot before the server starts.
    public func snapshot(_ done: @escaping @Sendable (ServerSnapshot) -> Void) {
        if let source = snapshotSource.withLock({ $0 }) { source(done) } else { done(ServerSnapshot()) }
    }

    /// Registers where snapshots come from (the HTTP server, at start).
    public func onSnapshot(_ source: @escaping @Sendable (@escaping @Sendable (ServerSnapshot) -> Void) -> Void) {
        snapshotSource.withLock { $0 = source }
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
