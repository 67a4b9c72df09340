import Dispatch
import Synchronization

/// Why this process may not hold its node id.
public enum NodeIdentityError: Error, CustomStringConvertible {
    /// Another live instance holds the id: the start is refused (exit 3, ADR 0016).
    case held(nodeID: String, by: NodeHolder)
    /// The store could not answer the claim.
    case unavailable(nodeID: String, StorageError)

    public var description: String {
        switch self {
        case .held(let id, let holder):
            return "HERALD_NODE_ID '\(id)' is held by another live instance (\(holder.described)); "
                + "refusing to start: give each node its own HERALD_NODE_ID, or stop the other instance"
        case .unavailable(let id, let error):
            return "HERALD_NODE_ID '\(id)' could not be claimed: \(error)"
        }
    }
}

/// This process's hold on its node id (ADR 0016): claimed once at start, renewed by a heartbeat
/// every third of the window, given up at a graceful stop. The state machine:
///
/// - `unclaimed` → `acquire()` → `held`, or throws `.held` (another live instance) or
///   `.unavailable` (the store did not answer) and stays `unclaimed`, which never heartbeats.
/// - `held` → a heartbeat finds another instance holding the id → `taken(by:)` (logged at error
///   level; `/readyz` and `herald_node_id_conflict` show it) → a heartbeat that finds the id free or
///   stale again → `held`.
/// - `held` → heartbeats failing for the whole window since the last one written → `lapsed` (logged
///   once: another instance may take the id now) → a heartbeat written → `held`, or `taken`.
/// - any → `release(…)` → `released` (the record is deleted when this instance held it).
///
/// A holder whose process the probe sees gone (same machine) is replaced at once; any other waits
/// out the window. Times come from the injected clock; a heartbeat is `heartbeat()`, which the
/// timer of `start()` calls and tests call directly.
///
/// # Thread safety
/// Sendable: the state is behind a `Mutex`; the store is called outside it.
public final class NodeIdentityLease: Sendable {
    /// The window and the heartbeat.
    public struct Configuration: Sendable, Equatable {
        /// How old the holder's last heartbeat may be before another instance may take the id
        /// (`HERALD_NODE_LEASE_SECONDS` × 1000).
        public var staleAfterMilliseconds: Int64
        /// Between two heartbeats: a third of the window, so that two may fail before the hold lapses.
        public var heartbeatMilliseconds: Int64 { max(staleAfterMilliseconds / 3, 1) }

        public init(staleAfterMilliseconds: Int64 = 15_000) {
            self.staleAfterMilliseconds = staleAfterMilliseconds
        }
    }

    /// Where the hold stands.
    public enum Status: Sendable, Equatable {
        case unclaimed
        case held
        /// No heartbeat written for the whole window: another instance may take the id meanwhile.
        case lapsed
        /// Another live instance holds the id.
        case taken(by: NodeHolder)
        case released
    }

    public let instance: NodeInstance
    public let configuration: Configuration
    private let store: any NodeIdentityStore
    private let liveness: any ProcessLivenessProbe
    private let clock: any Clock
    private let log: Logger
    private let queue = DispatchQueue(label: "herald.node-identity")
    /// Resumed at once with no schedule (a source released while suspended crashes Dispatch);
    /// `start` schedules it. Dispatch sources are thread-safe.
    nonisolated(unsafe) private let timer: any DispatchSourceTimer

    private struct State {
        var status: Status = .unclaimed
        /// Monotonic time of the last heartbeat written (or of the claim).
        var renewedAt: UInt64 = 0
        /// Whether the last heartbeat failed (the first failure is logged, not each).
        var failing = false
    }
    private let state = Mutex(State())

    /// - Parameters:
    ///   - store: where ids are held (PostgreSQL).
    ///   - instance: this process.
    ///   - liveness: tells whether a holder's process is gone; `NoProcessLiveness` waits out every window.
    ///   - clock: monotonic time for the window as this process sees it; tests pass a `ManualClock`.
    ///   - log: the claim, the conflicts and the heartbeat's failures.
    public init(store: any NodeIdentityStore, instance: NodeInstance, configuration: Configuration = Configuration(),
                liveness: any ProcessLivenessProbe = NoProcessLiveness(), clock: any Clock = SystemClock(), log: Logger = .silent) {
        self.store = store
        self.instance = instance
        self.configuration = configuration
        self.liveness = liveness
        self.clock = clock
        self.log = log
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.resume()
    }

    /// Where the hold stands now.
    public var status: Status { state.withLock { $0.status } }

    /// The holder while another instance holds this node's id, else nil (`herald_node_id_conflict`).
    public var conflict: NodeHolder? {
        if case .taken(let holder) = status { return holder }
        return nil
    }

    /// `/readyz`'s problem while another instance holds this node's id, else nil.
    public var readinessProblem: String? {
        conflict.map { "node id '\(instance.nodeID)' is held by another instance: \($0.described)" }
    }

    /// Claims the id at start. Blocks until the store answers.
    /// - Throws: `NodeIdentityError.held` when another live instance holds it (its process alive,
    ///   or not known and its heartbeat within the window); `.unavailable` when the store failed.
    public func acquire() throws(NodeIdentityError) {
        let outcome: NodeClaimOutcome
        do {
            outcome = try claim()
        } catch {
            throw .unavailable(nodeID: instance.nodeID, error)
        }
        let now = clock.monotonicNanoseconds
        switch outcome {
        case .claimed:
            state.withLock { $0 = State(status: .held, renewedAt: now) }
        case .held(let holder):
            // Still unclaimed: a refused start must not heartbeat, or it would take the id later.
            throw .held(nodeID: instance.nodeID, by: holder)
        }
    }

    /// One heartbeat: renews the hold, or takes the id back when it is free or stale, or finds
    /// another instance holding it. Blocks until the store answers. Does nothing before
    /// `acquire()` succeeded or after `release`.
    /// - Returns: the status after it.
    @discardableResult
    public func heartbeat() -> Status {
        switch status {
        case .unclaimed, .released: return status
        case .held, .lapsed, .taken: break
        }
        let outcome: NodeClaimOutcome
        do {
            outcome = try claim()
        } catch {
            return failed(error)
        }
        let now = clock.monotonicNanoseconds
        let (before, wasFailing) = state.withLock { state -> (Status, Bool) in
            let before = (state.status, state.failing)
            guard state.status != .released else { return before }
            state.failing = false
            switch outcome {
            case .claimed:
                state.status = .held
                state.renewedAt = now
            case .held(let holder):
                state.status = .taken(by: holder)
            }
            return before
        }
        let id = instance.nodeID
        switch (before, outcome) {
        case (.released, _):
            return .released
        case (.taken, .claimed):
            log.warning("HERALD_NODE_ID is this instance's again: the other instance gave it up or stopped heartbeating",
                        ["node_id": id, "instance": instance.instanceID])
        case (.taken(let previous), .held(let holder)) where previous.instance == holder.instance:
            break
        case (_, .held(let holder)):
            log.error("HERALD_NODE_ID is held by another live instance; this node is not ready until the id is free (give each node its own HERALD_NODE_ID)",
                      ["node_id": id, "holder": holder.described, "instance": instance.instanceID])
        case (_, .claimed):
            if wasFailing || before == .lapsed {
                log.info("node id heartbeat written again", ["node_id": id])
            }
        }
        return status
    }

    /// Starts the heartbeat timer (every `configuration.heartbeatMilliseconds`, first one after
    /// that interval). Call after `acquire()`.
    public func start() {
        timer.setEventHandler { [weak self] in _ = self?.heartbeat() }
        let interval = Int(configuration.heartbeatMilliseconds)
        timer.schedule(deadline: .now() + .milliseconds(interval), repeating: .milliseconds(interval))
    }

    /// Stops the heartbeat and deletes the record when this instance holds the id, so that a
    /// restart claims it at once. Waits for the store at most `waitMilliseconds` (a stalled
    /// database must not hold up the shutdown: the record then goes stale after the window).
    /// - Returns: whether the record was deleted in time.
    @discardableResult
    public func release(waitMilliseconds: Int = 1_000) -> Bool {
        timer.cancel()
        // Released already: nothing to wait for, not even a heartbeat stuck on a stalled server.
        if status == .released { return false }
        let released = Mutex(false)
        let done = DispatchSemaphore(value: 0)
        queue.async { [self] in
            defer { done.signal() }
            let holding = state.withLock { state -> Bool in
                defer { state.status = .released }
                return state.status == .held || state.status == .lapsed
            }
            guard holding else { return }
            do {
                try store.release(instance)
                released.withLock { $0 = true }
            } catch {
                log.warning("node id not given up; a restart on another machine waits for it to go stale",
                            ["node_id": instance.nodeID, "error": "\(error)",
                             "stale_after_ms": String(configuration.staleAfterMilliseconds)])
            }
        }
        return done.wait(timeout: .now() + .milliseconds(waitMilliseconds)) == .success && released.withLock { $0 }
    }

    // MARK: Internals

    /// One claim; when it finds a holder whose process is gone, a second that replaces it.
    private func claim() throws(StorageError) -> NodeClaimOutcome {
        let window = configuration.staleAfterMilliseconds
        let first = try store.claim(instance, staleAfterMilliseconds: window, replacing: nil)
        guard case .held(let holder) = first, liveness.liveness(of: holder.instance) == .dead else { return first }
        let second = try store.claim(instance, staleAfterMilliseconds: window, replacing: holder.instance.instanceID)
        if second == .claimed {
            log.info("took over HERALD_NODE_ID from an instance whose process is gone",
                     ["node_id": instance.nodeID, "previous": holder.described])
        }
        return second
    }

    /// A heartbeat the store did not answer: logged once, and once more when the window passed.
    private func failed(_ error: StorageError) -> Status {
        let now = clock.monotonicNanoseconds
        let window = UInt64(configuration.staleAfterMilliseconds) * 1_000_000
        let (first, lapsedNow, status) = state.withLock { state -> (Bool, Bool, Status) in
            let first = !state.failing
            state.failing = true
            let lapsedNow = state.status == .held && now &- state.renewedAt >= window
            if lapsedNow { state.status = .lapsed }
            return (first, lapsedNow, state.status)
        }
        if first {
            log.warning("node id heartbeat failed; retrying", ["node_id": instance.nodeID, "error": "\(error)"])
        }
        if lapsedNow {
            log.error("node id heartbeat failing for the whole window: a node started now with this HERALD_NODE_ID may take it",
                      ["node_id": instance.nodeID, "stale_after_ms": String(configuration.staleAfterMilliseconds), "error": "\(error)"])
        }
        return status
    }
}
