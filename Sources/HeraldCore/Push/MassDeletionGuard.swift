import Synchronization

/// PU-5a: a configuration mistake (wrong `APNS_TOPIC`, a sandbox key in production, the wrong FCM
/// project) makes every token look dead. When most recent answers of one provider are the same
/// token-level rejection, deleting devices would wipe the registry; instead the guard trips:
/// those jobs are dead-lettered as `provider_misconfigured` and devices kept, until a send to that
/// provider succeeds again.
///
/// The guard is asked before **each** deletion (`allowDeletion`), with that rejection counted: it
/// trips as soon as more than `burst` of the recent answers are the same rejection and they are at
/// least `threshold` of the answers it has seen (up to `window`). So a wall of identical rejections
/// deletes at most `burst` devices per provider, while rejections scattered among deliveries (the
/// normal trickle of uninstalled apps) never trip it.
public final class MassDeletionGuard: Sendable {
    /// How many recent answers per provider are looked at, the share of one rejection that trips
    /// the guard, and how many alike may be deleted before the share is trusted.
    public struct Limits: Sendable {
        /// Answers remembered per provider.
        public var window: Int
        /// Share of the remembered answers (`0 < threshold ≤ 1`) that one rejection must reach to trip.
        public var threshold: Double
        /// Most devices deleted for one rejection before the guard may trip (a small sample proves
        /// nothing): the bound on what a misconfiguration can delete.
        public var burst: Int

        public init(window: Int = 20, threshold: Double = 0.5, burst: Int = 3) {
            precondition(window >= 2 && threshold > 0 && threshold <= 1 && burst >= 0 && burst < window)
            self.window = window
            self.threshold = threshold
            self.burst = burst
        }
    }

    /// What the guard says about one token rejection.
    public enum Verdict: Sendable, Equatable {
        /// Delete the device.
        case delete
        /// Keep the device and dead-letter the job. `justTripped`: this rejection tripped the
        /// guard (log it once, as an error); false while it was already tripped.
        case keep(justTripped: Bool)
    }

    private struct ProviderState {
        /// The last `window` answers: a rejection reason, or nil for any other answer. A ring once
        /// full (`next` is the oldest): only counts are read, never the order.
        var recent: [String?] = []
        var next = 0
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
        // In place: a copy out and back hashed the key twice and copied `recent` on every push.
        state.withLock { states in
            update(&states[provider, default: ProviderState()]) { s in
                push(nil, into: &s)
                if delivered { s.tripped = nil }
            }
        }
    }

    /// Records a token-level rejection and decides, before the deletion, whether the device may
    /// be deleted.
    /// - Returns: `.keep` while the guard is tripped (this answer included).
    public func verdict(provider: String, reason: String) -> Verdict {
        state.withLock { states in
            var s = states[provider] ?? ProviderState()
            push(reason, into: &s)
            var justTripped = false
            if s.tripped == nil {
                let same = s.recent.filter { $0 == reason }.count
                if same > limits.burst, Double(same) >= limits.threshold * Double(s.recent.count) {
                    s.tripped = reason
                    justTripped = true
                }
            }
            states[provider] = s
            return s.tripped == nil ? .delete : .keep(justTripped: justTripped)
        }
    }

    /// `verdict(provider:reason:) == .delete`.
    public func allowDeletion(provider: String, reason: String) -> Bool {
        verdict(provider: provider, reason: reason) == .delete
    }

    /// Records an answer that says the provider's credentials are wrong (Expo's receipts
    /// `InvalidCredentials` / `MismatchSenderId`: the app's APNs/FCM credentials at Expo, PU-8a):
    /// the provider shows as misconfigured (`trippedReason`) until a send to it is confirmed again.
    /// Devices are never deleted for it.
    ///
    /// - Returns: true when this answer put the provider into that state (log it once, as an error).
    @discardableResult
    public func recordMisconfiguration(provider: String, reason: String) -> Bool {
        state.withLock { states in
            var s = states[provider] ?? ProviderState()
            push(nil, into: &s)
            let justTripped = s.tripped == nil
            if justTripped { s.tripped = reason }
            states[provider] = s
            return justTripped
        }
    }

    /// The rejection that tripped the guard for `provider`, or nil (for /readyz and /metrics).
    public func trippedReason(provider: String) -> String? {
        state.withLock { $0[provider]?.tripped }
    }

    /// Every tripped guard whose key names a stored app (`apns@chat`, ADR 0006), with its reason,
    /// by key: /readyz and /metrics list them beside the environment's providers.
    public var trippedAppProviders: [(provider: String, reason: String)] {
        state.withLock { states in
            states.compactMap { key, s in key.contains("@") ? s.tripped.map { (key, $0) } : nil }.sorted { $0.provider < $1.provider }
        }
    }

    /// Forgets every key of a stored app (`apns@chat`, `expo@chat`…, ADR 0006): it was deleted.
    /// A deleted app can send nothing more that would clear a tripped guard, so it would show on
    /// `/readyz` and `/metrics` until a restart, and a new app of its id would start tripped.
    public func forgetApp(_ app: String) {
        state.withLock { states in states = states.filter { !$0.key.hasSuffix("@\(app)") } }
    }

    private func update(_ s: inout ProviderState, _ body: (inout ProviderState) -> Void) { body(&s) }

    /// Adds an answer to the window, in place of the oldest once it holds `limits.window`.
    private func push(_ entry: String?, into s: inout ProviderState) {
        let window = max(1, limits.window)
        if s.recent.count < window {
            s.recent.append(entry)
        } else {
            s.recent[s.next] = entry
            s.next = (s.next + 1) % window
        }
    }
}
