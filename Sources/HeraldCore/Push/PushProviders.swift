import Synchronization

/// The push providers of this process, by id: which adapters the build has, which of them have
/// credentials, and the one place a push is routed to its adapter (the worker, the test push and
/// `herald send-test` all send through it).
///
/// Every answer is recorded in `metrics` (provider, outcome label, seconds from the call to the
/// answer). A push for a provider without an adapter, or whose adapter has no credentials, is
/// classified here as a configuration dead letter, with the reasons operators already know:
/// `provider_unsupported: <id>` and `push_not_configured: no <id> credentials`.
///
/// Immutable after `init`; safe to use from any thread.
public final class PushProviders: Sendable {
    private let adapters: [PushProviderID: any PushProvider.Type]
    private let configured: [PushProviderID: any PushProvider]
    private let clock: any Clock
    /// Each stored app's own providers (ADR 0006), replaced whole when its credentials change.
    /// The `default` app's are `configured`; an app is never sent with another app's providers.
    private let appProviders = Mutex<[String: Installed]>([:])
    /// `setProviders` calls so far: each install's mark (`Installed.installation`).
    private let installations = Atomic<UInt64>(0)

    /// A stored app's providers, and which `setProviders` installed them.
    private struct Installed {
        var byID: [PushProviderID: any PushProvider]
        /// Unique per install: a send whose app's providers were installed again before its
        /// answer started with credentials that are no longer the app's.
        var installation: UInt64
    }
    /// Provider answers and latency, for `/metrics`.
    public let metrics: PushMetrics

    /// - Parameters:
    ///   - adapters: the provider types this build can deliver with, credentials or not (their
    ///     token rules apply at registration; sends get "not configured" until credentials exist).
    ///   - configured: the adapters with credentials, at most one per id (the last one wins).
    ///     Their types count as adapters too.
    ///   - metrics: where answers are counted.
    ///   - clock: monotonic time for the latency histogram.
    public init(adapters: [any PushProvider.Type] = [], configured: [any PushProvider] = [],
                metrics: PushMetrics = PushMetrics(), clock: any Clock = SystemClock()) {
        var types: [PushProviderID: any PushProvider.Type] = [:]
        for adapter in adapters { types[adapter.id] = adapter }
        var providers: [PushProviderID: any PushProvider] = [:]
        for provider in configured {
            providers[provider.id] = provider
            types[provider.id] = type(of: provider)
        }
        self.adapters = types
        self.configured = providers
        self.metrics = metrics
        self.clock = clock
    }

    /// The ids this build has an adapter for, in `PushProviderID.allCases` order (readiness, metrics).
    public var adapterIDs: [PushProviderID] { PushProviderID.allCases.filter { adapters[$0] != nil } }

    /// Whether pushes to `id` can be sent (an adapter with credentials).
    public func isConfigured(_ id: PushProviderID) -> Bool { configured[id] != nil }

    /// Installs (or, with an empty list, clears) a stored app's providers: its credentials changed.
    /// Sends already under way finish on the instances they started with.
    public func setProviders(_ providers: [any PushProvider], app: String) {
        precondition(app != "default", "the default app's providers are the environment's")
        var byID: [PushProviderID: any PushProvider] = [:]
        for provider in providers { byID[provider.id] = provider }
        let installation = installations.add(1, ordering: .relaxed).newValue
        appProviders.withLock { $0[app] = Installed(byID: byID, installation: installation) }
    }

    /// Forgets a stored app that is no longer served here (deleted): its pushes are then refused
    /// as those of any app this node does not serve.
    public func removeApp(_ app: String) {
        appProviders.withLock { $0[app] = nil }
    }

    /// The providers of `app`: `configured` for `default`, its own for any other (none: empty).
    private func providers(app: String) -> [PushProviderID: any PushProvider] {
        app == "default" ? configured : appProviders.withLock { $0[app]?.byID ?? [:] }
    }

    /// `providers(app:)` and the install they came from (0: the environment's, which never change).
    private func installed(app: String) -> (byID: [PushProviderID: any PushProvider], installation: UInt64) {
        guard app != "default" else { return (configured, 0) }
        return appProviders.withLock { apps in apps[app].map { ($0.byID, $0.installation) } ?? ([:], 0) }
    }

    /// The ids `app` can send with, in `PushProviderID.allCases` order.
    public func configuredIDs(app: String) -> [PushProviderID] {
        let providers = providers(app: app)
        return PushProviderID.allCases.filter { providers[$0] != nil }
    }

    /// Whether a device whose row names `storedProvider` (`devices.provider`, text) can get pushes
    /// now; false for a name no build knows.
    public func isConfigured(storedProvider: String) -> Bool {
        PushProviderID(rawValue: storedProvider).map(isConfigured) ?? false
    }

    /// Whether a device of `app` whose row names `storedProvider` can get pushes now: only the
    /// app's own credentials count (AP-3).
    public func isConfigured(storedProvider: String, app: String) -> Bool {
        guard let id = PushProviderID(rawValue: storedProvider) else { return false }
        return providers(app: app)[id] != nil
    }

    /// Whether any provider can send.
    public var isEmpty: Bool { configured.isEmpty }

    /// The adapter with credentials for `id`, if any.
    public func provider(_ id: PushProviderID) -> (any PushProvider)? { configured[id] }

    /// Checks a token with `id`'s rule (DV-1). A provider without an adapter in this build has
    /// opaque tokens: `OpaqueDeviceToken`.
    ///
    /// - Returns: the token to store.
    /// - Throws: `DeviceTokenError` with the API's message.
    public func validate(token: String, for id: PushProviderID) throws(DeviceTokenError) -> String {
        guard let adapter = adapters[id] else { return try OpaqueDeviceToken.validate(token) }
        return try adapter.validate(token: token)
    }

    /// Sends through `target.provider`'s adapter (see `PushProvider.send`) and records the answer.
    ///
    /// - Parameters:
    ///   - pushID: the job's id, the same on every attempt (PU-5b).
    ///   - completion: called once, from any thread.
    ///   - app: the device's app: only its providers are used (AP-3).
    ///   - sendBy: the push's send-by deadline (its job's lease less a margin; nil: none).
    public func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, app: String = "default",
                     sendBy: SendByDeadline? = nil, completion: @escaping @Sendable (PushClassification) -> Void) {
        let started = clock.monotonicNanoseconds
        let metrics = self.metrics, clock = self.clock
        let provider = target.provider.rawValue
        let (installedProviders, installation) = installed(app: app)
        let completion: @Sendable (PushClassification) -> Void = { [self] classification in
            let seconds = Double(clock.monotonicNanoseconds &- started) / 1e9
            // A push held back (no stream before its send-by deadline, a credential to wait for)
            // or expired before sending made no request: its wait, up to the lease, is not the
            // provider's answer time.
            let requested: Bool
            switch classification.outcome {
            case .notSent, .busy, .expired: requested = false
            default: requested = true
            }
            metrics.record(provider: provider, outcome: classification.outcome.metricLabel, seconds: requested ? seconds : nil)
            if installation != 0, classification.isConfigurationError, installed(app: app).installation != installation {
                // Refused for the credentials the push was sent with (an Expo access token
                // rotated by PUT of the app's credentials: 401), which are no longer the app's:
                // sent again with the new ones, not a dead letter to retry by hand.
                return completion(Self.credentialsChanged(classification))
            }
            completion(classification)
        }
        if let adapter = installedProviders[target.provider] {
            adapter.send(notification, to: target, pushID: pushID, sendBy: sendBy, completion: completion)
        } else if app != "default", appProviders.withLock({ $0[app] == nil }) {
            // Not served here: its settings or secrets did not load (a wrong HERALD_SECRET_KEY at
            // start), or another node created it a moment ago. Kept, not dead-lettered: the push
            // goes once the app is loaded, within the retry budget.
            completion(PushClassification(outcome: .notSent(afterSeconds: Self.unservedAppRetrySeconds,
                                                             reason: "app_not_loaded: app \(app) is not served by this node"),
                                          status: nil, rule: .retryUnsent(minimumDelay: Self.unservedAppRetrySeconds)))
        } else if adapters[target.provider] != nil {
            completion(PushClassification(outcome: .deadLetter(reason: "push_not_configured: no \(provider) credentials"), status: nil,
                                          rule: .deadLetterConfiguration))
        } else {
            completion(unsupported(provider: provider, recorded: false))
        }
    }

    /// How long a push of an app this node does not serve waits before it is tried again.
    static let unservedAppRetrySeconds = 30

    /// A configuration refusal of credentials replaced since the send began: kept and sent again
    /// at once with the app's new ones (`.notSent`: the attempt is not counted, as a refused
    /// certificate's, ADR 0018), the provider's reason after `credentials_changed: `.
    static func credentialsChanged(_ refused: PushClassification) -> PushClassification {
        let reason: String
        if case .deadLetter(let why) = refused.outcome { reason = why } else { reason = "refused" }
        return PushClassification(outcome: .notSent(afterSeconds: 0, reason: "credentials_changed: \(reason)"),
                                  status: refused.status, rule: .retryUnsent(minimumDelay: 0))
    }

    /// Whether any configured provider confirms deliveries later (`PushReceiptProvider`): only
    /// then does the worker look for `push.receipt` jobs.
    public var hasReceiptProviders: Bool {
        configured.values.contains { $0 is any PushReceiptProvider }
            || appProviders.withLock { apps in apps.values.contains { $0.byID.values.contains { $0 is any PushReceiptProvider } } }
    }

    /// Whether `app`'s provider `id` confirms deliveries later (`PushReceiptProvider`, a relay such
    /// as Expo): only the app's own providers count (AP-3), so a stored app's Expo is one even when
    /// the environment configures none.
    public func confirmsLater(_ id: PushProviderID, app: String) -> Bool {
        providers(app: app)[id] is any PushReceiptProvider
    }

    /// Asks `provider`'s adapter about receipts (`PushReceiptProvider.checkReceipts`), in requests
    /// of at most its `maximumReceiptsPerRequest` ids, and merges the answers; a failed request
    /// fails the whole call with its classification.
    ///
    /// A request refused for its credentials (a configuration error: an Expo access token's 401)
    /// after the app's providers were installed again while it was on the wire (PATCH of the app's
    /// credentials) is asked again at once with the new ones, as a refused push is sent again
    /// (`credentials_changed`); with no receipt provider among the new ones, it fails
    /// `credentials_changed` (not sent), never as the configuration error of credentials the app
    /// no longer has.
    ///
    /// - Parameter app: whose provider asks (its access token, ADR 0006).
    /// - Returns: false (and never calls `completion`) when `provider` has no configured adapter
    ///   that checks receipts: the receipts can no longer be asked about.
    @discardableResult
    public func checkReceipts(provider id: PushProviderID, ids: [String], app: String = "default",
                              completion: @escaping @Sendable (PushReceiptAnswer) -> Void) -> Bool {
        let (installedProviders, installation) = installed(app: app)
        guard let provider = installedProviders[id] as? any PushReceiptProvider else { return false }
        guard !ids.isEmpty else {
            completion(.receipts([:]))
            return true
        }
        let size = max(1, provider.maximumReceiptsPerRequest)
        let chunks = stride(from: 0, to: ids.count, by: size).map { Array(ids[$0..<min($0 + size, ids.count)]) }
        let merged = Mutex<(left: Int, receipts: [String: PushClassification], failure: PushClassification?)>((chunks.count, [:], nil))
        for chunk in chunks {
            askReceipts(chunk, id: id, app: app, with: provider, installation: installation) { answer in
                let done: PushReceiptAnswer? = merged.withLock { state in
                    switch answer {
                    case .receipts(let receipts): state.receipts.merge(receipts) { first, _ in first }
                    case .failed(let classification): state.failure = state.failure ?? classification
                    }
                    state.left -= 1
                    guard state.left == 0 else { return nil }
                    return state.failure.map { .failed($0) } ?? .receipts(state.receipts)
                }
                if let done { completion(done) }
            }
        }
        return true
    }

    /// One receipt request with `provider`, from the install `installation` (0: the environment's,
    /// which never change); refused for credentials replaced since, asked again with the app's
    /// current ones (`checkReceipts`).
    private func askReceipts(_ ids: [String], id: PushProviderID, app: String, with provider: any PushReceiptProvider, installation: UInt64,
                             completion: @escaping @Sendable (PushReceiptAnswer) -> Void) {
        provider.checkReceipts(ids) { [self] answer in
            guard installation != 0, case .failed(let refused) = answer, refused.isConfigurationError else { return completion(answer) }
            let (current, now) = installed(app: app)
            guard now != installation else { return completion(answer) }
            guard let renewed = current[id] as? any PushReceiptProvider else { return completion(.failed(Self.credentialsChanged(refused))) }
            askReceipts(ids, id: id, app: app, with: renewed, installation: now, completion: completion)
        }
    }

    /// The verdict for a device whose stored provider this build does not know at all (not even as
    /// a `PushProviderID`): a configuration dead letter, counted like any other answer.
    ///
    /// - Parameter provider: the stored provider text.
    public func unsupported(provider: String) -> PushClassification {
        unsupported(provider: provider, recorded: true)
    }

    private func unsupported(provider: String, recorded: Bool) -> PushClassification {
        let classification = PushClassification(outcome: .deadLetter(reason: "provider_unsupported: \(provider)"), status: nil,
                                                rule: .deadLetterConfiguration)
        if recorded { metrics.record(provider: provider, outcome: classification.outcome.metricLabel, seconds: nil) }
        return classification
    }
}
