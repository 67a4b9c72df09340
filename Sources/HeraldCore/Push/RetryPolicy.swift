/// When a failed delivery is tried again (PU-5): exponential backoff with full jitter
/// (AWS Architecture Blog, "Exponential Backoff and Jitter"), a provider's `Retry-After` as a
/// floor, and a cap on attempts after which the job is dead-lettered.
public struct RetryPolicy: Sendable {
    /// Delay scale for the first retry, ms (`HERALD_PUSH_RETRY_BASE_MS`).
    public var baseMilliseconds: Int64
    /// Largest backoff before jitter, ms (`HERALD_PUSH_RETRY_CAP_MS`).
    public var capMilliseconds: Int64
    /// Attempts before a job is dead (PU-5: 5).
    public var maxAttempts: Int

    public init(baseMilliseconds: Int64 = 1_000, capMilliseconds: Int64 = 300_000, maxAttempts: Int = 5) {
        precondition(baseMilliseconds > 0 && capMilliseconds >= baseMilliseconds && maxAttempts >= 1)
        self.baseMilliseconds = baseMilliseconds
        self.capMilliseconds = capMilliseconds
        self.maxAttempts = maxAttempts
    }

    /// The decision after attempt number `attempt` (1-based) failed with a retryable error.
    public enum Decision: Sendable, Equatable {
        /// Try again after this many ms.
        case retry(afterMilliseconds: Int64)
        /// Out of attempts.
        case giveUp
    }

    /// - Parameters:
    ///   - attempt: the attempt that just failed, 1-based.
    ///   - retryAfterMilliseconds: the provider's `Retry-After`, honoured as a minimum.
    ///   - random: a uniform value in `0..<1` (injected so tests are deterministic).
    public func decide(afterAttempt attempt: Int, retryAfterMilliseconds: Int64? = nil,
                       random: Double = Double.random(in: 0..<1)) -> Decision {
        guard attempt < maxAttempts else { return .giveUp }
        let exponent = min(max(attempt - 1, 0), 40)
        let (scaled, overflow) = baseMilliseconds.multipliedReportingOverflow(by: Int64(1) << exponent)
        let ceiling = overflow ? capMilliseconds : min(capMilliseconds, scaled)
        let jittered = Int64((Double(ceiling) * min(max(random, 0), 1)).rounded(.down))
        return .retry(afterMilliseconds: max(jittered, retryAfterMilliseconds ?? 0))
    }
}
