import Foundation
@testable import HeraldCore
import RealtimeMemory
import StorageSQLite
import Synchronization
import Testing

/// The choke point on the memory broker and presence, SQLite in memory and a manual clock (NO-1,
/// NO-2, NO-8): which device is pushed and which is not, `unless_acked`, idempotency, expiry,
/// a broker outage and recovery of an abandoned plan — no server, no sleeps.
@Suite struct NotifierTests {
    /// Stands in for the event loops: every personal message the broker hands over is "written"
    /// to the connections the test marked as reachable, so presence knows who received it, and
    /// the barrier is then passed at once.
    final class Loops: DeliveryBarrier, Sendable {
        let presence: MemoryPresenceStore
        /// user id → connection ids the loops write to (a connection not listed is wedged).
        let reachable = Mutex<[String: [String]]>([:])
        let barriers = Mutex(0)

        init(broker: MemoryBroker, presence: MemoryPresenceStore) {
            self.presence = presence
            broker.setInboundHandler { [weak self] messages in
                guard let self else { return }
                for message in messages {
                    guard message.channel.rawValue.hasPrefix("user:") else { continue }
                    let user = String(message.channel.rawValue.dropFirst(5))
                    for connection in reachable.withLock({ $0[user] ?? [] }) {
                        self.presence.deliveredPersonal(connectionID: connection, sequence: message.sequence)
                    }
                }
            }
        }

        func afterPendingDeliveries(timeoutNanoseconds: UInt64, _ done: @escaping @Sendable () -> Void) {
            barriers.withLock { $0 += 1 }
            done()
        }
    }

    /// A broker whose store is down.
    final class DownBroker: Broker {
        let epoch: UInt32 = 1
        func setInboundHandler(_ handler: @escaping BrokerInboundHandler) {}
        func publish(_ batch: [PublishRequest]) throws(BrokerError) -> [PublishReceipt] { throw .unavailable("test") }
        func subscribe(_ channels: [ChannelName], resume: ResumePoint) throws(BrokerError) -> SubscribeSnapshot { throw .unavailable("test") }
        func unsubscribe(_ channels: [ChannelName]) {}
        func history(_ channel: ChannelName, after position: StreamCursor) throws(BrokerError) -> ChannelHistory { throw .unavailable("test") }
        func retained(_ channel: ChannelName) throws(BrokerError) -> ChannelMessage? { throw .unavailable("test") }
        func clearRetained(_ channel: ChannelName) throws(BrokerError) { throw .unavailable("test") }
        func sweep() {}
        func removeChannels(app: String) throws(BrokerError) { throw .unavailable("test") }
        var publishedCount: UInt64 { 0 }
    }

    /// A provider that is configured and never asked to send here (the worker sends).
    struct Configured: PushProvider {
        static let id = PushProviderID.apns
        static func validate(token: String) throws(DeviceTokenError) -> String { token }
        func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
                  completion: @escaping @Sendable (PushClassification) -> Void) {
            Issue.record("the notifier never sends")
        }
    }

    final class Harness: Sendable {
        let clock = ManualClock()
        let storage: SQLiteStorage
        let broker: MemoryBroker
        let presence: MemoryPresenceStore
        let loops: Loops
        let notifier: Notifier
        let queued = Counter()
        /// Faults the notifier's storage meets (`FaultyStorage` over `storage`); none unless armed.
        let faults = StorageFaults()
        /// With `worker: true`: the provider the worker sends to, and the worker (not started).
        let provider = FakePushProvider()
        let worker: DeliveryWorker?

        /// - Parameters:
        ///   - profiles: other apps' profiles (none by default).
        ///   - appsWithProviders: other apps given the same configured provider as `default`.
        init(broker: (any Broker)? = nil, catalog: NotificationCatalog = .empty, payload: PayloadOptions = .flat,
             profiles: @escaping @Sendable (String) -> AppProfile? = { _ in nil }, appsWithProviders: [String] = [],
             backlog: PushBacklog? = nil, worker withWorker: Bool = false) throws {
            storage = try SQLiteStorage.open(path: ":memory:")
            self.broker = MemoryBroker(clock: clock)
            presence = MemoryPresenceStore(leaseSeconds: 45, clock: clock)
            loops = Loops(broker: self.broker, presence: presence)
            let queued = self.queued
            let providers = withWorker ? PushProviders(configured: [provider]) : PushProviders(configured: [Configured()])
            for app in appsWithProviders { providers.setProviders([Configured()], app: app) }
            let database = FaultyStorage(base: storage, faults: faults)
            if withWorker {
                var configuration = DeliveryWorker.Configuration()
                // Only the start's poll: the timer does not claim behind the test's back.
                configuration.pollMilliseconds = 3_600_000
                worker = DeliveryWorker(storage: database, providers: providers, presence: presence, clock: clock,
                                        configuration: configuration, backlog: backlog)
            } else {
                worker = nil
            }
            notifier = Notifier(database: database, broker: broker ?? self.broker, presence: presence, barrier: loops,
                                providers: providers, catalog: catalog, payload: payload, profiles: profiles, clock: clock,
                                nodeID: "node-a", pushQueued: { queued.add() }, pushBacklog: backlog, worker: worker)
        }

        /// A registered iOS device of `user` in session `session`.
        @discardableResult
        func device(user: String, session: String) throws -> DeviceRecord {
            let now = clock.unixMilliseconds
            return try storage.writeSync { tx in
                try tx.devices.register(DeviceRegistration(userID: user, sessionID: session, platform: "ios", provider: "apns",
                                                           token: "ab" + session.utf8.map { String($0, radix: 16) }.joined()),
                                        sessionExpiresAt: nil, newID: "dev_\(user)_\(session)", now: now).device
            }
        }

        /// An open stream of `user`'s session, in `state`; `reachable`: whether the loops write to it.
        func connect(_ id: String, user: String, session: String, state: AppState, reachable: Bool = true) {
            presence.connected(connectionID: id, userID: user, sessionID: session, transport: .sse, state: state, channels: [])
            if reachable { loops.reachable.withLock { $0[user, default: []].append(id) } }
            _ = try? broker.subscribe([ChannelName.personal(userID: user)!], resume: .fresh)
        }

        func call(_ users: [String], policy: NotificationPlan.Policy = .auto, ackWindow: Int = 3_000, expiresAt: Int64? = nil,
                  key: String? = nil, hash: String = "", kind: String = "k", scope: String? = nil,
                  recipients: Recipients? = nil) -> NotificationCall {
            let plan = NotificationPlan(kind: kind, scope: scope, title: ["*": "T"], body: nil, arguments: [:], data: [:],
                                        collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil, priority: "normal",
                                        expiresAt: expiresAt, badge: nil, persist: true, policy: policy,
                                        ackWindowMilliseconds: ackWindow, type: .alert, audience: "everyone", trackOpens: false,
                                        idempotencyKey: key)
            return NotificationCall(recipients: recipients ?? .users(users), plan: plan, live: nil, idempotencyKey: key, requestHash: hash,
                                    planJSON: plan.jsonText(), titleJSON: JSONText.object(["*": "T"]), bodyJSON: nil,
                                    argsJSON: nil, dataJSON: "{}")
        }

        /// What node-b's step 1 leaves (PostgreSQL, several nodes) before its step 2 runs: the
        /// notification `id` of `call` (to u1), its plan held by node-b under a running lease, and
        /// the key reserved with its provisional answer. - Returns: the plan's id.
        @discardableResult
        func storedByNodeB(_ call: NotificationCall, id: String, key: String, hash: String) throws -> Int64 {
            let now = clock.unixMilliseconds
            return try storage.writeSync { tx -> Int64 in
                let plan = try tx.plans.insert(PendingPlan(planJSON: call.planJSON, createdAt: now, claimedBy: "node-b",
                                                           leaseUntil: now + Notifier.planLeaseMilliseconds))
                _ = try tx.notifications.insert(NotificationRecord(id: id, userID: "u1", kind: "k", titleJSON: call.titleJSON,
                                                                   bodyJSON: nil, argsJSON: nil, dataJSON: "{}", planID: plan, createdAt: now))
                try tx.idempotency.reserve(IdempotencyRecord(
                    key: key, requestHash: hash,
                    responseJSON: #"{"notifications":[{"id":"\#(id)","user_id":"u1","event_id":null}],"push_planning":"deferred"}"#,
                    complete: false, createdAt: now))
                return plan
            }
        }

        func send(_ call: NotificationCall) async -> NotificationAnswer {
            await withCheckedContinuation { continuation in notifier.send(call) { continuation.resume(returning: $0) } }
        }

        /// The answer's JSON as an object (the 201 body).
        func created(_ answer: NotificationAnswer) throws -> [String: Any] {
            guard case .created(let json) = answer else { throw Unexpected(answer: "\(answer)") }
            return try #require(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        }

        func outcomes(_ notificationID: String) throws -> [DeliveryOutcome] {
            try storage.readSync { try $0.deliveries.list(notificationID: notificationID) }.map(\.outcome)
        }

        func jobs() throws -> [JobRecord] {
            try storage.readSync { try $0.jobs.list(state: .queued, limit: 100, beforeID: nil) }
        }
    }

    struct Unexpected: Error { let answer: String }

    static func object(_ json: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    @Test("RL-2: a call stored whose planning fails is a 202 with its ids, never a 5xx; recovery plans it; its key replays meanwhile")
    func storedButNotPlannedIsAccepted() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "phone")
        h.faults.fail(.planning, times: 1)
        let call = h.call(["u1"], key: "k-1", hash: "h-1")
        guard case .accepted(let json, replayed: false) = await h.send(call) else { Issue.record("not accepted"); return }
        let body = try Self.object(json)
        #expect(body["push_planning"] as? String == "deferred")
        #expect(body["push_queued"] as? Int == 0 && body["live_delivered"] as? Int == 0)
        let notifications = try #require(body["notifications"] as? [[String: Any]])
        let id = try Self.firstID(body)
        #expect(notifications.count == 1 && notifications[0]["user_id"] as? String == "u1")
        #expect(notifications[0]["event_id"] is String, "broadcast before planning: the event id is known")
        #expect(try h.storage.readSync { try $0.notifications.find(id: id) } != nil, "stored")
        #expect(try h.jobs().isEmpty && h.faults.count(.planning) == 1)

        // A repeat with the key before recovery: the stored answer again, not 409, nothing stored twice.
        guard case .accepted(let again, replayed: true) = await h.send(call) else { Issue.record("repeat not accepted"); return }
        #expect(try Self.firstID(Self.object(again)) == id)
        #expect(try Self.object(again)["push_planning"] as? String == "deferred")
        #expect(try h.storage.readSync { try $0.notifications.page(userID: "u1", unreadOnly: false, before: nil, limit: 10) }.count == 1)

        // Recovery plans it (the failed planning released its plan), and the key replays that.
        h.notifier.runRecovery()
        #expect(try h.jobs().count == 1)
        #expect(try h.outcomes(id) == [.queued])
        guard case .replayed(let planned) = await h.send(call) else { Issue.record("not replayed"); return }
        #expect(try Self.object(planned)["push_queued"] as? Int == 1)
        #expect(try Self.object(planned)["push_planning"] == nil)
    }

    @Test("RL-2: a call whose storing fails stores nothing and fails; a retry with its key stores it once")
    func failedStoringStoresNothing() async throws {
        let h = try Harness()
        h.faults.fail(.storing, times: 1)
        let call = h.call(["u1"], key: "k-2", hash: "h-2")
        guard case .failed(let error) = await h.send(call), case .diskFull? = error as? StorageError else {
            Issue.record("a failed store should fail with its storage error")
            return
        }
        #expect(try h.storage.readSync { try $0.notifications.page(userID: "u1", unreadOnly: false, before: nil, limit: 10) }.isEmpty)
        let body = try h.created(await h.send(call))
        #expect((body["notifications"] as? [[String: Any]])?.count == 1)
    }

    @Test("a repeat of a key whose call is still being planned is in progress, not a deferred replay")
    func aRepeatInTheSameBatchIsInProgress() async throws {
        let h = try Harness()
        let call = h.call(["u1"], key: "k-3", hash: "h-3")
        let answers = await withTaskGroup(of: NotificationAnswer.self) { group in
            for _ in 0..<4 { group.addTask { await h.send(call) } }
            var answers: [NotificationAnswer] = []
            for await answer in group { answers.append(answer) }
            return answers
        }
        var created = 0, other = 0
        for answer in answers {
            switch answer {
            case .created: created += 1
            case .refused(.idempotencyInProgress), .replayed: other += 1
            default: Issue.record("unexpected \(answer)")
            }
        }
        #expect(created == 1 && other == 3)
    }

    @Test("a repeat of a key whose node died holding its plan (the storage knows, ADR 0023) is a deferred replay at once, and its pushes are planned now")
    func aRepeatOfADeadNodesCallIsReplayedAndPlannedAtOnce() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "phone")
        let call = h.call(["u1"], key: "k-dead", hash: "h-dead")
        // What node-b's step 1 left when its process died before step 2.
        try h.storedByNodeB(call, id: "ntf_dead", key: "k-dead", hash: "h-dead")
        guard case .refused(.idempotencyInProgress) = await h.send(call) else { Issue.record("not in progress while node-b may live"); return }
        h.notifier.recovery.sync {}
        #expect(try h.outcomes("ntf_dead").isEmpty, "a live holder's plan is left alone")

        h.faults.holdersGone(["node-b"])
        guard case .accepted(let json, replayed: true) = await h.send(call) else { Issue.record("not a deferred replay"); return }
        #expect(try Self.firstID(Self.object(json)) == "ntf_dead")
        // The repeat asked for recovery: it ran (no pass of the timer, no lease over) and planned the call.
        h.notifier.recovery.sync {}
        #expect(try h.outcomes("ntf_dead") == [.queued])
        #expect(try h.jobs().count == 1)
        guard case .replayed = await h.send(call) else { Issue.record("not the planned answer after recovery"); return }
    }

    @Test("a repeat of a key another node stored and still holds is in progress; once its plan is released or its lease over, a deferred replay")
    func aRepeatOfAnotherNodesCallInFlightIsInProgress() async throws {
        let h = try Harness()
        let call = h.call(["u1"], key: "k-4", hash: "h-4")
        let now = h.clock.unixMilliseconds
        // node-b's step 1, before its step 2 runs.
        let plan = try h.storedByNodeB(call, id: "ntf_b1", key: "k-4", hash: "h-4")
        guard case .refused(.idempotencyInProgress) = await h.send(call) else { Issue.record("not in progress while node-b holds it"); return }

        // node-b's planning failed and released its plan: the stored answer, not 409.
        try h.storage.writeSync { tx in _ = try tx.plans.release(ids: [plan], by: "node-b") }
        guard case .accepted(let json, replayed: true) = await h.send(call) else { Issue.record("not a deferred replay"); return }
        #expect(try Self.firstID(Self.object(json)) == "ntf_b1")

        // node-b died holding it: in progress until the lease runs out, then the stored answer.
        try h.storage.writeSync { tx in _ = try tx.plans.claim(by: "node-b", after: 0, limit: 10, leaseMilliseconds: 5_000, now: now) }
        guard case .refused(.idempotencyInProgress) = await h.send(call) else { Issue.record("not in progress under node-b's lease"); return }
        h.clock.advance(byMilliseconds: 5_001)
        guard case .accepted(_, replayed: true) = await h.send(call) else { Issue.record("not a deferred replay after the lease"); return }
        #expect(try h.storage.readSync { try $0.notifications.page(userID: "u1", unreadOnly: false, before: nil, limit: 10) }.count == 1,
                "nothing stored twice")
    }

    @Test("audience13: a keyed call that reached nobody stores its final answer with its key: a repeat after its node died between its two steps replays it at once, not 409 for the plan's lease")
    func aKeyedCallThatReachedNobodyIsCompleteAtItsStore() async throws {
        let h = try Harness()
        let call = h.call([], key: "k-nobody", hash: "h-nobody", recipients: .scopePermission(scope: "empty", permission: nil))
        // Step 1 alone, as a node that died before its broadcast and planning left it.
        let notifier = h.notifier
        let stored = try h.storage.writeSync { tx in
            var keys: Set<String> = []
            return try notifier.store(Notifier.Call(request: call) { _ in }, tx: tx, batchKeys: &keys)
        }
        guard case .fresh(let records, _, let plan) = stored else { Issue.record("not stored fresh"); return }
        #expect(records.isEmpty && plan == nil, "no notification, no plan: nothing names a holder")
        let record = try #require(try h.storage.readSync { tx in try tx.idempotency.find(app: "default", key: "k-nobody", notBefore: 0) })
        #expect(record.complete)
        guard case .replayed(let json) = await h.send(call) else { Issue.record("not replayed at once"); return }
        let body = try Self.object(json)
        #expect((body["notifications"] as? [Any])?.isEmpty == true && body["push_planning"] == nil)
        // The same call never keyed before answers the same body (201), planned as before.
        let fresh = try h.created(await h.send(h.call([], key: "k-other", hash: "h-other", recipients: .scopePermission(scope: "empty", permission: nil))))
        #expect(fresh.keys.sorted() == body.keys.sorted())
    }

    @Test("the first notification id of a stored answer; none when the answer has none or is not JSON")
    func firstNotificationIDOfAnAnswer() {
        #expect(Notifier.firstNotificationID(inAnswer: #"{"notifications":[{"id":"ntf_1"},{"id":"ntf_2"}]}"#) == "ntf_1")
        #expect(Notifier.firstNotificationID(inAnswer: #"{"notifications":[]}"#) == nil)
        #expect(Notifier.firstNotificationID(inAnswer: "not json") == nil)
    }

    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }

    static func firstID(_ body: [String: Any]) throws -> String {
        let notifications = try #require(body["notifications"] as? [[String: Any]])
        return try #require(notifications.first?["id"] as? String)
    }

    @Test("a device whose session saw the event live in the foreground is not pushed; a backgrounded one is, at once")
    func foregroundSuppressesBackgroundPushes() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "phone")
        try h.device(user: "u1", session: "tablet")
        h.connect("c-phone", user: "u1", session: "phone", state: .foreground)
        h.connect("c-tablet", user: "u1", session: "tablet", state: .background)
        #expect(h.notifier.metrics.stored == 0 && h.notifier.metrics.outcomes.isEmpty)
        let body = try h.created(await h.send(h.call(["u1"])))
        // `/metrics`' counters follow the answer.
        #expect(h.notifier.metrics.stored == 1)
        #expect(h.notifier.metrics.outcomes == ["live_delivered": 2, "queued": 1, "suppressed_foreground": 1, "skipped": 0])
        #expect(body["live_delivered"] as? Int == 2)
        #expect(body["push_suppressed"] as? Int == 1)
        #expect(body["push_queued"] as? Int == 1)
        let id = try Self.firstID(body)
        #expect(try h.outcomes(id).sorted { $0.rawValue < $1.rawValue } == [.liveDelivered, .liveDelivered, .queued, .suppressedForeground])
        let jobs = try h.jobs()
        #expect(jobs.count == 1)
        #expect(jobs.first?.runAt == h.clock.unixMilliseconds)
        let payload = try DeliveryJobPayload.decode(#require(jobs.first).payloadJSON)
        #expect(payload.deviceID == "dev_u1_tablet")
        #expect(h.queued.value == 1)
    }

    @Test("ADR 0007: with the node's worker polling, a push due now is leased at insert and sent without a claim; one due later is queued for a claim",
          .timeLimit(.minutes(1)))
    func plannedPushesAreLeasedAtInsert() async throws {
        let backlog = PushBacklog(limit: 10)
        let h = try Harness(backlog: backlog, worker: true)
        let worker = try #require(h.worker)
        let phone = try h.device(user: "u1", session: "phone")
        try h.device(user: "u2", session: "tablet")
        h.provider.script(phone.token, .hold)
        var held = h.provider.held.makeAsyncIterator()
        worker.start()
        // The start's own poll: a claim that finds nothing; the timer does not fire again.
        while h.faults.claims.isEmpty { await Task.yield() }
        let body = try h.created(await h.send(h.call(["u1"])))
        #expect(body["push_queued"] as? Int == 1)
        let answer = try #require(await held.next())
        #expect(h.provider.sent.map(\.token) == [phone.token])
        #expect(h.faults.claims.count == 1, "sent without a claim")
        #expect(try h.storage.readSync { try $0.jobs.list(state: .leased, limit: 10, beforeID: nil) }.count == 1)
        #expect(h.queued.value == 0 && backlog.depth == 0, "nothing queued for a claim: no wake-up, no backlog")
        answer(.delivered("apns-1"))
        while worker.outcomeCounts.delivered < 1 { await Task.yield() }
        let id = try Self.firstID(body)
        let job = try #require(h.storage.readSync { try $0.jobs.list(state: .done, limit: 10, beforeID: nil) }.first)
        #expect(job.attempts == 1)
        let entries = try h.storage.readSync { try $0.deliveries.list(notificationID: id) }
        #expect(entries.map(\.outcome) == [.queued, .sent] && entries.allSatisfy { $0.jobID == job.id })

        // unless_acked: due when the window ends, so queued for a claim as before (counted, worker woken).
        h.connect("c-u2", user: "u2", session: "tablet", state: .foreground)
        let later = try h.created(await h.send(h.call(["u2"], policy: .unlessAcked, ackWindow: 5_000)))
        #expect(later["push_queued"] as? Int == 1)
        #expect(try h.jobs().count == 1 && h.queued.value == 1 && backlog.depth == 1)
        #expect(h.provider.sent.count == 1)
        #expect(worker.stop(deadline: 10) == 0)
    }

    @Test("a foreground connection the loops never wrote to (wedged) does not suppress: never neither")
    func unreachedForegroundStillPushes() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "phone")
        h.connect("c-phone", user: "u1", session: "phone", state: .foreground, reachable: false)
        let body = try h.created(await h.send(h.call(["u1"])))
        #expect(body["push_queued"] as? Int == 1)
        #expect(body["live_delivered"] as? Int == 0)
    }

    @Test("a foreground lease that went stale by the clock does not suppress")
    func staleLeasePushes() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "phone")
        h.connect("c-phone", user: "u1", session: "phone", state: .foreground)
        h.clock.advance(byMilliseconds: 46_000)   // past the 45 s lease, no sign of life
        let body = try h.created(await h.send(h.call(["u1"])))
        #expect(body["push_suppressed"] as? Int == 0)
        #expect(body["push_queued"] as? Int == 1)
    }

    @Test("unless_acked: the push is due when the ack window ends, and names the event to acknowledge")
    func unlessAckedIsDueAfterTheWindow() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "phone")
        h.connect("c-phone", user: "u1", session: "phone", state: .foreground)
        let start = h.clock.unixMilliseconds
        let body = try h.created(await h.send(h.call(["u1"], policy: .unlessAcked, ackWindow: 5_000)))
        #expect(body["push_queued"] as? Int == 1)
        let job = try #require(h.jobs().first)
        #expect(job.runAt == start + 5_000)
        let payload = try DeliveryJobPayload.decode(job.payloadJSON)
        let event = try #require((body["notifications"] as? [[String: Any]])?.first?["event_id"] as? String)
        #expect(payload.origin?.ackEventID == event)
        #expect(payload.origin?.sessionID == "phone")
    }

    @Test("an expiry already past by the clock is recorded `expired` and queues nothing")
    func expiredIsNotPushed() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "phone")
        let body = try h.created(await h.send(h.call(["u1"], expiresAt: h.clock.unixMilliseconds - 1)))
        #expect(body["push_queued"] as? Int == 0)
        #expect(try h.outcomes(Self.firstID(body)) == [.expired])
        #expect(try h.jobs().isEmpty)
    }

    @Test("an idempotency key replays its first answer for 24 h, refuses another request, and is forgotten after")
    func idempotencyWindow() async throws {
        let h = try Harness()
        let first = await h.send(h.call(["u1"], key: "k1", hash: "h1"))
        guard case .created(let json) = first else { Issue.record("\(first)"); return }
        h.clock.advance(byMilliseconds: 23 * 3_600_000)
        guard case .replayed(let again) = await h.send(h.call(["u1"], key: "k1", hash: "h1")) else { Issue.record("no replay"); return }
        #expect(again == json)
        guard case .refused(.idempotencyKeyReused) = await h.send(h.call(["u2"], key: "k1", hash: "h2")) else {
            Issue.record("a different request under the key was not refused"); return
        }
        h.clock.advance(byMilliseconds: 1 * 3_600_000 + 1)
        guard case .created(let fresh) = await h.send(h.call(["u1"], key: "k1", hash: "h1")) else { Issue.record("not stored anew"); return }
        #expect(fresh != json)
    }

    @Test("a broker that is down: stored, nobody saw it live, so every device is pushed")
    func brokerOutagePushesEveryDevice() async throws {
        let h = try Harness(broker: DownBroker())
        try h.device(user: "u1", session: "phone")
        h.connect("c-phone", user: "u1", session: "phone", state: .foreground)
        let body = try h.created(await h.send(h.call(["u1"])))
        #expect(body["push_queued"] as? Int == 1)
        #expect(body["push_suppressed"] as? Int == 0)
        let notifications = try #require(body["notifications"] as? [[String: Any]])
        #expect(notifications.first?["event_id"] is NSNull)
    }

    @Test("a device whose session expired by the clock is skipped; a user's global switch off skips by preference")
    func sessionAndPreferenceSkips() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "old")
        try h.device(user: "u2", session: "phone")
        let now = h.clock.unixMilliseconds
        _ = try h.storage.writeSync { tx in
            _ = try tx.sessions.setExpiry(sid: "old", expiresAt: now + 60_000)
            try tx.preferences.save(PushPreferenceRecord(userID: "u2", isEnabled: false, updatedAt: now))
        }
        h.clock.advance(byMilliseconds: 60_001)
        let body = try h.created(await h.send(h.call(["u1", "u2"])))
        #expect(body["push_queued"] as? Int == 0)
        #expect(body["skipped"] as? Int == 2)
        let ids = try #require(body["notifications"] as? [[String: Any]]).compactMap { $0["id"] as? String }
        #expect(try h.outcomes(ids[0]) == [.skippedSession])
        #expect(try h.outcomes(ids[1]) == [.skippedPreferences])
    }

    @Test("recovery leaves a plan whose lease runs, and plans it once the lease has passed by the clock")
    func recoveryWaitsForTheLease() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "phone")
        let call = h.call(["u1"])
        let now = h.clock.unixMilliseconds
        // What a node that died between storing and planning leaves: the rows and its plan, held.
        let id = try h.storage.writeSync { tx -> String in
            let plan = try tx.plans.insert(PendingPlan(planJSON: call.planJSON, createdAt: now, claimedBy: "node-dead",
                                                       leaseUntil: now + Notifier.planLeaseMilliseconds))
            return try tx.notifications.insert(NotificationRecord(id: "ntf_crashed", userID: "u1", kind: "k", titleJSON: call.titleJSON,
                                                                  planID: plan, createdAt: now)).id
        }
        h.notifier.runRecovery()
        #expect(try h.outcomes(id).isEmpty)
        h.clock.advance(byMilliseconds: Notifier.planLeaseMilliseconds + 1)
        h.notifier.runRecovery()
        #expect(try h.outcomes(id) == [.queued])
        #expect(try h.jobs().count == 1)
        #expect(try h.storage.readSync { try $0.plans.list(after: 0, limit: 10) }.isEmpty)
        h.notifier.runRecovery()
        #expect(try h.jobs().count == 1, "planned once")
    }

    @Test("ADR 0003's amendment: a one-recipient call's plan rides in its row; one a dead node left is planned once its lease has passed")
    func aOneRecipientPlanInTheRowIsRecoveredAfterItsLease() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "phone")
        let call = h.call(["u1"], key: "k-row", hash: "h-row")
        let now = h.clock.unixMilliseconds
        // What a node that died between storing and planning leaves: the row with its plan, held,
        // and the key reserved.
        let id = try h.storage.writeSync { tx -> String in
            let stored = try #require(try tx.notifications.insert(
                NotificationRecord(id: "ntf_crashed", userID: "u1", kind: "k", titleJSON: call.titleJSON, createdAt: now),
                carrying: PendingPlan(planJSON: call.planJSON, createdAt: now, claimedBy: "node-dead", leaseUntil: now + Notifier.planLeaseMilliseconds)))
            try tx.idempotency.reserve(IdempotencyRecord(
                key: "k-row", requestHash: "h-row",
                responseJSON: #"{"notifications":[{"id":"ntf_crashed","user_id":"u1","event_id":null}],"push_planning":"deferred"}"#,
                complete: false, createdAt: now))
            return stored.id
        }
        #expect(try h.storage.readSync { try $0.plans.list(after: 0, limit: 10) }.isEmpty, "no plan row")
        guard case .refused(.idempotencyInProgress) = await h.send(call) else { Issue.record("not in progress while node-dead holds it"); return }
        h.notifier.runRecovery()
        #expect(try h.outcomes(id).isEmpty, "held: left alone")
        h.clock.advance(byMilliseconds: Notifier.planLeaseMilliseconds + 1)
        guard case .accepted(_, replayed: true) = await h.send(call) else { Issue.record("not a deferred replay after the lease"); return }
        h.notifier.runRecovery()
        #expect(try h.outcomes(id) == [.queued])
        #expect(try h.jobs().count == 1)
        let row = try #require(try h.storage.readSync { try $0.notifications.find(id: id) })
        let planned = try h.storage.readSync { try $0.notifications.isPlanned(row) }
        #expect(row.planJSON == nil && row.planID != nil && planned)
        h.notifier.runRecovery()
        #expect(try h.jobs().count == 1, "planned once")

        // A live one-recipient call: planned from its row, nothing left for recovery.
        let body = try h.created(await h.send(h.call(["u1"])))
        let liveID = try Self.firstID(body)
        let live = try #require(try h.storage.readSync { try $0.notifications.find(id: liveID) })
        #expect(live.planJSON == nil && live.planID == nil && live.cursor != nil)
        #expect(try h.storage.readSync { try $0.plans.list(after: 0, limit: 10) }.isEmpty)
    }

    @Test("a group-committed batch: concurrent calls are each answered and each recipient planned")
    func concurrentCallsAreEachAnswered() async throws {
        let h = try Harness()
        for i in 0..<20 { try h.device(user: "u\(i)", session: "s\(i)") }
        let answers = await withTaskGroup(of: NotificationAnswer.self) { group in
            for i in 0..<20 { group.addTask { await h.send(h.call(["u\(i)"])) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(answers.count == 20)
        for answer in answers { #expect(try h.created(answer)["push_queued"] as? Int == 1) }
        #expect(try h.jobs().count == 20)
        #expect(h.loops.barriers.withLock { $0 } <= 20)
    }

    /// Seed 000's `orders.paid`: members need `orders.read`.
    static let ordersCatalog = NotificationCatalog(
        app: "merchant", defaultLocale: "en", notificationIDKey: nil, kindKey: "kind", excludedAudiences: [], categories: [:],
        kinds: ["orders.paid": NotificationKind(
            name: "orders.paid", category: nil, androidChannelID: nil, defaultEnabled: true, requires: "orders.read", audience: "everyone",
            priority: nil, sound: nil, inPreferences: true, collapse: nil, tag: nil, thread: nil, subtitle: nil, title: nil, body: nil)])

    /// A harness on `ordersCatalog` with store:1's owner (orders.read), cashier (sales only) and a
    /// manager (orders.read and sales), each with a device.
    static func store() throws -> Harness {
        let h = try Harness(catalog: ordersCatalog)
        let now = h.clock.unixMilliseconds
        try h.storage.writeSync { tx in
            try tx.members.put(ScopeMember(scope: "store:1", userID: "owner", permissions: ["orders.read"], updatedAt: now))
            try tx.members.put(ScopeMember(scope: "store:1", userID: "cashier", permissions: ["sales"], updatedAt: now))
            try tx.members.put(ScopeMember(scope: "store:1", userID: "manager", permissions: ["orders.read", "sales"], updatedAt: now))
        }
        for user in ["owner", "cashier", "manager", "stranger"] { try h.device(user: user, session: "s-\(user)") }
        return h
    }

    static func recipients(_ body: [String: Any]) throws -> [String] {
        try #require(body["notifications"] as? [[String: Any]]).compactMap { $0["user_id"] as? String }
    }

    static func skippedRecipients(_ body: [String: Any]) throws -> [String: String] {
        let list = try #require(body["skipped_recipients"] as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: list.map { ($0["user_id"] as? String ?? "", $0["reason"] as? String ?? "") })
    }

    @Test("NO-6: explicit user_ids in a scope keep only the members holding the kind's permission; the others are named")
    func explicitUsersInAScopeNeedTheKindsPermission() async throws {
        let h = try Self.store()
        let body = try h.created(await h.send(h.call(["owner", "cashier", "stranger"], kind: "orders.paid", scope: "store:1")))
        #expect(try Self.recipients(body) == ["owner"])
        #expect(try Self.skippedRecipients(body) == ["cashier": "missing_permission", "stranger": "not_a_member"])
        #expect(body["push_queued"] as? Int == 1)
        #expect(try h.jobs().count == 1)
    }

    @Test("NO-6: user_ids without a scope, or of a kind that requires nothing, are every recipient named")
    func explicitUsersWithoutScopeOrRequirementStand() async throws {
        let h = try Self.store()
        let unscoped = try h.created(await h.send(h.call(["owner", "cashier", "stranger"], kind: "orders.paid")))
        #expect(try Self.recipients(unscoped) == ["owner", "cashier", "stranger"])
        let free = try h.created(await h.send(h.call(["cashier", "stranger"], kind: "k", scope: "store:1")))
        #expect(try Self.recipients(free) == ["cashier", "stranger"])
        #expect(try Self.skippedRecipients(free).isEmpty)
    }

    @Test("NO-6: a call's permission narrows the scope but does not replace the kind's: sales-only members are skipped")
    func callPermissionDoesNotReplaceTheKinds() async throws {
        let h = try Self.store()
        let body = try h.created(await h.send(h.call([], kind: "orders.paid", scope: "store:1",
                                                     recipients: .scopePermission(scope: "store:1", permission: "sales"))))
        #expect(try Self.recipients(body) == ["manager"])
        #expect(try Self.skippedRecipients(body) == ["cashier": "missing_permission"])
        let kinds = try h.created(await h.send(h.call([], kind: "orders.paid", scope: "store:1",
                                                      recipients: .scopePermission(scope: "store:1", permission: nil))))
        #expect(try Self.recipients(kinds).sorted() == ["manager", "owner"])
        #expect(try Self.skippedRecipients(kinds).isEmpty)
    }
}
