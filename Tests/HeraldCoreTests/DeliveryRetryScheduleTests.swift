import Synchronization
import Testing

@testable import HeraldCore

/// A deterministic uniform sequence in `0..<1` (a 64-bit LCG): jitter that spreads like the real
/// one without making a test depend on luck.
final class SeededJitter: Sendable {
    private let state: Mutex<UInt64>

    init(seed: UInt64) {
        state = Mutex(seed)
    }

    func next() -> Double {
        state.withLock { s in
            s = s &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(s >> 11) / Double(UInt64(1) << 53)
        }
    }
}

/// Issue 18: the default retry schedule against provider outages, on a manual clock. Each test
/// drives the worker round by round, moving the clock to the next due job (`WorkerHarness.drain`).
@Suite struct DeliveryRetryScheduleTests {
    static let tenMinutes: Int64 = 600_000

    @Test(arguments: [("503", PushClassification.unavailable), ("unreachable", PushClassification.unreachable)])
    func aTenMinuteOutageEndsWithEveryJobDeliveredAndNoneDead(kind: String, answer: PushClassification) async throws {
        let jitter = SeededJitter(seed: 18)
        let h = try WorkerHarness(policy: RetryPolicy(), jitter: { jitter.next() })
        let outageEnd = h.now + Self.tenMinutes
        h.provider.outage(until: outageEnd, clock: h.clock, answer: answer)
        var jobs: [(id: Int64, device: DeviceRecord)] = []
        for n in 1...50 {
            let device = try h.register(session: "s-\(n)", token: "tok-\(n)")
            jobs.append((try h.enqueue(device), device))
        }
        try await h.drain()
        for (id, device) in jobs {
            let job = try h.job(id)
            #expect(job.state == .done, "job \(id) is \(job.state): \(job.lastError ?? "")")
            #expect(job.attempts > 5, "the old default of 5 attempts would have dead-lettered it")
            #expect(job.uncountedAttempts == (kind == "unreachable" ? job.attempts - 1 : 0))
            let record = try h.record(device)
            #expect(!record.contains { $0.outcome == .dead })
            #expect(record.last?.outcome == .sent)
            // Sent after the outage, within one capped backoff of its end.
            let sentAt = try #require(record.last?.at)
            #expect(sentAt >= outageEnd && sentAt <= outageEnd + RetryPolicy.defaultCapMilliseconds, "sent \(sentAt - outageEnd) ms after")
        }
        #expect(h.worker.outcomeCounts.delivered == 50 && h.worker.outcomeCounts.dead == 0)
    }

    @Test func anFCMTokenOutageDoesNotDeadLetterUnsentJobs() async throws {
        // At most 3 attempts that reach the provider: each cool-down failure used to spend one.
        let h = try WorkerHarness(policy: RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 60_000, maxAttempts: 3))
        // The OAuth endpoint is down for 2 minutes; inside its cool-down every send fails at once.
        let end = h.now + 120_000
        h.provider.outage(until: end, clock: h.clock, answer: .tokenCoolDown(secondsLeft: 10))
        var jobs: [(id: Int64, device: DeviceRecord)] = []
        for n in 1...10 {
            let device = try h.register(session: "s-\(n)", token: "tok-\(n)")
            jobs.append((try h.enqueue(device), device))
        }
        let decided = h.now
        #expect(try await h.worker.runDue().claimed == 10)
        for (id, _) in jobs {
            let job = try h.job(id)
            // Re-scheduled for the cool-down's end, not counted.
            #expect(job.state == .queued && job.runAt >= decided + 10_000 && job.uncountedAttempts == 1)
            #expect(job.lastError == "oauth_cooldown: oauth_unavailable")
        }
        try await h.drain()
        for (id, device) in jobs {
            let job = try h.job(id)
            #expect(job.state == .done && job.attempts > 3 && job.countedAttempts == 1, "\(job)")
            #expect(try h.record(device).last?.outcome == .sent)
            #expect(try h.record(device).last.map { $0.at >= end } == true)
        }
        #expect(h.worker.outcomeCounts.dead == 0)
    }

    @Test(arguments: [("ServiceUnavailable", PushClassification.unavailable), ("provider_unreachable", PushClassification.unreachable)])
    func theTimeBudgetEventuallyDeadLetters(reason: String, answer: PushClassification) async throws {
        let jitter = SeededJitter(seed: 5)
        let policy = RetryPolicy()
        let h = try WorkerHarness(policy: policy, jitter: { jitter.next() })
        h.provider.outage(until: .max, clock: h.clock, answer: answer)
        let device = try h.register(token: "tok-1")
        let id = try h.enqueue(device)
        let first = h.now
        try await h.drain()
        let job = try h.job(id)
        #expect(job.state == .dead)
        let lived = try #require(job.deadAt) - first
        #expect(lived >= policy.budgetMilliseconds && lived < policy.budgetMilliseconds + policy.capMilliseconds)
        #expect(job.attempts < policy.maxAttempts, "the budget ended it, not the attempt cap")
        #expect(job.lastError?.contains("(retry budget of 14400 s spent after \(job.attempts) attempts)") == true, "\(job.lastError ?? "")")
        #expect(job.deadCause == DeadLetterCause(provider: "apns", reason: reason))
        #expect(try h.record(device).last?.outcome == .dead)
    }

    @Test func unsentAttemptsDoNotCountTowardTheCapButGrowTheBackoff() async throws {
        let h = try WorkerHarness()   // 3 attempts, base 1 s, jitter 0.5
        let device = try h.register(token: "tok-1")
        h.provider.script("tok-1", .classify(.unreachable), .classify(.unreachable), .classify(.unreachable),
                          .classify(.unavailable), .classify(.unavailable), .classify(.unavailable))
        let id = try h.enqueue(device)
        var delays: [Int64] = []
        while try h.job(id).state != .dead {
            try await h.worker.runDue()
            let job = try h.job(id)
            if job.state == .queued {
                delays.append(job.runAt - h.now)
                h.clock.advance(byMilliseconds: job.runAt - h.now)
            }
        }
        #expect(delays == [500, 1_000, 2_000, 4_000, 8_000])
        let job = try h.job(id)
        #expect(job.attempts == 6 && job.uncountedAttempts == 3 && job.countedAttempts == 3)
        #expect(job.lastError == "ServiceUnavailable (after 6 attempts)")
        #expect(job.deadCause == DeadLetterCause(provider: "apns", reason: "ServiceUnavailable"))
    }

    @Test func theMassDeletionGuardTripsWithinOneBatchAndLogsOneError() async throws {
        let errors = Mutex<[String]>([])
        let log = Logger { level, message, _ in
            if level == .error { errors.withLock { $0.append(message) } }
        }
        let h = try WorkerHarness(log: log)   // the default guard: at most 3 alike deleted
        var devices: [DeviceRecord] = []
        for n in 1...50 {
            let device = try h.register(session: "s-\(n)", token: "tok-\(n)")
            h.provider.script("tok-\(n)", .classify(.unregistered()))
            devices.append(device)
            try h.enqueue(device)
        }
        // One batch: every answer arrives before any outcome is recorded.
        #expect(try await h.worker.runDue(limit: 64).claimed == 50)
        let kept = try devices.filter { try h.device($0.id) != nil }
        #expect(kept.count == 47 && h.worker.outcomeCounts.devicesDeleted == 3)
        for device in kept {
            #expect(try h.record(device).last?.detail == "provider_misconfigured: Unregistered")
        }
        #expect(errors.withLock { $0 }.count == 1, "\(errors.withLock { $0 })")
        #expect(h.worker.massDeletionGuard.trippedReason(provider: "apns") == "Unregistered")
    }
}
