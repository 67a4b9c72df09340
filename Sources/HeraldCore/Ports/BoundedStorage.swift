import Dispatch
import Synchronization

/// A `Storage` whose callers wait a bounded time: a unit of work that has not answered
/// `waitMilliseconds` after it was submitted (`probeWaitMilliseconds` for `probeWrite`) is
/// answered `StorageError.unavailable` (routes: 503 `storage_unavailable`) while it stays queued
/// or running in the storage underneath. A stalled database (a PostgreSQL server stopped or
/// frozen, a SQLite volume frozen so its writer sits in `write()`) then costs callers the bound,
/// not the stall.
///
/// What such a call did is unknown to its caller: a write may still commit once the storage
/// moves again (its late result is dropped). Callers treat it as a call that broke
/// mid-transaction: a retry with the same idempotency key is safe (it replays the stored call or
/// runs it once). What the unit's body kept with `StorageTransaction.whenEnded` still runs when
/// the unit ends: that is how the Notifier plans a call stored that way at its late commit.
///
/// Overdue calls are found by `expireOverdue()`, which a timer calls every `sweepMilliseconds`;
/// a test leaves the timer off and calls it after moving a `ManualClock`.
///
/// # Thread safety
/// Sendable: the pending calls are behind a mutex; completions run on the storage's thread, or
/// on the timer's queue for an overdue call. Each completion is called exactly once.
public final class BoundedStorage: Storage {
    /// The storage the work runs on.
    public let base: any Storage
    /// The base's: an overdue caller is answered, but its unit still runs in the base's order.
    public var pushAudience: PushAudienceChange? { base.pushAudience }
    public var pushRotations: PushJobRotation.Count { base.pushRotations }
    /// The base's: the units still run there, in its writer's order.
    public var jobClaimHorizon: JobClaimHorizon? { base.jobClaimHorizon }
    /// How long a `read` or `write` caller waits, in milliseconds.
    public let waitMilliseconds: Int
    /// How long a `probeWrite` caller (readiness) waits, in milliseconds.
    public let probeWaitMilliseconds: Int

    private struct Pending {
        let deadline: UInt64
        let waitMilliseconds: Int
        let fail: @Sendable (any Error) -> Void
    }

    private struct State {
        var nextID: UInt64 = 0
        var pending: [UInt64: Pending] = [:]
    }

    private let clock: any Clock
    private let state = Mutex(State())
    /// Set once in `init`; a dispatch source is safe to cancel from any thread.
    nonisolated(unsafe) private let timer: (any DispatchSourceTimer)?

    /// - Parameters:
    ///   - base: the storage the work runs on.
    ///   - waitMilliseconds: a `read`/`write` caller's bound (at least 1).
    ///   - probeWaitMilliseconds: a `probeWrite` caller's bound (at least 1).
    ///   - clock: monotonic time for the deadlines.
    ///   - sweepMilliseconds: how often overdue calls are looked for; nil: never by itself (tests
    ///     call `expireOverdue()`).
    public init(_ base: any Storage, waitMilliseconds: Int, probeWaitMilliseconds: Int = 2_000,
                clock: any Clock = SystemClock(), sweepMilliseconds: Int? = 100) {
        self.base = base
        self.waitMilliseconds = max(1, waitMilliseconds)
        self.probeWaitMilliseconds = max(1, probeWaitMilliseconds)
        self.clock = clock
        if let sweepMilliseconds {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "herald.storage.deadlines"))
            timer.schedule(deadline: .now() + .milliseconds(sweepMilliseconds), repeating: .milliseconds(sweepMilliseconds),
                           leeway: .milliseconds(sweepMilliseconds / 2))
            self.timer = timer
            timer.setEventHandler { [weak self] in _ = self?.expireOverdue() }
            timer.resume()
        } else {
            timer = nil
        }
    }

    deinit { timer?.cancel() }

    /// Calls submitted and not answered yet (neither by the storage nor as overdue).
    public var pendingCount: Int { state.withLock { $0.pending.count } }

    /// Answers every call past its deadline `StorageError.unavailable`; their late results will
    /// be dropped. - Returns: how many were answered.
    @discardableResult
    public func expireOverdue() -> Int {
        expire(waitingAtLeastMilliseconds: nil)
    }

    /// Answers at once every call that has waited at least `milliseconds` (shutdown: a call
    /// stuck on a stalled database gets its 503 before the connections close, not a reset).
    /// - Returns: how many were answered.
    @discardableResult
    public func expireCalls(waitingAtLeastMilliseconds milliseconds: Int) -> Int {
        expire(waitingAtLeastMilliseconds: milliseconds)
    }

    private func expire(waitingAtLeastMilliseconds: Int?) -> Int {
        let now = clock.monotonicNanoseconds
        let overdue = state.withLock { state -> [Pending] in
            var overdue: [Pending] = []
            for (id, call) in state.pending where isDue(call, now: now, waitingAtLeastMilliseconds: waitingAtLeastMilliseconds) {
                overdue.append(call)
                state.pending[id] = nil
            }
            return overdue
        }
        for call in overdue {
            call.fail(StorageError.stalled(waitMilliseconds: call.waitMilliseconds))
        }
        return overdue.count
    }

    private func isDue(_ call: Pending, now: UInt64, waitingAtLeastMilliseconds: Int?) -> Bool {
        if call.deadline <= now { return true }
        guard let waitingAtLeastMilliseconds else { return false }
        let submitted = call.deadline &- UInt64(call.waitMilliseconds) * 1_000_000
        return now &- submitted >= UInt64(max(waitingAtLeastMilliseconds, 0)) * 1_000_000
    }

    // MARK: Storage

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                                   completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        base.write(body, completion: tracked(completion, waitMilliseconds: waitMilliseconds))
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                                  completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        base.read(body, completion: tracked(completion, waitMilliseconds: waitMilliseconds))
    }

    public func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        try waitForCompletion { self.write(body, completion: $0) }
    }

    public func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        try waitForCompletion { self.read(body, completion: $0) }
    }

    public func probeWrite(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        base.probeWrite(completion: tracked(completion, waitMilliseconds: probeWaitMilliseconds))
    }

    // MARK: Internals

    /// `completion`, registered with its deadline; the storage's answer goes through only while
    /// the call is still pending.
    private func tracked<T>(_ completion: @escaping @Sendable (Result<T, any Error>) -> Void,
                            waitMilliseconds: Int) -> @Sendable (Result<T, any Error>) -> Void {
        let deadline = clock.monotonicNanoseconds &+ UInt64(waitMilliseconds) * 1_000_000
        let id = state.withLock { state -> UInt64 in
            let id = state.nextID
            state.nextID &+= 1
            state.pending[id] = Pending(deadline: deadline, waitMilliseconds: waitMilliseconds, fail: { completion(.failure($0)) })
            return id
        }
        return { [self] result in
            let stillPending = state.withLock { $0.pending.removeValue(forKey: id) != nil }
            if stillPending { completion(result) }
        }
    }

}
