import Foundation
import HeraldCore
import StoragePostgres
import StorageSQLite
import Synchronization
import Testing

/// Opens a fresh storage of `engine` (a new SQLite file, or a new database on the shared test
/// server), runs `body`, closes it.
func withStorage(_ engine: Engine, _ body: (any Storage) throws -> Void) throws {
    switch engine {
    case .sqlite:
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-contract-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = try SQLiteStorage.open(path: directory.appendingPathComponent("test.db").path)
        defer { storage.close() }
        try body(storage)
    case .postgres:
        let server = try #require(PostgresServer.shared, "the shared PostgreSQL test server did not start")
        let storage = try PostgresStorage.open(PostgresConfiguration(url: try server.makeDatabase()))
        defer { storage.close() }
        try body(storage)
    }
}

/// The `Storage` port's observable behaviour, the same on every adapter: what SQLite does is
/// what PostgreSQL must do (Tests/StorageSQLiteTests hold SQLite's own, more detailed tests).
@Suite struct StorageContractTests {
    private struct Refused: Error {}

    private func note(_ id: String, user: String = "u1", inbox: Bool = true, plan: Int64? = nil, at: Int64 = 1_000) -> NotificationRecord {
        NotificationRecord(id: id, userID: user, kind: "k", inInbox: inbox, planID: plan, createdAt: at)
    }

    @Test("PostgreSQL runs here, or the PostgreSQL cases are skipped", .enabled(if: PostgresServer.isAvailable,
          Comment(rawValue: PostgresServer.unavailableReason ?? "")))
    func postgresIsAvailable() throws {
        #expect(PostgresServer.shared != nil)
    }

    /// ADR 0025: an ack finds, by app, session and event, only the queued jobs waiting for it, and
    /// cancelling them records `suppressed_acked`; a claimed job, another session's or app's, and
    /// a job waiting for nothing are left alone.
    @Test(arguments: Engine.available)
    func anAckCancelsOnlyTheQueuedJobsWaitingForIt(engine: Engine) throws {
        try withStorage(engine) { storage in
            @Sendable func payload(_ session: String) throws -> String {
                try DeliveryJobPayload(deviceID: "d-\(session)", apnsID: .random(), notification: PushNotification(title: "t", body: "b"),
                                       origin: .init(notificationID: "n1", userID: "u1", sessionID: session, ackEventID: "e1")).jsonText()
            }
            let ids = try storage.writeSync { tx in
                _ = try tx.notifications.insert(note("n1"))
                let waiting = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: try payload("s1"), app: "default", runAt: 5_000, now: 1_000,
                                                  awaiting: AwaitedAck(sessionID: "s1", eventID: "e1"))
                let claimed = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: try payload("s1"), app: "default", runAt: 0, now: 0,
                                                  awaiting: AwaitedAck(sessionID: "s1", eventID: "e1"))
                _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: try payload("s2"), app: "default", runAt: 5_000, now: 1_000,
                                        awaiting: AwaitedAck(sessionID: "s2", eventID: "e1"))
                _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: try payload("s1"), app: "other", runAt: 5_000, now: 1_000,
                                        awaiting: AwaitedAck(sessionID: "s1", eventID: "e1"))
                let plain = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: try payload("s1"), app: "default", runAt: 5_000, now: 1_000)
                return (waiting, claimed, plain)
            }
            let leased = try storage.writeSync { tx in try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 60_000, now: 1) }
            #expect(leased.map(\.id) == [ids.1])
            let found = try storage.readSync { tx in
                (try AcknowledgedPushes.awaited(in: tx, app: "default", userID: "u1", sessionID: "s1", eventIDs: ["x", "e1"]),
                 try AcknowledgedPushes.awaited(in: tx, app: "default", userID: "u1", sessionID: "s1", eventIDs: ["e2"]),
                 try AcknowledgedPushes.awaited(in: tx, app: "default", userID: "u1", sessionID: "s3", eventIDs: ["e1"]),
                 try AcknowledgedPushes.awaited(in: tx, app: "default", userID: "u2", sessionID: "s1", eventIDs: ["e1"]))
            }
            #expect(found == (true, false, false, false))
            // Another user's token with the same sid and event id cancels nothing.
            #expect(try storage.writeSync { tx in
                try AcknowledgedPushes.cancel(in: tx, app: "default", userID: "u2", sessionID: "s1", eventIDs: ["e1"], now: 2_000)
            } == 0)
            let cancelled = try storage.writeSync { tx in
                try AcknowledgedPushes.cancel(in: tx, app: "default", userID: "u1", sessionID: "s1", eventIDs: ["e1"], now: 2_000)
            }
            #expect(cancelled == 1)
            let after = try storage.readSync { tx in
                (try tx.jobs.find(id: ids.0)?.state, try tx.jobs.find(id: ids.1)?.state, try tx.jobs.find(id: ids.2)?.state,
                 try tx.deliveries.list(notificationID: "n1").map(\.outcome),
                 try AcknowledgedPushes.awaited(in: tx, app: "default", userID: "u1", sessionID: "s1", eventIDs: ["e1"]),
                 try AcknowledgedPushes.awaited(in: tx, app: "default", userID: "u1", sessionID: "s2", eventIDs: ["e1"]),
                 try AcknowledgedPushes.awaited(in: tx, app: "other", userID: "u1", sessionID: "s1", eventIDs: ["e1"]))
            }
            #expect(after.0 == .done && after.1 == .leased && after.2 == .queued)
            #expect(after.3 == [.suppressedAcked])
            #expect(after.4 == false && after.5 && after.6)
            // Again: nothing left to cancel, nothing recorded twice.
            #expect(try storage.writeSync { tx in
                try AcknowledgedPushes.cancel(in: tx, app: "default", userID: "u1", sessionID: "s1", eventIDs: ["e1"], now: 3_000)
            } == 0)
        }
    }

    /// A storage that counts the write units asked of it.
    private final class WriteCounting: Storage {
        let base: any Storage
        private let count = Mutex(0)
        init(_ base: any Storage) { self.base = base }
        var writes: Int { count.withLock { $0 } }
        var pushRotations: PushJobRotation.Count { base.pushRotations }

        func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                                completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
            count.withLock { $0 += 1 }
            base.write(body, completion: completion)
        }
        func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                               completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
            base.read(body, completion: completion)
        }
        func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
            count.withLock { $0 += 1 }
            return try base.writeSync(body)
        }
        func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T { try base.readSync(body) }
    }

    /// ADR 0025, 0026: `AcknowledgedPushes.keep`, both ack routes' way into storage, writes only
    /// when a push waits for one of the ids, and then cancels it before it answers.
    @Test(arguments: Engine.available)
    func keepingAnAckWritesOnlyWhenAPushWaitsForIt(engine: Engine) throws {
        try withStorage(engine) { storage in
            let payload = DeliveryJobPayload(deviceID: "d1", apnsID: .random(), notification: PushNotification(title: "t", body: "b"),
                                                 origin: .init(notificationID: "n1", userID: "u1", sessionID: "s1", ackEventID: "e1")).jsonText()
            let job = try storage.writeSync { tx in
                _ = try tx.notifications.insert(note("n1"))
                return try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: payload, app: "default", runAt: 5_000, now: 1_000,
                                           awaiting: AwaitedAck(sessionID: "s1", eventID: "e1"))
            }
            let counted = WriteCounting(storage)
            func keep(_ ids: [String]) throws {
                let done = DispatchSemaphore(value: 0)
                let kept = Mutex<Result<Void, any Error>?>(nil)
                AcknowledgedPushes.keep(in: counted, app: "default", userID: "u1", sessionID: "s1", eventIDs: ids) { result in
                    kept.withLock { $0 = result }
                    done.signal()
                }
                _ = done.wait(timeout: .now() + 10)
                try #require(kept.withLock { $0 }).get()
            }
            try keep(["e2", "x"])
            #expect(counted.writes == 0)
            #expect(try storage.readSync { tx in try tx.jobs.find(id: job)?.state } == .queued)
            try keep(["x", "e1"])
            #expect(counted.writes == 1)
            #expect(try storage.readSync { tx in try tx.jobs.find(id: job)?.state } == .done)
            #expect(try storage.readSync { tx in try tx.deliveries.list(notificationID: "n1").map(\.outcome) } == [.suppressedAcked])
        }
    }

    @Test(arguments: Engine.available)
    func aWriteUnitCommitsTogetherOrNotAtAll(engine: Engine) throws {
        try withStorage(engine) { storage in
            #expect(throws: Refused.self) {
                try storage.writeSync { tx in
                    let plan = try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: 1_000))
                    _ = try tx.notifications.insert(note("gone", plan: plan))
                    _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
                    throw Refused()
                }
            }
            let job = try storage.writeSync { tx in
                _ = try tx.notifications.insert(note("kept"))
                return try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
            }
            let seen = try storage.readSync { tx in
                (try tx.notifications.find(id: "gone"), try tx.notifications.find(id: "kept")?.id, try tx.jobs.find(id: job)?.state,
                 try tx.plans.list(after: 0, limit: 10).count)
            }
            #expect(seen.0 == nil && seen.1 == "kept" && seen.2 == .queued && seen.3 == 0)
        }
    }

    @Test(arguments: Engine.available)
    func aWriteInAReadUnitIsReadOnlyAndTheProbeWrites(engine: Engine) throws {
        try withStorage(engine) { storage in
            do {
                try storage.readSync { tx in _ = try tx.notifications.insert(note("n1")) }
                Issue.record("a write in a read unit succeeded")
            } catch let error as StorageError {
                guard case .readOnly = error else { Issue.record("expected .readOnly, got \(error)"); return }
            }
            let probed = Shared<Result<Void, any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            storage.probeWrite { result in probed.update { $0 = result }; done.signal() }
            done.wait()
            #expect((try? probed.value?.get()) != nil)
        }
    }

    @Test(arguments: Engine.available)
    func sessions(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                let first = try tx.sessions.touch(sid: "s1", userID: "u1", expiresAt: 5_000, now: 100)
                #expect(first.createdAt == 100 && first.expiresAt == 5_000 && first.endedAt == nil)
                let again = try tx.sessions.touch(sid: "s1", userID: "u1", expiresAt: nil, now: 200)
                #expect(again.lastSeenAt == 200 && again.expiresAt == 5_000 && again.createdAt == 100)
                // Another user's token never moves the session.
                let other = try tx.sessions.touch(sid: "s1", userID: "u2", expiresAt: 9_000, now: 300)
                #expect(other.userID == "u1" && other.lastSeenAt == 200)
                // The backend's expiry wins over a token's.
                #expect(try tx.sessions.setExpiry(sid: "s1", expiresAt: 7_000))
                #expect(try !tx.sessions.setExpiry(sid: "nobody", expiresAt: 7_000))
                #expect(try tx.sessions.touch(sid: "s1", userID: "u1", expiresAt: 9_000, now: 400).expiresAt == 7_000)
                _ = try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "apns", token: "t1"),
                                            sessionExpiresAt: nil, newID: "d1", now: 400)
                #expect(try tx.sessions.end(sid: "s1", now: 500) == 1)
                #expect(try tx.sessions.end(sid: "unknown", now: 500) == 0)
                #expect(try tx.sessions.find(sid: "s1")?.endedAt == 500)
                #expect(try tx.sessions.touch(sid: "s1", userID: "u1", expiresAt: nil, now: 600).endedAt == 500)
                #expect(try Set(tx.sessions.endedSessionIDs()) == ["s1", "unknown"])
                #expect(try tx.devices.find(id: "d1", now: 600) == nil)
            }
        }
    }

    @Test(arguments: Engine.available)
    func devices(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                let ios = DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "apns", token: "t1", installationID: "i1")
                let created = try tx.devices.register(ios, sessionExpiresAt: nil, newID: "d1", now: 100)
                #expect(created.created && created.device.id == "d1" && created.device.sessionActive)
                let refreshed = try tx.devices.register(ios, sessionExpiresAt: nil, newID: "d2", now: 200)
                #expect(!refreshed.created && refreshed.device.id == "d1" && refreshed.device.lastSeenAt == 200)
                // Another user's installation holds the token.
                let thief = DeviceRegistration(userID: "u2", sessionID: "s2", platform: "ios", provider: "apns", token: "t1", installationID: "i2")
                #expect(throws: DeviceRegistrationError.installationMismatch) {
                    try tx.devices.register(thief, sessionExpiresAt: nil, newID: "d3", now: 300)
                }
                // A sid of another user is refused.
                let borrowed = DeviceRegistration(userID: "u2", sessionID: "s1", platform: "ios", provider: "apns", token: "t9")
                #expect(throws: DeviceRegistrationError.sessionConflict) {
                    try tx.devices.register(borrowed, sessionExpiresAt: nil, newID: "d4", now: 300)
                }
                // A rotated token replaces the session's earlier device of the platform.
                let rotated = DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "apns", token: "t2")
                let second = try tx.devices.register(rotated, sessionExpiresAt: nil, newID: "d5", now: 400)
                #expect(second.created)
                #expect(try tx.devices.find(id: "d1", now: 400) == nil)
                let web = DeviceRegistration(userID: "u1", sessionID: "s9", platform: "web", provider: "webpush", token: "w1")
                _ = try tx.devices.register(web, sessionExpiresAt: 450, newID: "d6", now: 420)
                #expect(try tx.devices.list(userID: "u1", now: 500).map(\.id) == ["d6", "d5"])
                #expect(try tx.devices.list(userID: "u1", now: 500).map(\.sessionActive) == [false, true])
                // Many at once (the delivery worker's claim): those that exist, each once, as `find` reads them.
                let many = try tx.devices.find(ids: ["d6", "d1", "d5", "d6", "nope"], now: 500).sorted { $0.id < $1.id }
                let one = try [tx.devices.find(id: "d5", now: 500), tx.devices.find(id: "d6", now: 500)].compactMap { $0 }
                #expect(many == one && many.count == 2)
                #expect(try tx.devices.find(ids: [], now: 500).isEmpty)
                let u3 = DeviceRegistration(userID: "u3", sessionID: "s3", platform: "android", provider: "fcm", token: "f1")
                _ = try tx.devices.register(u3, sessionExpiresAt: nil, newID: "d7", now: 430)
                #expect(try tx.devices.list(userIDs: ["u3", "u1", "nobody"], now: 500).map(\.id) == ["d6", "d5", "d7"])
                #expect(try !tx.devices.delete(id: "d7", userID: "u1"))
                #expect(try tx.devices.delete(id: "d7", userID: "u3"))
                #expect(try tx.devices.delete(token: "w1", userID: "u1") == 1)
                #expect(try !tx.devices.deleteInvalid(id: "d5", invalidSince: 399))
                #expect(try tx.devices.deleteInvalid(id: "d5", invalidSince: 400))
                _ = try tx.devices.register(u3, sessionExpiresAt: nil, newID: "d8", now: 1_000)
                #expect(try tx.devices.purge(notSeenSince: 1_000) == 0)
                #expect(try tx.devices.purge(notSeenSince: 1_001) == 1)
            }
            do {
                try storage.writeSync { tx in
                    _ = try tx.sessions.end(sid: "s1", now: 2_000)
                    _ = try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "apns", token: "t5"),
                                                sessionExpiresAt: nil, newID: "d9", now: 2_000)
                }
                Issue.record("an ended session registered a device")
            } catch let error as DeviceRegistrationError {
                #expect(error == .sessionEnded)
            }
        }
    }

    @Test(arguments: Engine.available)
    func notificationsAndTheInbox(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                let a = try tx.notifications.insert(note("a"))
                let b = try tx.notifications.insert(note("b"))
                _ = try tx.notifications.insert(note("push-only", inbox: false))
                let c = try tx.notifications.insert(note("c"))
                _ = try tx.notifications.insert(note("x", user: "u2"))
                #expect(a.sequence < b.sequence && b.sequence < c.sequence && a.cursor == nil)
                do {
                    _ = try tx.notifications.insert(note("z", user: "u1"))
                } catch {
                    Issue.record("\(error)")
                }
                try tx.notifications.setCursor(sequence: a.sequence, cursor: "e-1")
                #expect(try tx.notifications.find(id: "a")?.cursor == "e-1")
                #expect(try tx.notifications.page(userID: "u1", unreadOnly: false, before: nil, limit: 2).map(\.id) == ["z", "c"])
                #expect(try tx.notifications.page(userID: "u1", unreadOnly: false, before: c.sequence, limit: 10).map(\.id) == ["b", "a"])
                #expect(try tx.notifications.unreadCount(userID: "u1") == 4)
                #expect(try tx.notifications.markRead(userID: "u1", id: "b", now: 50) == .marked(at: 50))
                #expect(try tx.notifications.markRead(userID: "u1", id: "b", now: 60) == .alreadyRead(at: 50))
                #expect(try tx.notifications.markRead(userID: "u1", id: "x", now: 60) == .notFound)
                #expect(try tx.notifications.markRead(userID: "u1", id: "push-only", now: 60) == .notFound)
                #expect(try tx.notifications.page(userID: "u1", unreadOnly: true, before: nil, limit: 10).map(\.id) == ["z", "c", "a"])
                #expect(try tx.notifications.markAllRead(app: "default", userID: "u1", now: 70) == 3)
                #expect(try tx.notifications.unreadCount(userID: "u1") == 0)
                try tx.deliveries.record(DeliveryEntry(notificationID: "a", userID: "u1", outcome: .queued, at: 1))
            }
            // A known id and an unknown priority are constraint failures.
            for (record, kind) in [(note("a"), StorageError.ConstraintKind.unique),
                                   (NotificationRecord(id: "p", userID: "u1", kind: "k", priority: "loud", createdAt: 1), .check)] {
                do {
                    try storage.writeSync { tx in _ = try tx.notifications.insert(record) }
                    Issue.record("\(record.id) was stored")
                } catch let error as StorageError {
                    guard case .constraint(let found, _) = error, found == kind else { Issue.record("got \(error)"); continue }
                }
            }
            try storage.writeSync { tx in
                _ = try tx.notifications.insert(note("late", at: 5_000))
                #expect(try tx.notifications.purge(createdBefore: 5_000) == 6)
                #expect(try tx.deliveries.list(notificationID: "a").isEmpty)
                #expect(try tx.notifications.find(id: "late") != nil)
            }
        }
    }

    @Test(arguments: Engine.available)
    func plans(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                let held = try tx.plans.insert(PendingPlan(planJSON: "{\"a\":1}", createdAt: 1, claimedBy: "n1", leaseUntil: 1_000))
                let free = try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: 2))
                #expect(held < free)
                let row = try tx.notifications.insert(note("n", plan: held))
                #expect(try !tx.notifications.isPlanned(row))
                #expect(try tx.plans.notifications(ofPlan: held).map(\.id) == ["n"])
                // Only the free plan is claimable before the lease runs out; both after.
                #expect(try tx.plans.claim(by: "n2", limit: 10, leaseMilliseconds: 100, now: 500).map(\.id) == [free])
                #expect(try tx.plans.claim(by: "n3", limit: 10, leaseMilliseconds: 100, now: 550).isEmpty)
                #expect(try tx.plans.renew(ids: [held, free], by: "n2", until: 2_000) == 1)
                #expect(try tx.plans.claim(by: "n3", after: 0, limit: 10, leaseMilliseconds: 100, now: 1_000).map(\.id) == [held])
                #expect(try !tx.plans.markPlanned(id: held, by: "n1"))
                #expect(try tx.plans.release(ids: [free], by: "n2") == 1)
                #expect(try tx.plans.list(after: 0, limit: 10).map(\.claimedBy) == ["n3", nil])
                #expect(try tx.plans.markPlanned(id: held, by: "n3"))
                #expect(try tx.notifications.isPlanned(row))
                try tx.plans.delete(id: free)
                #expect(try tx.plans.list(after: 0, limit: 10).isEmpty)
                #expect(try tx.plans.adoptLegacyPlans(now: 0) == 0)
                // An id is never handed out twice.
                #expect(try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: 3)) > free)
            }
        }
    }

    @Test(arguments: Engine.available)
    func deliveriesPreferencesMembersAndIdempotency(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                let first = try tx.deliveries.record(DeliveryEntry(notificationID: "n", userID: "u", deviceID: "d", outcome: .queued,
                                                                   jobID: 7, deliveryID: "dl", at: 9))
                try tx.deliveries.record(DeliveryEntry(notificationID: "n", userID: "u", outcome: .opened, deliveryID: "dl", at: 1))
                #expect(try tx.deliveries.list(notificationID: "n").map(\.outcome) == [.queued, .opened])
                #expect(try tx.deliveries.queued(deliveryID: "dl")?.id == first)
                #expect(try tx.deliveries.queued(deliveryID: "dl")?.jobID == 7)
                #expect(try tx.deliveries.exists(deliveryID: "dl", outcome: .opened))
                #expect(try !tx.deliveries.exists(deliveryID: "dl", outcome: .sent))

                try tx.preferences.save(PushPreferenceRecord(userID: "u", isEnabled: false, updatedAt: 1))
                try tx.preferences.save(PushPreferenceRecord(userID: "u", scope: "team", isEnabled: true, enabledEvents: ["a/b", "c"], updatedAt: 2))
                try tx.preferences.save(PushPreferenceRecord(userID: "u", scope: "team", isEnabled: true, enabledEvents: ["x"], updatedAt: 3))
                #expect(try tx.preferences.find(userID: "u", scope: nil)?.isEnabled == false)
                #expect(try tx.preferences.find(userID: "u", scope: "team")?.enabledEvents == ["x"])
                #expect(try tx.preferences.list(userIDs: ["u", "v"], scopes: ["team", "other"]).count == 2)
                #expect(try tx.preferences.list(userIDs: ["u"], scopes: []).map(\.scope) == [nil])

                #expect(try tx.members.put(ScopeMember(scope: "s", userID: "b", permissions: ["read", "admin", "read"], updatedAt: 1)))
                #expect(try !tx.members.put(ScopeMember(scope: "s", userID: "b", permissions: ["read"], updatedAt: 2)))
                #expect(try tx.members.put(ScopeMember(scope: "s", userID: "a", permissions: ["admin"], updatedAt: 1)))
                #expect(try tx.members.put(ScopeMember(scope: "s", userID: "B", permissions: [], updatedAt: 1)))
                #expect(try tx.members.find(scope: "s", userID: "b")?.permissions == ["read"])
                #expect(try tx.members.list(scope: "s", after: nil, limit: 2).map(\.userID) == ["B", "a"])
                #expect(try tx.members.list(scope: "s", after: "a", limit: 2).map(\.userID) == ["b"])
                #expect(try tx.members.holding(scope: "s", permission: "admin").map(\.userID) == ["a"])
                #expect(try tx.members.holding(scope: "s", permission: nil).map(\.userID) == ["B", "a", "b"])
                #expect(try tx.members.delete(scope: "s", userID: "a"))
                #expect(try !tx.members.delete(scope: "s", userID: "a"))

                try tx.idempotency.reserve(IdempotencyRecord(key: "k", requestHash: "h", responseJSON: "", complete: false, createdAt: 100))
                #expect(try tx.idempotency.find(key: "k", notBefore: 100)?.complete == false)
                #expect(try tx.idempotency.find(key: "k", notBefore: 101) == nil)
                try tx.idempotency.complete(key: "k", responseJSON: "{\"ok\":true}")
                #expect(try tx.idempotency.find(key: "k", notBefore: 0)?.responseJSON == "{\"ok\":true}")
                try tx.idempotency.reserve(IdempotencyRecord(key: "k", requestHash: "h2", responseJSON: "", complete: false, createdAt: 200))
                #expect(try tx.idempotency.find(key: "k", notBefore: 0)?.requestHash == "h2")
                #expect(try tx.idempotency.purge(createdBefore: 200) == 0)
                #expect(try tx.idempotency.purge(createdBefore: 201) == 1)
            }
        }
    }

    @Test(arguments: Engine.available)
    func userProfiles(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx throws in
                #expect(try tx.users.put(UserProfile(userID: "u1", locale: "pt-BR", updatedAt: 1)))
                #expect(try !tx.users.put(UserProfile(userID: "u1", locale: "de", updatedAt: 2)))
                #expect(try tx.users.put(UserProfile(userID: "u2", locale: nil, updatedAt: 1)))
                #expect(try tx.users.find(userID: "u1") == UserProfile(userID: "u1", locale: "de", updatedAt: 2))
                #expect(try tx.users.find(userID: "nobody") == nil)
                #expect(try tx.users.locales(userIDs: ["u1", "u2", "u3"]) == ["u1": "de"])
                #expect(try tx.users.locales(app: "other", userIDs: ["u1"]).isEmpty)
            }
        }
    }

    /// audience14: a push turned away for its turn (ADR 0024) is counted apart, and the next
    /// claim reads that count back, for the backoff of a later failure (`JobRecord.backoffAttempts`).
    @Test(arguments: Engine.available)
    func turnedAwayAttemptsAreCountedApartAndReadBackByTheNextClaim(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                let id = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
                var claimed = try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 100, now: 10)
                #expect(try tx.jobs.retry(claimed[0].lease, runAt: 20, error: "origin_busy: full", attempt: .turnedAway))
                claimed = try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 100, now: 20)
                #expect(try tx.jobs.retry(claimed[0].lease, runAt: 30, error: "origin_busy: full", attempt: .turnedAway))
                claimed = try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 100, now: 30)
                let third = try #require(claimed.first)
                #expect(third.attempts == 3 && third.turnedAwayAttempts == 2 && third.uncountedAttempts == 2)
                #expect(third.backoffAttempts == 1 && third.countedAttempts == 1, "the third claim is the first that may fail for real")
                #expect(try tx.jobs.retry(third.lease, runAt: 40, error: "503", attempt: .uncounted))
                let stored = try #require(try tx.jobs.find(id: id))
                #expect(stored.turnedAwayAttempts == 2 && stored.uncountedAttempts == 3 && stored.backoffAttempts == 1)
                // A dead letter retried starts again from nothing, turn-aways too.
                let fourth = try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 100, now: 40)[0]
                #expect(try tx.jobs.deadLetter(fourth.lease, error: "gone", now: 50))
                #expect(try tx.jobs.retryDead(id: id, now: 60))
                #expect(try tx.jobs.find(id: id).map { $0.turnedAwayAttempts == 0 && $0.uncountedAttempts == 0 && $0.attempts == 0 } == true)
            }
        }
    }

    @Test(arguments: Engine.available)
    func theJobQueue(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                let late = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{\"n\":2}", runAt: 20, now: 0)
                let early = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{\"n\":1}", runAt: 10, now: 0)
                _ = try tx.jobs.enqueue(kind: "other", payloadJSON: "{}", runAt: 0, now: 0)
                let future = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 1_000, now: 0)
                let claimed = try tx.jobs.claim(kind: "push.deliver", limit: 10, leaseMilliseconds: 100, now: 50)
                #expect(claimed.map(\.id) == [early, late])
                #expect(claimed.allSatisfy { $0.state == .leased && $0.attempts == 1 && $0.leaseUntil == 150 && $0.firstAttemptAt == 50 })
                #expect(try tx.jobs.claim(kind: "push.deliver", limit: 10, leaseMilliseconds: 100, now: 60).isEmpty)
                // The lease runs out: the job is claimed again, and the first claim's outcome is refused.
                let rescued = try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 100, now: 150)
                #expect(rescued.map(\.id) == [early] && rescued.first?.attempts == 2 && rescued.first?.firstAttemptAt == 50)
                #expect(try !tx.jobs.complete(claimed[0].lease))
                #expect(try tx.jobs.complete(rescued[0].lease, note: "device gone"))
                #expect(try tx.jobs.find(id: early)?.lastError == "device gone")
                #expect(try tx.jobs.retry(claimed[1].lease, runAt: 500, error: "no connection", countsAttempt: false))
                let retried = try #require(try tx.jobs.find(id: late))
                #expect(retried.state == .queued && retried.runAt == 500 && retried.uncountedAttempts == 1 && retried.countedAttempts == 0)
                let again = try tx.jobs.claim(kind: "push.deliver", limit: 5, leaseMilliseconds: 100, now: 600)
                #expect(again.map(\.id) == [late])
                #expect(try tx.jobs.deadLetter(again[0].lease, error: "BadDeviceToken: gone",
                                               cause: DeadLetterCause(provider: "apns", reason: "BadDeviceToken"), now: 610))
                #expect(try !tx.jobs.deadLetter(again[0].lease, error: "twice", now: 611))
                let dead = try #require(try tx.jobs.find(id: late))
                #expect(dead.state == .dead && dead.deadAt == 610 && dead.deadCause == DeadLetterCause(provider: "apns", reason: "BadDeviceToken"))
                let depth = try tx.jobs.depth(now: 2_000)
                #expect(depth.counts[.done] == 1 && depth.counts[.dead] == 1 && depth.counts[.queued] == 2)
                #expect(depth.oldestDueAgeMilliseconds == 2_000)
                #expect(try tx.jobs.list(state: .queued, limit: 1, beforeID: nil).map(\.id) == [future])
                #expect(try tx.jobs.retryDead(matching: DeadJobFilter(provider: "fcm"), now: 700) == 0)
                #expect(try tx.jobs.retryDead(matching: DeadJobFilter(provider: "apns", reason: "BadDeviceToken"), now: 700) == 1)
                let revived = try #require(try tx.jobs.find(id: late))
                #expect(revived.state == .queued && revived.attempts == 0 && revived.deadCause == nil && revived.firstAttemptAt == nil)
                #expect(try !tx.jobs.retryDead(id: late, now: 700))
                #expect(try tx.jobs.purgeDone(createdBefore: 1, limit: 0) == 0)
                #expect(try tx.jobs.find(id: early) != nil)
                #expect(try tx.jobs.purgeDone(createdBefore: 1) == 1)
                #expect(try tx.jobs.find(id: early) == nil)
            }
        }
    }

    /// ADR 0007: a job leased at insert is the row a claim would leave: nobody claims it while its
    /// lease holds, its lease fences its outcome, and once the lease runs out it is claimed again.
    @Test(arguments: Engine.available)
    func aJobLeasedAtInsert(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                let job = try tx.jobs.enqueueLeased(kind: "push.deliver", payloadJSON: "{\"n\":1}", app: "default", leaseUntil: 150, now: 50)
                #expect(job.state == .leased && job.attempts == 1 && job.leaseUntil == 150 && job.firstAttemptAt == 50 && job.runAt == 50)
                #expect(try tx.jobs.find(id: job.id) == job)
                #expect(try tx.jobs.claim(kind: "push.deliver", limit: 10, leaseMilliseconds: 100, now: 149).isEmpty)
                let other = try tx.jobs.enqueueLeased(kind: "push.deliver", payloadJSON: "{}", app: "default", leaseUntil: 150, now: 50)
                #expect(try tx.jobs.complete(other.lease, note: "delivered: x"))
                #expect(try tx.jobs.find(id: other.id)?.state == .done)
                // Its lease ran out (the node died): claimed again, the first lease refused.
                let rescued = try tx.jobs.claim(kind: "push.deliver", limit: 10, leaseMilliseconds: 100, now: 150)
                #expect(rescued.map(\.id) == [job.id] && rescued.first?.attempts == 2 && rescued.first?.firstAttemptAt == 50)
                #expect(try !tx.jobs.complete(job.lease))
                #expect(try tx.jobs.complete(rescued[0].lease))
            }
        }
    }

    /// ADR 0007: every adapter tells a unit's end actions whether it committed, after its
    /// COMMIT or its rollback, before the unit's completion.
    @Test(arguments: Engine.available)
    func aWriteUnitReportsItsEnd(engine: Engine) throws {
        try withStorage(engine) { storage in
            let ends = Shared<[Bool]>([])
            let kept = try storage.writeSync { tx in
                tx.whenEnded { committed in ends.update { $0.append(committed) } }
            }
            #expect(kept)
            #expect(ends.value == [true])
            #expect(throws: Refused.self) {
                try storage.writeSync { tx in
                    _ = tx.whenEnded { committed in ends.update { $0.append(committed) } }
                    throw Refused()
                }
            }
            #expect(ends.value == [true, false])
            // Run before the completion: the unit's caller sees its actions done.
            let seenAtCompletion = Shared<[Bool]>([])
            let finished = DispatchSemaphore(value: 0)
            storage.write({ tx in
                _ = tx.whenEnded { committed in ends.update { $0.append(committed) } }
            }) { _ in
                seenAtCompletion.update { $0 = ends.value }
                finished.signal()
            }
            finished.wait()
            #expect(seenAtCompletion.value == [true, false, true])
        }
    }

    /// ADR 0006: a job is its app's; listing, finding and retrying see the app asked for only,
    /// and the queue's depth is every app's.
    @Test(arguments: Engine.available)
    func jobsAreTheirAppsOnly(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in
                var dead: [String: Int64] = [:]
                for app in ["default", "chat"] {
                    let id = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", app: app, runAt: 0, now: 0)
                    let claimed = try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 100, now: 1)
                    #expect(claimed.map(\.id) == [id] && claimed.first?.app == app)
                    #expect(try tx.jobs.deadLetter(claimed[0].lease, error: "ServiceUnavailable", now: 2))
                    dead[app] = id
                }
                let chat = try #require(dead["chat"]), mine = try #require(dead["default"])
                #expect(try tx.jobs.list(app: "chat", state: .dead, limit: 10, beforeID: nil).map(\.id) == [chat])
                #expect(try tx.jobs.list(state: .dead, limit: 10, beforeID: nil).map(\.id) == [mine])
                #expect(try tx.jobs.find(id: chat, app: "default") == nil && tx.jobs.find(id: chat, app: "chat")?.app == "chat")
                #expect(try !tx.jobs.retryDead(id: chat, app: "default", now: 3))
                #expect(try tx.jobs.retryDead(matching: DeadJobFilter(), now: 3) == 1)
                #expect(try tx.jobs.find(id: chat, app: "chat")?.state == .dead)
                #expect(try tx.jobs.retryDead(id: chat, app: "chat", now: 4))
                #expect(try tx.jobs.depth(now: 5).counts[.queued] == 2)
            }
        }
    }
}

/// A value shared between threads in a test.
final class Shared<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    func update(_ body: (inout Value) -> Void) { lock.lock(); body(&stored); lock.unlock() }
    var value: Value { lock.lock(); defer { lock.unlock() }; return stored }
}
