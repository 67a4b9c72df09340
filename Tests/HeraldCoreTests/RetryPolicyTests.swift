import Testing

@testable import HeraldCore

@Suite struct RetryPolicyTests {
    let policy = RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 60_000, maxAttempts: 5)

    @Test func theCeilingDoublesPerAttemptUpToTheCap() {
        // With the jitter at its top, the delay is the ceiling itself.
        let top = 0.999_999_999
        let delays = (1...4).map { attempt -> Int64 in
            guard case .retry(let ms) = policy.decide(afterAttempt: attempt, random: top) else { return -1 }
            return ms
        }
        #expect(delays == [999, 1_999, 3_999, 7_999])
        let capped = RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 5_000, maxAttempts: 10)
        #expect(capped.decide(afterAttempt: 9, random: top) == .retry(afterMilliseconds: 4_999))
    }

    /// ADR 0024 (lows13): a push turned away for its turn waits 1 s plus up to 1 s of jitter, never
    /// a backoff that grows, and only the budget ends it.
    @Test func aBusyTurnAwayWaitsAShortFixedDelayWithJitter() {
        #expect(policy.decideBusy(elapsedMilliseconds: 0, random: 0) == .retry(afterMilliseconds: 1_000))
        #expect(policy.decideBusy(elapsedMilliseconds: 0, random: 0.5) == .retry(afterMilliseconds: 1_500))
        #expect(policy.decideBusy(elapsedMilliseconds: 3_600_000, random: 0.999_999) == .retry(afterMilliseconds: 1_999))
        #expect(policy.decideBusy(elapsedMilliseconds: -5, random: 2) == .retry(afterMilliseconds: 2_000))
        #expect(policy.decideBusy(elapsedMilliseconds: policy.budgetMilliseconds, random: 0) == .budgetSpent)
    }

    @Test func fullJitterSpreadsFromZero() {
        #expect(policy.decide(afterAttempt: 3, random: 0) == .retry(afterMilliseconds: 0))
        #expect(policy.decide(afterAttempt: 3, random: 0.5) == .retry(afterMilliseconds: 2_000))
    }

    /// `Retry-After` is a floor with the jitter on top (breaker12: ten pushes refused 429
    /// `Retry-After: 4` all went again within 10 ms, into the same rate limit).
    @Test func retryAfterIsAFloorWithTheJitterOnTop() {
        #expect(policy.decide(afterAttempt: 1, retryAfterMilliseconds: 30_000, random: 0) == .retry(afterMilliseconds: 30_000))
        #expect(policy.decide(afterAttempt: 1, retryAfterMilliseconds: 30_000, random: 0.5) == .retry(afterMilliseconds: 30_500))
        #expect(policy.decide(afterAttempt: 4, retryAfterMilliseconds: 10, random: 0.5) == .retry(afterMilliseconds: 4_010))
        // Pushes held back by one Retry-After come back spread over the backoff's ceiling.
        let delays = [0.0, 0.25, 0.5, 0.75, 0.999].map { policy.decide(afterAttempt: 2, retryAfterMilliseconds: 4_000, random: $0) }
        #expect(delays == [.retry(afterMilliseconds: 4_000), .retry(afterMilliseconds: 4_500), .retry(afterMilliseconds: 5_000),
                           .retry(afterMilliseconds: 5_500), .retry(afterMilliseconds: 5_998)])
        #expect(policy.decide(afterAttempt: 1, retryAfterMilliseconds: .max, random: 0.5) == .retry(afterMilliseconds: .max), "no overflow")
    }

    /// A new user's report (breaker6): a Web Push service answering 429 with `Retry-After` a
    /// day away (the most `RetryAfter` reads) parked the job `queued` for 24 h, far past the 4 h
    /// budget, to be sent once more a day late. A floor that reaches past what is left of the
    /// budget spends it now: the job is dead-lettered, where `GET /v1/jobs?state=dead` shows it.
    @Test func aRetryAfterPastWhatIsLeftOfTheBudgetSpendsItNow() {
        let budgeted = RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 60_000, maxAttempts: 100, budgetMilliseconds: 3_600_000)
        #expect(budgeted.decide(attempts: 1, countedAttempts: 1, elapsedMilliseconds: 0, retryAfterMilliseconds: 86_400_000, random: 0.5)
                == .budgetSpent)
        #expect(budgeted.decide(attempts: 2, countedAttempts: 2, elapsedMilliseconds: 600_000, retryAfterMilliseconds: 3_000_000, random: 0.5)
                == .budgetSpent)
        #expect(budgeted.decide(attempts: 2, countedAttempts: 2, elapsedMilliseconds: 600_000, retryAfterMilliseconds: 2_999_999, random: 0.5)
                == .retry(afterMilliseconds: 3_000_999))
        // The jittered backoff alone keeps its last attempt near the end of the budget, as before.
        #expect(budgeted.decide(attempts: 9, countedAttempts: 9, elapsedMilliseconds: 3_599_000, random: 0.5)
                == .retry(afterMilliseconds: 30_000))
        // Without a budget in question (receipt resends) the floor is only a floor.
        #expect(budgeted.decide(afterAttempt: 1, retryAfterMilliseconds: 86_400_000, random: 0.5) == .retry(afterMilliseconds: 86_400_500))
    }

    @Test func theFifthFailureGivesUp() {
        #expect(policy.decide(afterAttempt: 5) == .giveUp)
        #expect(policy.decide(afterAttempt: 6) == .giveUp)
    }

    @Test func hugeAttemptNumbersDoNotOverflow() {
        let patient = RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 60_000, maxAttempts: 1_000)
        #expect(patient.decide(afterAttempt: 500, random: 0.5) == .retry(afterMilliseconds: 30_000))
    }
}
