import Synchronization

/// PU-5a: a configuration mistake (wrong `APNS_TOPIC`, a sandbox key in production, the wrong FCM
/// project) makes every token look dead. When most recent answers of one provider are the same
/// token-level rejection, deleting devices would wipe the registry; instead the guard trips:
/// those jobs are dead-lettered as `provider_misconfigured` and devices kept, until a send to that
/// provider succeeds again.
public final class MassDeletionGuard: Sendable {
    /// How many recent answers per provider are looked at, and the share that trips the guard.
    public struct Limits: Sendable {
        public var window: Int
        public var threshold: Double
        public init(window: Int = 20, threshold: Double = 0.5) {
            precondition(window >= 2 && threshold > 0 && threshold <= 1)
            self.window = window
            self.threshold = threshold
        }
    }

    private struct ProviderState {
        var recent: [String?] = []   // rejection reason, or nil for any other answer
        var tripped: String?         // the reason that tripped it
    }

    private let limits: Limits
    private let state = Mutex<[String: ProviderState]>([:])

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Records an answer that was not a token rejection (delivered, retried…). A delivery resets
    /// a tripped guard.
    public func recordOther(provider: String, delivered: Bool) {
        state.withLock { states in
            var s = states[provider] ?? ProviderState()
            push(nil, into: &s)
            if delivered { s.tripped = nil }
            states[provider] = s
        }
    }

    /// Records a token-level rejection and says whether the device may be deleted.
    /// - Returns: false while the guard is tripped (this answer included).
    public func allowDeletion(provider: String, reason: String) -> Bool {
        state.withLock { states in
            var s = states[provider] ?? ProviderState()
            push(reason, into: &s)
            if s.tripped == nil, s.recent.count >= limits.window / 2 {
                let same = s.recent.filter { $0 == reason }.count
                if Double(same) >= limits.threshold * Double(limits.window) { s.tripped = reason }
            }
            states[provider] = s
            return s.tripped == nil
        }
    }

    /// The rejection that tripped the guard for `provider`, or nil (for /readyz and /metrics).
    public func trippedReason(provider: String) -> String? {
        state.withLock { $0[provider]?.tripped }
    }

    private func push(_ entry: String?, into s: inout ProviderState) {
        s.recent.append(entry)
        if s.recent.count > limits.window { s.recent.removeFirst(s.recent.count - limits.window) }
    }
}
