import HeraldCore
import PushHTTP

/// The decisions of `FCMAccessTokenCache` as a value: which token to hand out, when to fetch,
/// who waits — no locks, threads or I/O, so every transition is tested directly (STYLE 5).
///
/// Timeline of one token that lives `expiresIn` seconds from `t0` (the moment the fetch answered):
/// ```
/// t0 ─────────── refreshAt ─────── usableUntil ── expiresAt
///    use as is   │ use, and fetch  │ wait for the  │
///                │ in background   │ fetch         │
/// refreshAt   = expiresAt − min(refreshMargin, expiresIn / 2)    (5 min before expiry, PU-2)
/// usableUntil = expiresAt − min(inFlightMargin, expiresIn / 4)   (room for a request in flight)
/// ```
/// At most one fetch is in flight; callers arriving meanwhile wait for its result. A failed fetch
/// answers every waiter with the error, and for `failureCooldown` seconds later callers get the
/// same error at once (unless a usable token remains) instead of hammering the token endpoint.
struct FCMAccessTokenStateMachine<Waiter> {
    struct Token: Equatable {
        let value: String
        let refreshAt: Int
        let usableUntil: Int
    }

    /// What the caller of `request` must do.
    enum RequestAction {
        /// Use this token now.
        case use(String)
        /// Use this token now, and start a fetch (numbered `generation`) because it nears expiry.
        case useAndFetch(String, generation: Int)
        /// The waiter was queued; start a fetch numbered `generation`.
        case waitAndFetch(generation: Int)
        /// The waiter was queued behind the fetch already in flight.
        case wait
        /// Fail at once: a fetch failed less than `failureCooldown` seconds ago.
        case fail(FCMTokenError)
    }

    let refreshMargin: Int
    let inFlightMargin: Int
    let failureCooldown: Int

    private(set) var token: Token?
    private(set) var fetchInFlight: Int?  // generation of the running fetch
    private var nextGeneration = 1
    private var waiters: [Waiter] = []
    private var lastFailure: (error: FCMTokenError, at: Int)?

    init(refreshMargin: Int = 300, inFlightMargin: Int = 60, failureCooldown: Int = 10) {
        self.refreshMargin = refreshMargin
        self.inFlightMargin = inFlightMargin
        self.failureCooldown = failureCooldown
    }

    /// A caller wants a token at `now`; `waiter` is stored only for `.wait`/`.waitAndFetch`.
    mutating func request(now: Int, waiter: Waiter) -> RequestAction {
        if let token, now < token.usableUntil {
            if now >= token.refreshAt, fetchInFlight == nil, !coolingDown(now) {
                return .useAndFetch(token.value, generation: startFetch())
            }
            return .use(token.value)
        }
        if fetchInFlight != nil {
            waiters.append(waiter)
            return .wait
        }
        if let lastFailure, coolingDown(now) { return .fail(lastFailure.error) }
        waiters.append(waiter)
        return .waitAndFetch(generation: startFetch())
    }

    /// The fetch numbered `generation` answered at `now`.
    ///
    /// - Returns: the waiters to answer and what to tell them. A stale or repeated answer (not the
    ///   fetch in flight) changes nothing and returns no waiters.
    mutating func fetchFinished(generation: Int, result: Result<FCMAccessTokenGrant, FCMTokenError>, now: Int)
        -> (waiters: [Waiter], result: Result<String, FCMTokenError>) {
        guard fetchInFlight == generation else { return ([], result.map(\.accessToken)) }
        fetchInFlight = nil
        let answered = waiters
        waiters = []
        switch result {
        case .success(let grant):
            let lifetime = max(grant.expiresIn, 0)
            let expiresAt = now + lifetime
            token = Token(value: grant.accessToken,
                          refreshAt: expiresAt - min(refreshMargin, lifetime / 2),
                          usableUntil: expiresAt - min(inFlightMargin, lifetime / 4))
            lastFailure = nil
            return (answered, .success(grant.accessToken))
        case .failure(let error):
            lastFailure = (error, now)
            return (answered, .failure(error))
        }
    }

    /// FCM answered 401 to a request made with `rejected`: forget it, so the next request fetches.
    ///
    /// - Returns: `true` if `rejected` was the current token and is now dropped; `false` if it had
    ///   already been replaced (another request saw the 401 first) — retry with a new `request`.
    mutating func invalidate(rejected: String) -> Bool {
        guard token?.value == rejected else { return false }
        token = nil
        lastFailure = nil  // a 401 is news: do not keep failing fast on an older fetch error
        return true
    }

    /// Seconds until the failure cool-down ends at `now`, or nil when none is running.
    func coolDownLeft(now: Int) -> Int? {
        guard let lastFailure, coolingDown(now) else { return nil }
        return min(failureCooldown, failureCooldown - (now - lastFailure.at))
    }

    private func coolingDown(_ now: Int) -> Bool {
        guard let lastFailure else { return false }
        return now - lastFailure.at < failureCooldown
    }

    private mutating func startFetch() -> Int {
        let generation = nextGeneration
        nextGeneration += 1
        fetchInFlight = generation
        return generation
    }
}
