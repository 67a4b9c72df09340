import Foundation
import RealtimeMemory
import StorageSQLite
import Synchronization
import Testing

@testable import HeraldCore

/// A provider that confirms later, like Expo: every send is accepted with ticket `t-<n>`; receipts
/// answer from a script by id (missing: not ready yet), or fail as a whole.
final class FakeReceiptProvider: PushReceiptProvider {
    static let id = PushProviderID.expo
    static func validate(token: String) throws(DeviceTokenError) -> String { token }
    let maximumReceiptsPerRequest = 2

    private let state = Mutex<(tickets: Int, sends: [PushID], receipts: [String: PushClassification], failure: PushClassification?,
                               asked: [[String]], sendAnswer: PushClassification?)>((0, [], [:], nil, [], nil))

    var sends: [PushID] { state.withLock { $0.sends } }
    var asked: [[String]] { state.withLock { $0.asked } }
    func receipt(_ id: String, _ classification: PushClassification) { state.withLock { $0.receipts[id] = classification } }
    func failReceipts(_ classification: PushClassification?) { state.withLock { $0.failure = classification } }
    func answerSends(_ classification: PushClassification?) { state.withLock { $0.sendAnswer = classification } }

    func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
              completion: @escaping @Sendable (PushClassification) -> Void) {
        let answer: PushClassification = state.withLock { state in
            state.sends.append(pushID)
            if let answer = state.sendAnswer { return answer }
            state.tickets += 1
            return PushClassification(outcome: .delivered(providerMessageID: "t-\(state.tickets)"), status: 200, rule: nil,
                                      receiptID: "t-\(state.tickets)")
        }
        completion(answer)
    }

    func checkReceipts(_ ids: [String], completion: @escaping @Sendable (PushReceiptAnswer) -> Void) {
        let answer: PushReceiptAnswer = state.withLock { state in
            state.asked.append(ids)
            if let failure = state.failure { return .failed(failure) }
            return .receipts(state.receipts.filter { ids.contains($0.key) })
        }
        completion(answer)
    }
}

/// The worker's receipt rounds (PU-8a) on SQLite in memory and a manual clock: no timer, no sleep.
@Suite struct DeliveryReceiptTests {
    final class Harness: Sendable {
        let clock = ManualClock()
        let storage: SQLiteStorage
        let provider = FakeReceiptProvider()
        let worker: DeliveryWorker
        let guardian = MassDeletionGuard()
        static let delay: Int64 = 15 * 60_000, recheck: Int64 = 60_000

        /// - Parameter environmentExpo: whether the `default` app has the Expo provider too.
        /// Faults the worker's storage meets (`FaultyStorage` over `storage`); none unless armed.
        let faults = StorageFaults()

        init(maximumResends: Int = 2, maxAttempts: Int = 3, environmentExpo: Bool = true, log: Logger = .silent) throws {
            storage = try SQLiteStorage.open(path: ":memory:")
            var configuration = DeliveryWorker.Configuration()
            configuration.retry = RetryPolicy(baseMilliseconds: 1_000, capMilliseconds: 60_000, maxAttempts: maxAttempts)
            configuration.receiptDelayMilliseconds = Self.delay
            configuration.receiptRecheckMilliseconds = Self.recheck
            configuration.maximumResends = maximumResends
            worker = DeliveryWorker(storage: FaultyStorage(base: storage, faults: faults),
                                    providers: PushProviders(configured: environmentExpo ? [provider] : [], clock: clock),
                                    presence: MemoryPresenceStore(clock: clock), clock: clock, configuration: configuration, log: log,
                                    massDeletionGuard: guardian, jitter: { 0.5 })
        }

        deinit { storage.close() }

        var now: Int64 { clock.unixMilliseconds }

        func register(_ token: String, session: String = "s-1") throws -> DeviceRecord {
            let now = self.now
            return try storage.writeSync { tx in
                try tx.devices.register(DeviceRegistration(userID: "u-1", sessionID: session, platform: "ios", provider: "expo", token: token),
                                        sessionExpiresAt: nil, newID: "d-\(token)", now: now).device
            }
        }

        @discardableResult
        func enqueue(_ device: DeviceRecord) throws -> Int64 {
            let payload = DeliveryJobPayload(deviceID: device.id, apnsID: .random(), notification: PushNotification(title: "Hi"),
                                             origin: .init(notificationID: "n-1", userID: "u-1", sessionID: device.sessionID))
            let now = self.now
            return try storage.writeSync { tx in try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: payload.jsonText(), runAt: now, now: now) }
        }

        /// Gives the app `chat` this harness's provider, and queues a push to a new device of it.
        /// - Returns: the device.
        func enqueueChatPush() throws -> DeviceRecord {
            worker.providers.setProviders([provider], app: "chat")
            let now = self.now
            var chat = DeviceRegistration(userID: "u-1", sessionID: "s-chat", platform: "ios", provider: "expo", token: "ExponentPushToken[c]")
            chat.app = "chat"
            let registration = chat
            let device = try storage.writeSync { tx in try tx.devices.register(registration, sessionExpiresAt: nil, newID: "d-chat", now: now).device }
            let payload = DeliveryJobPayload(deviceID: device.id, apnsID: .random(), notification: PushNotification(title: "Hi"))
            try storage.writeSync { tx in _ = try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: payload.jsonText(), app: "chat", runAt: now, now: now) }
            return device
        }

        func jobs(_ state: JobState) throws -> [JobRecord] {
            try storage.readSync { tx in try tx.jobs.list(state: state, limit: 100, beforeID: nil) }
        }

        func receiptJobs() throws -> [JobRecord] {
            try JobState.allCases.flatMap { try jobs($0) }.filter { $0.kind == PushReceiptJobPayload.kind }
        }

        func device(_ id: String) throws -> DeviceRecord? {
            let now = self.now
            return try storage.readSync { tx in try tx.devices.find(id: id, now: now) }
        }

        /// Sends one push to a new device and moves the clock to its receipt.
        func sent(_ token: String = "ExponentPushToken[a]") async throws -> (DeviceRecord, JobRecord) {
            let device = try register(token)
            try enqueue(device)
            try await worker.runDue()
            clock.advance(byMilliseconds: Self.delay)
            return (device, try #require(try receiptJobs().max { $0.id < $1.id }))
        }
    }

    static let rateExceeded = PushClassification.applying(.retry(minimumDelay: nil), reason: "MessageRateExceeded", status: 200, retryAfter: nil)

    @Test func anAcceptedTicketQueuesItsReceiptCheckInTheSameTransaction() async throws {
        let h = try Harness()
        let device = try h.register("ExponentPushToken[a]")
        let sentAt = h.now
        let id = try h.enqueue(device)
        try await h.worker.runDue()
        let job = try #require(try h.storage.readSync { tx in try tx.jobs.find(id: id) })
        #expect(job.state == .done && job.lastError == "delivered: t-1")
        let receipts = try h.receiptJobs()
        try #require(receipts.count == 1)
        let receipt = receipts[0]
        #expect(receipt.state == .queued && receipt.runAt == sentAt + Harness.delay)
        let payload = try PushReceiptJobPayload.decode(receipt.payloadJSON)
        #expect(payload.receiptID == "t-1" && payload.provider == "expo" && payload.sentAt == sentAt)
        #expect(payload.delivery == (try DeliveryJobPayload.decode(job.payloadJSON)))
        // Not due before its delay.
        h.clock.advance(byMilliseconds: Harness.delay - 1)
        #expect(try await h.worker.runReceiptsDue().claimed == 0)
        #expect(h.provider.asked.isEmpty)
    }

    @Test func anOkReceiptEndsTheJobAndClearsAMisconfiguredProvider() async throws {
        let h = try Harness()
        h.guardian.recordMisconfiguration(provider: "expo", reason: "InvalidCredentials")
        let (_, receipt) = try await h.sent()
        // The ticket alone proves nothing about the credentials behind Expo.
        #expect(h.guardian.trippedReason(provider: "expo") == "InvalidCredentials")
        h.provider.receipt("t-1", .init(outcome: .delivered(providerMessageID: nil), status: 200, rule: nil))
        #expect(try await h.worker.runReceiptsDue() == DeliveryWorker.Round(claimed: 1))
        let done = try #require(try h.receiptJobs().first { $0.id == receipt.id })
        #expect(done.state == .done && done.lastError == "receipt_ok")
        #expect(h.guardian.trippedReason(provider: "expo") == nil)
    }

    @Test func deviceNotRegisteredDeletesTheDeviceUnlessItRegisteredAgain() async throws {
        let h = try Harness()
        let (device, _) = try await h.sent()
        h.provider.receipt("t-1", .applying(.deleteDevice, reason: "DeviceNotRegistered", status: 200, retryAfter: nil))
        try await h.worker.runReceiptsDue()
        #expect(try h.device(device.id) == nil)
        #expect(try h.receiptJobs().first?.lastError == "device_deleted: DeviceNotRegistered")
        #expect(h.worker.outcomeCounts.devicesDeleted == 1)

        let (again, receipt) = try await h.sent("ExponentPushToken[b]")
        _ = try h.register("ExponentPushToken[b]")   // registered again after the send
        h.provider.receipt("t-2", .applying(.deleteDevice, reason: "DeviceNotRegistered", status: 200, retryAfter: nil))
        try await h.worker.runReceiptsDue()
        #expect(try h.device(again.id) != nil)
        let kept = try h.receiptJobs().first { $0.id == receipt.id }
        #expect(kept?.lastError == "token_rejected_but_reregistered: DeviceNotRegistered", "\(String(describing: kept))")
    }

    /// rotation10 (ADR 0014): a receipt job named the device the push went to; after a token
    /// rotation its resend ended `device_gone`. It moves with the rotation: the resend goes to
    /// the new device, and the receipt's verdict on the old token leaves the new device alone,
    /// even one registered in the very millisecond of the send.
    @Test(arguments: ["MessageRateExceeded", "DeviceNotRegistered"])
    func aReceiptDueWhenItsTokenRotatesResendsToTheNewDeviceAndNeverDeletesIt(reason: String) async throws {
        let h = try Harness()
        let old = try h.register("ExponentPushToken[a]")
        try h.enqueue(old)
        try await h.worker.runDue()
        let new = try h.register("ExponentPushToken[b]")   // same session and platform: a rotation
        #expect(try h.device(old.id) == nil)
        let receipt = try #require(try h.receiptJobs().first)
        let moved = try PushReceiptJobPayload.decode(receipt.payloadJSON)
        #expect(moved.delivery.deviceID == new.id && moved.sentDeviceID == old.id && moved.receiptID == "t-1")
        h.clock.advance(byMilliseconds: Harness.delay)
        if reason == "DeviceNotRegistered" {
            h.provider.receipt("t-1", .applying(.deleteDevice, reason: reason, status: 200, retryAfter: nil))
            try await h.worker.runReceiptsDue()
            #expect(try h.device(new.id) != nil)
            #expect(try h.receiptJobs().first?.lastError == "token_rejected_but_reregistered: DeviceNotRegistered")
            #expect(h.worker.outcomeCounts.devicesDeleted == 0)
        } else {
            h.provider.receipt("t-1", Self.rateExceeded)
            try await h.worker.runReceiptsDue()
            let resent = try #require(try h.jobs(.queued).first { $0.kind == DeliveryJobPayload.kind })
            #expect(try DeliveryJobPayload.decode(resent.payloadJSON).deviceID == new.id)
            h.clock.advance(byMilliseconds: 500)
            try await h.worker.runDue()
            let done = try #require(try h.storage.readSync { tx in try tx.jobs.find(id: resent.id) })
            #expect(done.state == .done && done.lastError == "delivered: t-2")
            #expect(h.provider.sends.count == 2 && h.provider.sends[0] == h.provider.sends[1])
        }
    }

    @Test func messageRateExceededSendsThePushAgainAfterABackoffThenGivesUp() async throws {
        let h = try Harness(maximumResends: 1)
        let (_, receipt) = try await h.sent()
        let first = try PushReceiptJobPayload.decode(receipt.payloadJSON)
        h.provider.receipt("t-1", Self.rateExceeded)
        try await h.worker.runReceiptsDue()
        let resent = try #require(try h.jobs(.queued).first { $0.kind == DeliveryJobPayload.kind })
        let payload = try DeliveryJobPayload.decode(resent.payloadJSON)
        #expect(payload.resends == 1 && payload.apnsID == first.delivery.apnsID)   // same push id: shown at most once
        #expect(resent.runAt == h.now + 500)   // the first backoff: base × jitter 0.5
        h.clock.advance(byMilliseconds: 500)
        try await h.worker.runDue()
        #expect(h.provider.sends.count == 2 && h.provider.sends[0] == h.provider.sends[1])
        // The second receipt also says so: one resend is all it may do.
        h.clock.advance(byMilliseconds: Harness.delay)
        h.provider.receipt("t-2", Self.rateExceeded)
        try await h.worker.runReceiptsDue()
        let dead = try h.jobs(.dead)
        #expect(dead.count == 1 && dead[0].kind == PushReceiptJobPayload.kind)
        #expect(dead[0].deadCause == DeadLetterCause(provider: "expo", reason: "MessageRateExceeded"))
    }

    /// ADR 0006: a push's receipt check and its resend are jobs of the push's app, so that app's
    /// server key lists and retries them.
    @Test func theReceiptCheckAndTheResendOfAnAppsPushAreThatAppsJobs() async throws {
        let h = try Harness()
        _ = try h.enqueueChatPush()
        try await h.worker.runDue()
        let receipt = try #require(try h.storage.readSync { tx in try tx.jobs.list(app: "chat", state: .queued, limit: 10, beforeID: nil) }.first)
        #expect(receipt.kind == PushReceiptJobPayload.kind && receipt.app == "chat")
        #expect(try h.receiptJobs().isEmpty, "none is the default app's")
        h.clock.advance(byMilliseconds: Harness.delay)
        h.provider.receipt("t-1", Self.rateExceeded)
        try await h.worker.runReceiptsDue()
        let resent = try h.storage.readSync { tx in try tx.jobs.list(app: "chat", state: .queued, limit: 10, beforeID: nil) }
        #expect(resent.map(\.kind) == [DeliveryJobPayload.kind] && resent.first?.app == "chat")
    }

    /// audience13: the app's Expo access token replaced (PATCH of its credentials) while its
    /// receipt check was on the wire, the old token refused (401): the check is made again with
    /// the new token in the same round; its receipt completes the job, nothing dead-lettered,
    /// no attempt counted, the provider not marked misconfigured.
    @Test func aReceiptCheckRefusedForAReplacedAccessTokenIsAskedAgainWithTheNewOne() async throws {
        /// Replaces the app's providers with `next` while its one check is "on the wire", then
        /// answers that check 401 for its (old) token.
        final class Rotated: PushReceiptProvider {
            static let id = PushProviderID.expo
            static func validate(token: String) throws(DeviceTokenError) -> String { token }
            let maximumReceiptsPerRequest = 300
            let rotate: @Sendable () -> Void
            init(rotate: @escaping @Sendable () -> Void) { self.rotate = rotate }
            func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
                      completion: @escaping @Sendable (PushClassification) -> Void) {}
            func checkReceipts(_ ids: [String], completion: @escaping @Sendable (PushReceiptAnswer) -> Void) {
                rotate()
                completion(.failed(.applying(.deadLetterConfiguration, reason: "http_401", status: 401, retryAfter: nil)))
            }
        }
        let h = try Harness(environmentExpo: false)
        _ = try h.enqueueChatPush()
        try await h.worker.runDue()
        h.clock.advance(byMilliseconds: Harness.delay)
        let providers = h.worker.providers, next = h.provider
        providers.setProviders([Rotated(rotate: { providers.setProviders([next], app: "chat") })], app: "chat")
        h.provider.receipt("t-1", PushClassification(outcome: .delivered(providerMessageID: "t-1"), status: 200, rule: nil))
        #expect(try await h.worker.runReceiptsDue().claimed == 1)
        let receipt = try #require(try h.storage.readSync { tx in try tx.jobs.list(app: "chat", state: .done, limit: 10, beforeID: nil) }
            .first { $0.kind == PushReceiptJobPayload.kind })
        #expect(receipt.lastError == "receipt_ok" && receipt.attempts == 1)
        #expect(h.provider.asked == [["t-1"]], "asked again with the new token")
        #expect(h.guardian.trippedAppProviders.isEmpty)
    }

    @Test func messageTooBigDeadLettersAndKeepsTheDevice() async throws {
        let h = try Harness()
        let (device, _) = try await h.sent()
        h.provider.receipt("t-1", .applying(.deadLetterRequest, reason: "MessageTooBig", status: 200, retryAfter: nil))
        try await h.worker.runReceiptsDue()
        let dead = try #require(try h.jobs(.dead).first)
        #expect(dead.deadCause == DeadLetterCause(provider: "expo", reason: "MessageTooBig"))
        #expect(try h.device(device.id) != nil)
        #expect(h.guardian.trippedReason(provider: "expo") == nil)
    }

    @Test("RL-2 (lows13): a receipt's dead letter refused at its commit is neither counted nor logged until it is stored")
    func aReceiptDeadLetterRefusedAtItsCommitIsCountedAndLoggedOnceStored() async throws {
        let log = CapturedLog()
        let h = try Harness(log: log.logger)
        _ = try await h.sent()
        let before = h.worker.outcomeCounts
        h.provider.receipt("t-1", .applying(.deadLetterRequest, reason: "MessageTooBig", status: 200, retryAfter: nil))
        h.faults.fail(.committingOutcome, times: 1)
        try await h.worker.runReceiptsDue()
        #expect(h.faults.count(.committingOutcome) == 1)
        #expect(try h.jobs(.dead).isEmpty)
        #expect(h.worker.outcomeCounts == before, "nothing stored, nothing counted")
        #expect(log.count(nil, "receipt dead-lettered") == 0)
        // The lease runs out, the check comes back and is stored this time: said and counted once.
        h.clock.advance(byMilliseconds: 120_000)
        try await h.worker.runReceiptsDue()
        #expect(try h.jobs(.dead).count == 1)
        #expect(h.worker.outcomeCounts.dead == before.dead + 1)
        #expect(log.count(.warning, "push receipt dead-lettered") == 1)
    }

    @Test(arguments: ["InvalidCredentials", "MismatchSenderId"])
    func credentialErrorsMarkTheProviderMisconfiguredAndKeepDevices(reason: String) async throws {
        let h = try Harness()
        let (device, _) = try await h.sent()
        h.provider.receipt("t-1", .applying(.deadLetterConfiguration, reason: reason, status: 200, retryAfter: nil))
        try await h.worker.runReceiptsDue()
        #expect(try h.jobs(.dead).first?.deadCause == DeadLetterCause(provider: "expo", reason: reason))
        #expect(try h.device(device.id) != nil)
        #expect(h.guardian.trippedReason(provider: "expo") == reason)
    }

    @Test func aMissingReceiptIsAskedForAgainUntilTheWindowCloses() async throws {
        let h = try Harness()
        let (_, receipt) = try await h.sent()
        try await h.worker.runReceiptsDue()
        var job = try #require(try h.receiptJobs().first)
        #expect(job.state == .queued && job.runAt == h.now + Harness.recheck && job.uncountedAttempts == 1)
        h.clock.advance(byMilliseconds: 24 * 3_600_000)
        try await h.worker.runReceiptsDue()
        job = try #require(try h.receiptJobs().first { $0.id == receipt.id })
        #expect(job.state == .done && job.lastError?.hasPrefix("receipt_unavailable") == true)
    }

    @Test func aFailedReceiptRequestRetriesTheCheckWithBackoff() async throws {
        let h = try Harness()
        _ = try await h.sent()
        h.provider.failReceipts(.applying(.retry(minimumDelay: nil), reason: "TOO_MANY_REQUESTS", status: 429, retryAfter: 30))
        try await h.worker.runReceiptsDue()
        let job = try #require(try h.receiptJobs().first)
        // Retry-After, then the jitter on top: 0.5 of the first backoff's ceiling, the 1 s base.
        #expect(job.state == .queued && job.runAt == h.now + 30_500 && job.lastError == "TOO_MANY_REQUESTS")
        #expect(h.provider.sends.count == 1)   // the push itself is not sent again
    }

    @Test func receiptsDueTogetherAreAskedForTogetherInChunks() async throws {
        let h = try Harness()
        for token in ["a", "b", "c"] { try h.enqueue(try h.register("ExponentPushToken[\(token)]", session: "s-\(token)")) }
        try await h.worker.runDue()
        h.clock.advance(byMilliseconds: Harness.delay)
        #expect(try await h.worker.runReceiptsDue().claimed == 3)
        // The provider takes two ids per request.
        #expect(h.provider.asked.map { $0.count }.sorted() == [1, 2] && Set(h.provider.asked.flatMap { $0 }) == ["t-1", "t-2", "t-3"])
    }

    @Test func aDeadReceiptRetriedByAnOperatorSendsThePushAgain() async throws {
        let h = try Harness()
        let (_, receipt) = try await h.sent()
        h.provider.receipt("t-1", .applying(.deadLetterConfiguration, reason: "InvalidCredentials", status: 200, retryAfter: nil))
        try await h.worker.runReceiptsDue()
        let now = h.now
        #expect(try h.storage.writeSync { tx in try tx.jobs.retryDead(id: receipt.id, now: now) })
        try await h.worker.runReceiptsDue()
        #expect(h.provider.asked.count == 1)   // not asked again: the verdict on a receipt never changes
        let resent = try #require(try h.jobs(.queued).first { $0.kind == DeliveryJobPayload.kind })
        #expect(resent.runAt == h.now)
        try await h.worker.runDue()
        #expect(h.provider.sends.count == 2)
    }

    /// A database that is down fails every receipt round (one a second): the worker says so once
    /// per 30 s with the count held back, as it does for push claims (operations.md), not once a
    /// round (breaker8: a 13 s PostgreSQL outage logged it 12 times per node).
    @Test func failedReceiptClaimsAreLoggedOncePer30SecondsWithTheCountHeldBack() async throws {
        let clock = ManualClock()
        let storage = try SQLiteStorage.open(path: ":memory:")
        defer { storage.close() }
        let faults = StorageFaults()
        faults.fail(.claimed, times: 100)
        let lines = Mutex<[(String, [String: String])]>([])
        let log = Logger { level, message, metadata in
            if level == .error { lines.withLock { $0.append((message, metadata)) } }
        }
        var configuration = DeliveryWorker.Configuration()
        configuration.receiptPollMilliseconds = 0
        let worker = DeliveryWorker(storage: FaultyStorage(base: storage, faults: faults),
                                    providers: PushProviders(configured: [FakeReceiptProvider()], clock: clock),
                                    presence: MemoryPresenceStore(clock: clock), clock: clock, configuration: configuration, log: log)
        /// One receipt round started on the worker's queue, awaited until it has ended.
        func round() async {
            worker.queue.sync { worker.pollReceiptsIfDue() }
            while worker.queue.sync(execute: { worker.checkingReceipts }) { await Task.yield() }
        }
        for _ in 0..<4 { await round() }
        #expect(faults.count(.claimed) == 4)
        clock.advance(byMilliseconds: 30_000)
        await round()
        let logged = lines.withLock { $0 }
        #expect(logged.map(\.0) == ["claiming push receipt jobs failed", "claiming push receipt jobs failed"])
        #expect(logged.first?.1["repeated"] == nil && logged.last?.1["repeated"] == "3")
    }

    @Test func aTicketConfigurationErrorMarksAReceiptProviderMisconfigured() async throws {
        let h = try Harness()
        h.provider.answerSends(.applying(.deadLetterConfiguration, reason: "InvalidCredentials", status: 200, retryAfter: nil))
        try h.enqueue(try h.register("ExponentPushToken[a]"))
        try await h.worker.runDue()
        #expect(h.guardian.trippedReason(provider: "expo") == "InvalidCredentials")
        #expect(try h.receiptJobs().isEmpty)
    }

    /// breaker11: the check asked whether the environment's Expo was a relay, so a stored app's
    /// Expo (the usual production shape: no `HERALD_EXPO_*`, the app's access token) refused by
    /// Expo for the app's credentials never showed `expo@chat` misconfigured on `/readyz`.
    @Test func aTicketConfigurationErrorMarksAStoredAppsExpoMisconfiguredWithoutTheEnvironmentsExpo() async throws {
        let h = try Harness(environmentExpo: false)
        h.provider.answerSends(.applying(.deadLetterConfiguration, reason: "InvalidCredentials", status: 200, retryAfter: nil))
        let device = try h.enqueueChatPush()
        try await h.worker.runDue()
        #expect(h.guardian.trippedReason(provider: "expo@chat") == "InvalidCredentials")
        #expect(h.guardian.trippedAppProviders.map(\.provider) == ["expo@chat"])
        #expect(try h.device(device.id) != nil)
    }
}
