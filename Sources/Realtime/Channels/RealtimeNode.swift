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
    ///   - timeoutNanoseconds: the longest wait.
    ///   - done: called exactly once, on a loop thread or a dispatch thread.
    public func afterPendingDeliveries(timeoutNanoseconds: UInt64 = 1_000_000_000, _ done: @escaping @Sendable () -> Void) {
        let barrier = Barrier(count: group.loops.count, done)
        for loop in group.loops {
            loop.execute { barrier.arrive() }
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(timeoutNanoseconds)), execute: { barrier.expire() })
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
}
