import Synchronization

/// A storing batch whose transaction outlived its callers' wait (`BoundedStorage`,
/// `StorageError.stalled`): the callers were answered 503 `storage_unavailable`, and the
/// transaction may still commit once the database moves again. When it does, its stored calls are
/// broadcast and planned at once, here, instead of by recovery up to 30 s later (a keyed retry
/// was answered 409 `idempotency_in_progress` all that time). The callers keep their 503; a retry
/// with the same idempotency key finds the stored call and replays its answer.
extension Notifier {
    /// What the two ends of one storing batch know, whichever comes first: the unit's end, told by
    /// the storage on its own thread (`StorageTransaction.whenEnded`, which a `BoundedStorage`
    /// passes through even after it answered the caller), and the callers' answer (the write's
    /// completion). The deadline sweep can answer a call between its commit and its completion,
    /// so either order happens.
    final class BatchFate: Sendable {
        private enum State {
            /// Neither end known yet.
            case open
            /// The unit committed with these results; the callers' answer has not come.
            case committed([Result<Stored, NotificationRefusal>])
            /// The callers were answered `stalled` before the unit ended.
            case stalled
            /// Nothing more to do: the late planning was handed on, or the answer was not a stall.
            case settled
        }

        private let state = Mutex(State.open)

        /// The unit committed with `results`. - Returns: them when its callers were already
        /// answered `stalled` (they are planned late), nil otherwise.
        func committed(_ results: [Result<Stored, NotificationRefusal>]) -> [Result<Stored, NotificationRefusal>]? {
            state.withLock { state in
                switch state {
                case .open:
                    state = .committed(results)
                    return nil
                case .stalled:
                    state = .settled
                    return results
                case .committed, .settled:
                    return nil
                }
            }
        }

        /// The callers got their answer; `stalled`: it was `StorageError.stalled`. - Returns: the
        /// results when the unit had committed before that answer (they are planned late).
        func answered(stalled: Bool) -> [Result<Stored, NotificationRefusal>]? {
            state.withLock { state in
                switch (state, stalled) {
                case (.open, true):
                    state = .stalled
                    return nil
                case (.committed(let results), true):
                    state = .settled
                    return results
                default:
                    state = .settled
                    return nil
                }
            }
        }
    }

    /// Whether a storing batch's completion is a `BoundedStorage` stall (its unit may still commit).
    static func isStall(_ result: Result<[Result<Stored, NotificationRefusal>], any Error>) -> Bool {
        guard case .failure(let error) = result, let storage = error as? StorageError, case .stalled = storage else { return false }
        return true
    }

    /// Steps 2-4 for the stored calls of a batch whose callers were answered 503 before its
    /// commit. Counted (`drain`) and their keys marked in flight before this returns, on the
    /// thread that learned of the commit; the rest runs on `afterCommit`.
    func planLate(_ calls: [Call], _ results: [Result<Stored, NotificationRefusal>]) {
        var late: [Planning] = []
        var keys: [String] = []
        for (call, result) in zip(calls, results) {
            guard case .success(.fresh(let stored, let skipped, let pending)) = result else { continue }
            let key = call.request.inFlightKey, log = self.log
            if let key { keys.append(key) }
            late.append(Planning(app: call.request.app, stored: stored, plan: call.request.plan, live: call.request.live,
                                 skipped: skipped, pending: pending) { [self] result in
                if let key { _ = keysInFlight.withLock { $0.remove(key) } }
                // Its caller has its 503; a failure here leaves the plan to recovery, as for any call.
                if case .failure(let deferred) = result {
                    log.error("planning pushes failed; they will be planned by recovery", ["error": "\(deferred.error)"])
                }
            })
        }
        guard !late.isEmpty else { return }
        planning.withLock { $0 += late.count }
        if !keys.isEmpty { keysInFlight.withLock { $0.formUnion(keys) } }
        log.warning("calls answered 503 after the storage wait were stored when the database moved again; planning their pushes now",
                    ["calls": String(late.count)])
        afterCommit.async { [self, late] in broadcastAndPlan(late) }
    }
}
