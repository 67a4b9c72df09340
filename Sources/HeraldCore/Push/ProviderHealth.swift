import Synchronization

/// OP-3: whether each provider answers at all. A provider that accepts connections (even TLS) and
/// never answers, refuses connections or fails TLS looks fine to the mass-deletion guard
/// (`MassDeletionGuard`, which reads answers) while every push times out and is retried; this
/// keeps, per provider and app (the guard's keys: `apns`, `apns@chat`, ADR 0006), the requests
/// that ended without an answer since the last answer.
///
/// A provider is **degraded** once `Limits.failures` requests in a row ended at the transport
/// (no answer by the send deadline, connection refused, TLS failure: `PushClassification
/// .isUnanswered`), with the first one's reason and time; the first answer of any kind (a
/// delivery, a rejection, a 5xx: the provider is there) makes it healthy again. Pushes dropped
/// unsent at their send-by deadline (ADR 0008) are neither: they never reached the provider.
/// `/readyz` and `/metrics` show it; it does not make the node unready (docs/operations.md).
///
/// Times are passed in (unix ms of the worker's clock), so tests drive it without sleeping.
public final class ProviderHealth: Sendable {
    /// When a run of unanswered requests counts as a degraded provider.
    public struct Limits: Sendable {
        /// Requests in a row without an answer before the provider shows as degraded (≥ 1): one
        /// timeout is a lost packet; several with none answered between is a provider not there.
        public var failures: Int

        public init(failures: Int = 3) {
            precondition(failures >= 1)
            self.failures = failures
        }
    }

    /// A degraded provider, as `/readyz` shows it.
    public struct Degradation: Sendable, Equatable {
        /// The first unanswered request's reason (`transport_error: timeout`, `provider_unreachable: …`).
        public var reason: String
        /// Unix ms of the first request of the run that got no answer: since when nothing answered.
        public var sinceMilliseconds: Int64
        /// Requests without an answer since then.
        public var failures: Int
    }

    /// What one recorded request changed, for a log line on each change.
    public enum Change: Sendable, Equatable {
        /// Nothing to tell.
        case none
        /// This request made the provider degraded.
        case degraded(Degradation)
        /// This answer ended a degradation (which lasted since its `sinceMilliseconds`).
        case recovered(Degradation)
    }

    private struct Run {
        var reason: String
        var since: Int64
        var failures: Int
    }

    private let limits: Limits
    private let runs = Mutex<[String: Run]>([:])
    /// `runs.count`, written under the lock: an answer while every provider answers (every push of
    /// a healthy node) reads it instead of taking the lock and hashing its key.
    private let runCount = Atomic<Int>(0)

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Records a request that ended without an answer at `nowMilliseconds`.
    /// - Parameter provider: the guard's key (`apns`, `apns@chat`).
    public func recordUnanswered(provider: String, reason: String, atMilliseconds nowMilliseconds: Int64) -> Change {
        runs.withLock { runs in
            var run = runs[provider] ?? Run(reason: reason, since: nowMilliseconds, failures: 0)
            run.failures += 1
            runs[provider] = run
            runCount.store(runs.count, ordering: .relaxed)
            return run.failures == limits.failures ? .degraded(Self.degradation(run)) : .none
        }
    }

    /// Records an answer of the provider (any HTTP status): the run without answers ends.
    public func recordAnswer(provider: String) -> Change {
        // An answer racing a failure of another thread has no order to keep: either is first.
        guard runCount.load(ordering: .relaxed) > 0 else { return .none }
        return runs.withLock { runs in
            guard let run = runs.removeValue(forKey: provider) else { return .none }
            runCount.store(runs.count, ordering: .relaxed)
            return run.failures >= limits.failures ? .recovered(Self.degradation(run)) : .none
        }
    }

    /// The provider's degradation, or nil while it answers (`/readyz`, `/metrics`).
    public func degradation(provider: String) -> Degradation? {
        runs.withLock { runs in
            guard let run = runs[provider], run.failures >= limits.failures else { return nil }
            return Self.degradation(run)
        }
    }

    /// Every degraded key that names a stored app (`apns@chat`, ADR 0006), sorted by key: `/readyz`
    /// and `/metrics` list them beside the environment's providers.
    public var degradedAppProviders: [(provider: String, degradation: Degradation)] {
        runs.withLock { runs in
            runs.compactMap { key, run in
                key.contains("@") && run.failures >= limits.failures ? (key, Self.degradation(run)) : nil
            }.sorted { $0.provider < $1.provider }
        }
    }

    /// Forgets every key of a stored app (`apns@chat`, ADR 0006): it was deleted, and nothing it
    /// sends any more could show it answering again.
    public func forgetApp(_ app: String) {
        runs.withLock { runs in
            runs = runs.filter { !$0.key.hasSuffix("@\(app)") }
            runCount.store(runs.count, ordering: .relaxed)
        }
    }

    private static func degradation(_ run: Run) -> Degradation {
        Degradation(reason: run.reason, sinceMilliseconds: run.since, failures: run.failures)
    }
}
