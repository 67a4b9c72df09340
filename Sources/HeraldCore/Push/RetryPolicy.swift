/// When a failed delivery is tried again (PU-5): capped exponential backoff with full jitter
/// (AWS Architecture Blog, "Exponential Backoff and Jitter"), a provider's `Retry-After` as a
/// floor with that jitter on top (every push a rate-limited provider refused with the same
/// `Retry-After` coming back in the same millisecond would meet its limit again), and two limits after which the job is dead-lettered: a time budget counted from the
/// job's first attempt, and a cap on the attempts that reached the provider.
///
/// The defaults ride out a provider outage of hours: a job is retried for up to 4 hours (at most
/// 2 minutes apart once the backoff reaches its cap) before it is dead. Attempts that never reached
/// the provider (`PushOutcome.notSent`: unreachable, no auth token) still grow the backoff and are
/// bounded by the time budget, but do not count toward `maxAttempts`. A push turned away for its
/// turn (`PushOutcome.busy`, ADR 0024) comes back after `busyMilliseconds` plus up to as much
/// jitter, however often it was turned away: its wait says nothing about the provider's health,
/// so its turn-aways are not among the attempts a later failure's backoff grows with either
/// (`JobRecord.backoffAttempts`).
///
/// ```
/// ceiling(n) = min(cap, base × 2^(n-1))         n = the job's attempts so far (every claim but
///                                                    those turned away for their turn)
/// delay      = Retry-After + random × ceiling(n)     (Retry-After 0 when the provider gave none)
/// dead when    counted attempts ≥ maxAttempts, or now − first attempt ≥ budget,
///              or now − first attempt + Retry-After ≥ budget
/// ```
public struct RetryPolicy: Sendable, Equatable {
    /// Delay scale for the first retry, ms (`HERALD_PUSH_RETRY_BASE_MS`).
    public var baseMilliseconds: Int64
    /// Largest backoff before jitter, ms (`HERALD_PUSH_RETRY_CAP_MS`).
    public var capMilliseconds: Int64
    /// Attempts that reached the provider before a job is dead (`HERALD_PUSH_MAX_ATTEMPTS`). A
    /// backstop: with the defaults the time budget ends first.
    public var maxAttempts: Int
    /// How long after its first attempt a job is still retried, ms (`HERALD_PUSH_RETRY_BUDGET_MS`):
    /// a failure at or after this age dead-letters it, and so does one whose provider asks for a
    /// wait (`Retry-After`) that reaches this age.
    public var budgetMilliseconds: Int64

    /// The wait before a push turned away for its turn (`PushOutcome.busy`) goes again, ms, before
    /// its jitter (as much again at most): 1 s, the gate's patience (ADR 0024), so a push that
    /// waited that long without a place does not come straight back into the same line.
    public static let busyMilliseconds: Int64 = 1_000

    /// Default `baseMilliseconds`: 1 s.
    public static let defaultBaseMilliseconds: Int64 = 1_000
    /// Default `capMilliseconds`: 2 min.
    public static let defaultCapMilliseconds: Int64 = 120_000
    /// Default `maxAttempts`: 300 (4 h at the capped backoff averages 240 attempts).
    public static let defaultMaxAttempts = 300
    /// Default `budgetMilliseconds`: 4 h.
    public static let defaultBudgetMilliseconds: Int64 = 4 * 3_600_000

    /// - Precondition: `baseMilliseconds > 0`, `capMilliseconds >= baseMilliseconds`,
    ///   `maxAttempts >= 1`, `budgetMilliseconds > 0`.
    public init(baseMilliseconds: Int64 = defaultBaseMilliseconds, capMilliseconds: Int64 = defaultCapMilliseconds,
                maxAttempts: Int = defaultMaxAttempts, budgetMilliseconds: Int64 = defaultBudgetMilliseconds) {
        precondition(baseMilliseconds > 0 && capMilliseconds >= baseMilliseconds && maxAttempts >= 1 && budgetMilliseconds > 0)
        self.baseMilliseconds = baseMilliseconds
        self.capMilliseconds = capMilliseconds
        self.maxAttempts = maxAttempts
        self.budgetMilliseconds = budgetMilliseconds
    }

    /// The decision after a failed attempt.
    public enum Decision: Sendable, Equatable {
        /// Try again after this many ms.
        case retry(afterMilliseconds: Int64)
        /// Out of attempts: `maxAttempts` attempts reached the provider.
        case giveUp
        /// Out of time: the budget since the first attempt is spent, or would be before the
        /// provider's `Retry-After` allowed the next attempt.
        case budgetSpent
    }

    /// The decision after a failure of a job that has been claimed `attempts` times, of which
    /// `countedAttempts` reached the provider, `elapsedMilliseconds` after its first attempt.
    ///
    /// - Parameters:
    ///   - attempts: every attempt so far, the failed one included (1-based); the backoff grows with it.
    ///   - countedAttempts: the attempts that count toward `maxAttempts` (those that reached the
    ///     provider), the failed one included when it did.
    ///   - elapsedMilliseconds: from the job's first attempt to now; negative (a clock stepped
    ///     back) counts as 0.
    ///   - retryAfterMilliseconds: the provider's `Retry-After` (or a cool-down's end), honoured as a minimum.
    ///   - random: a uniform value in `0..<1` (injected so tests are deterministic).
    public func decide(attempts: Int, countedAttempts: Int, elapsedMilliseconds: Int64,
                       retryAfterMilliseconds: Int64? = nil, random: Double = Double.random(in: 0..<1)) -> Decision {
        if countedAttempts >= maxAttempts { return .giveUp }
        let elapsed = max(elapsedMilliseconds, 0)
        if elapsed >= budgetMilliseconds { return .budgetSpent }
        // A provider that asks for a wait past the budget's end (a Retry-After of a day) would
        // park the job until long after it should have been dead, then send it once more that
        // late: the budget is spent now instead.
        if let floor = retryAfterMilliseconds, floor >= budgetMilliseconds - elapsed { return .budgetSpent }
        return .retry(afterMilliseconds: backoff(attempts: attempts, retryAfterMilliseconds: retryAfterMilliseconds, random: random))
    }

    /// The decision after a push was turned away for its turn (`PushOutcome.busy`): again after
    /// `busyMilliseconds` plus `random` × as much, not after the growing backoff; never counted
    /// toward `maxAttempts`, but bounded by the budget as any failure.
    /// - Parameters:
    ///   - elapsedMilliseconds: from the job's first attempt to now; negative counts as 0.
    ///   - random: a uniform value in `0..<1`.
    public func decideBusy(elapsedMilliseconds: Int64, random: Double = Double.random(in: 0..<1)) -> Decision {
        let elapsed = max(elapsedMilliseconds, 0)
        if elapsed >= budgetMilliseconds { return .budgetSpent }
        let delay = Self.busyMilliseconds + Int64((Double(Self.busyMilliseconds) * min(max(random, 0), 1)).rounded(.down))
        return .retry(afterMilliseconds: delay)
    }

    /// The decision after attempt number `attempt` (1-based), every attempt counted and the
    /// budget not in question (a `Retry-After` is only a floor then, however far).
    public func decide(afterAttempt attempt: Int, retryAfterMilliseconds: Int64? = nil,
                       random: Double = Double.random(in: 0..<1)) -> Decision {
        if attempt >= maxAttempts { return .giveUp }
        return .retry(afterMilliseconds: backoff(attempts: attempt, retryAfterMilliseconds: retryAfterMilliseconds, random: random))
    }

    /// The jittered, capped backoff after `attempts` attempts, after `retryAfterMilliseconds` when
    /// given: the jitter spreads the pushes one `Retry-After` held back, instead of all of them
    /// coming back at its end (breaker12: ten pushes refused 429 `Retry-After: 4` went again
    /// within 10 ms of each other).
    private func backoff(attempts: Int, retryAfterMilliseconds: Int64?, random: Double) -> Int64 {
        let exponent = min(max(attempts - 1, 0), 40)
        let (scaled, overflow) = baseMilliseconds.multipliedReportingOverflow(by: Int64(1) << exponent)
        let ceiling = overflow ? capMilliseconds : min(capMilliseconds, scaled)
        let jittered = Int64((Double(ceiling) * min(max(random, 0), 1)).rounded(.down))
        guard let floor = retryAfterMilliseconds, floor > 0 else { return jittered }
        let (delay, past) = floor.addingReportingOverflow(jittered)
        return past ? Int64.max : delay
    }
}
