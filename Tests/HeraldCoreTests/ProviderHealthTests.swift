import Testing

@testable import HeraldCore

/// OP-3: a provider whose requests all go unanswered shows as degraded, with the first failure's
/// reason and time, and turns healthy on its first answer. Times are passed in: no clock, no sleep.
@Suite struct ProviderHealthTests {
    @Test func aRunOfUnansweredRequestsDegradesTheProviderFromItsFirstFailure() {
        let health = ProviderHealth(limits: .init(failures: 3))
        #expect(health.recordUnanswered(provider: "apns", reason: "transport_error: timeout", atMilliseconds: 1_000) == .none)
        #expect(health.degradation(provider: "apns") == nil, "one timeout is a lost packet")
        #expect(health.recordUnanswered(provider: "apns", reason: "transport_error: reset", atMilliseconds: 2_000) == .none)
        let expected = ProviderHealth.Degradation(reason: "transport_error: timeout", sinceMilliseconds: 1_000, failures: 3)
        #expect(health.recordUnanswered(provider: "apns", reason: "transport_error: timeout", atMilliseconds: 3_500) == .degraded(expected))
        #expect(health.degradation(provider: "apns") == expected)
        // Told once: the next failures only count.
        #expect(health.recordUnanswered(provider: "apns", reason: "x", atMilliseconds: 4_000) == .none)
        #expect(health.degradation(provider: "apns")?.failures == 4)
        #expect(health.degradation(provider: "apns")?.sinceMilliseconds == 1_000)
        // Another provider is its own.
        #expect(health.degradation(provider: "fcm") == nil)
    }

    @Test func theFirstAnswerOfAnyKindEndsTheRun() {
        let health = ProviderHealth(limits: .init(failures: 2))
        _ = health.recordUnanswered(provider: "apns", reason: "a", atMilliseconds: 10)
        _ = health.recordUnanswered(provider: "apns", reason: "b", atMilliseconds: 20)
        #expect(health.recordAnswer(provider: "apns") == .recovered(.init(reason: "a", sinceMilliseconds: 10, failures: 2)))
        #expect(health.degradation(provider: "apns") == nil)
        #expect(health.recordAnswer(provider: "apns") == .none)
        // A new run starts at its own first failure, its count from one.
        _ = health.recordUnanswered(provider: "apns", reason: "c", atMilliseconds: 50)
        #expect(health.degradation(provider: "apns") == nil)
        #expect(health.recordUnanswered(provider: "apns", reason: "d", atMilliseconds: 60)
                == .degraded(.init(reason: "c", sinceMilliseconds: 50, failures: 2)))
    }

    @Test func anAnswerBetweenFailuresKeepsTheProviderHealthy() {
        let health = ProviderHealth(limits: .init(failures: 2))
        for at in stride(from: Int64(0), to: 100, by: 10) {
            #expect(health.recordUnanswered(provider: "webpush", reason: "t", atMilliseconds: at) == .none)
            #expect(health.recordAnswer(provider: "webpush") == .none, "a run that never degraded is not a recovery")
        }
        #expect(health.degradation(provider: "webpush") == nil)
    }

    /// Per provider and app, as the mass-deletion guard (ADR 0006): a stored app's key is listed.
    @Test func storedAppsAreListedByTheirKey() {
        let health = ProviderHealth(limits: .init(failures: 1))
        _ = health.recordUnanswered(provider: "fcm@shop", reason: "provider_unreachable: refused", atMilliseconds: 7)
        _ = health.recordUnanswered(provider: "apns@chat", reason: "transport_error: timeout", atMilliseconds: 5)
        _ = health.recordUnanswered(provider: "apns", reason: "transport_error: timeout", atMilliseconds: 9)
        #expect(health.degradedAppProviders.map(\.provider) == ["apns@chat", "fcm@shop"])
        #expect(health.degradedAppProviders.first?.degradation == .init(reason: "transport_error: timeout", sinceMilliseconds: 5, failures: 1))
        _ = health.recordAnswer(provider: "apns@chat")
        #expect(health.degradedAppProviders.map(\.provider) == ["fcm@shop"])
        #expect(health.degradation(provider: "apns") != nil)
    }
}

/// The worker tells `ProviderHealth` how each request ended: transport failures count, an answer
/// (even a refusal) clears, a push dropped unsent at its send-by deadline is neither.
@Suite struct DeliveryWorkerHealthTests {
    struct Timeout: PushTransportFailure, CustomStringConvertible {
        var mayHaveReachedProvider: Bool { true }
        var description: String { "timeout" }
    }

    @Test func unansweredPushesDegradeTheirProviderAndAnAnswerClearsIt() async throws {
        let h = try WorkerHarness(policy: RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 60_000, maxAttempts: 10))
        let timeout = classifyTransportError(Timeout())
        #expect(timeout.isUnanswered && timeout.outcome == .retry(afterSeconds: nil, reason: "transport_error: timeout"))
        let devices = try (0..<3).map { try h.register(user: "u-\($0)", session: "s-\($0)", token: "tok-\($0)") }
        h.provider.script("tok-0", .classify(timeout), .classify(.sendByPassed), .classify(.unavailable))
        h.provider.script("tok-1", .classify(.unreachable), .classify(.sendByPassed))
        h.provider.script("tok-2", .classify(timeout), .classify(.sendByPassed))
        let start = h.now
        for device in devices { try h.enqueue(device) }
        _ = try await h.worker.runDue()
        let degradation = try #require(h.worker.providerHealth.degradation(provider: "apns"))
        #expect(degradation.failures == 3 && degradation.sinceMilliseconds == start)
        #expect(degradation.reason.hasPrefix("transport_error: timeout") || degradation.reason.hasPrefix("provider_unreachable"))

        // Dropped unsent at their deadline: neither an answer nor a failure of the provider.
        h.clock.advance(byMilliseconds: 60_000)
        _ = try await h.worker.runDue()
        #expect(h.worker.providerHealth.degradation(provider: "apns")?.failures == 3)

        // A 503 is an answer: the provider is there.
        h.clock.advance(byMilliseconds: 60_000)
        _ = try await h.worker.runDue()
        #expect(h.worker.providerHealth.degradation(provider: "apns") == nil)
    }

    /// ADR 0015 as amended: a receipt check is one of the provider's requests. Three without an
    /// answer make Expo degraded (per provider and app, as its pushes); the next check answered clears it.
    @Test func receiptChecksWithoutAnAnswerCountAndAnAnsweredOneClears() async throws {
        let h = try DeliveryReceiptTests.Harness(maxAttempts: 10)
        _ = try await h.sent()
        #expect(h.worker.providerHealth.degradation(provider: "expo") == nil)
        h.provider.failReceipts(classifyTransportError(Timeout()))
        for _ in 0..<3 {
            #expect(try await h.worker.runReceiptsDue().claimed == 1)
            h.clock.advance(byMilliseconds: 60_000)
        }
        let degradation = try #require(h.worker.providerHealth.degradation(provider: "expo"))
        #expect(degradation.failures == 3 && degradation.reason == "transport_error: timeout")
        #expect(h.provider.sends.count == 1, "only the receipt checks went unanswered")

        h.provider.failReceipts(nil)
        #expect(try await h.worker.runReceiptsDue().claimed == 1)
        #expect(h.worker.providerHealth.degradation(provider: "expo") == nil)
    }

    /// A receipt check the provider answered with an error (429) is an answer; one refused for a
    /// certificate counts, with that reason (ADR 0018).
    @Test func aReceiptCheckAnsweredWithAnErrorIsAnAnswer() async throws {
        let h = try DeliveryReceiptTests.Harness(maxAttempts: 10)
        _ = try await h.sent()
        h.provider.failReceipts(.certificateRejected("certificate has expired (exp.host port 443)"))
        for _ in 0..<2 {
            _ = try await h.worker.runReceiptsDue()
            h.clock.advance(byMilliseconds: 120_000)
        }
        h.provider.failReceipts(.applying(.retry(minimumDelay: nil), reason: "TOO_MANY_REQUESTS", status: 429, retryAfter: nil))
        _ = try await h.worker.runReceiptsDue()
        h.clock.advance(byMilliseconds: 120_000)
        h.provider.failReceipts(.certificateRejected("certificate has expired (exp.host port 443)"))
        _ = try await h.worker.runReceiptsDue()
        #expect(h.worker.providerHealth.degradation(provider: "expo") == nil, "the 429 ended the run: one failure since")
    }

    /// The device test push (and anything else outside the queue) counts through
    /// `noteHealth(provider:app:_:)`, under the guard's key.
    @Test func pushesOutsideTheQueueCountUnderTheirAppsKey() throws {
        let h = try DeliveryReceiptTests.Harness()
        let refused = classifyTransportError(Timeout())
        for _ in 0..<3 { h.worker.noteHealth(provider: .apns, app: "chat", refused) }
        #expect(h.worker.providerHealth.degradation(provider: "apns@chat")?.failures == 3)
        #expect(h.worker.providerHealth.degradation(provider: "apns") == nil)
        h.worker.noteHealth(provider: .apns, app: "chat", .sendByPassed)
        #expect(h.worker.providerHealth.degradation(provider: "apns@chat")?.failures == 3, "never sent: neither")
        h.worker.noteHealth(provider: .apns, app: "chat", PushClassification(outcome: .delivered(providerMessageID: nil), status: 200, rule: nil))
        #expect(h.worker.providerHealth.degradation(provider: "apns@chat") == nil)
        #expect(DeliveryWorker.healthKey(provider: "fcm", app: "default") == "fcm")
    }
}
