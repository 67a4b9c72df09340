import Foundation
import HeraldCore
import Testing

/// The apps table and the app-aware calls (AP-1, ADR 0006) on every adapter: what SQLite's
/// `AppStore` does (Tests/StorageSQLiteTests/AppStoreTests holds its own cases) PostgreSQL's
/// `PostgresAppRepository` must do too.
@Suite struct AppContractTests {
    private func app(_ id: String, keys: [String] = [], updatedAt: Int64 = 2) -> AppRecord {
        var settings = AppSettings()
        settings.tokens.issuer = "https://\(id).example"
        settings.tokens.sessionClaim = nil
        settings.payload.rootKey = "respondo"
        settings.push.apnsTopic = "com.example.\(id)"
        return AppRecord(id: AppID(id)!, settings: settings,
                         secrets: [.apnsKey: SealedSecret(sealed: "v1.k.n.c", fingerprint: "00ff", setAt: 5)],
                         serverKeys: keys.map { ServerKeyEntry(hash: $0, createdAt: 1) }, createdAt: 1, updatedAt: updatedAt)
    }

    private func registration(app: String, sid: String, token: String, user: String = "u1", installation: String? = nil) -> DeviceRegistration {
        var registration = DeviceRegistration(userID: user, sessionID: sid, platform: "android", provider: "fcm", token: token,
                                              installationID: installation)
        registration.app = app
        return registration
    }

    @Test(arguments: Engine.available)
    func anAppRoundTripsWithItsSettingsSecretsAndKeys(engine: Engine) throws {
        try withStorage(engine) { storage in
            let stored = app("chat", keys: ["bb", "aa"])
            try storage.writeSync { tx in
                try tx.apps.create(stored)
                try tx.apps.create(app("b-app"))
            }
            let found = try storage.readSync { tx in try tx.apps.find(AppID("chat")!) }
            #expect(found?.settings == stored.settings && found?.secrets == stored.secrets)
            // Keys come back ordered by time, then hash.
            #expect(found?.serverKeys.map(\.hash) == ["aa", "bb"])
            #expect(found?.settings.tokens.sessionClaim == nil)
            #expect(found?.createdAt == 1 && found?.updatedAt == 2)
            #expect(try storage.readSync { tx in try tx.apps.list().map(\.id.rawValue) } == ["b-app", "chat"])
            #expect(try storage.readSync { tx in try tx.apps.find(AppID("other")!) } == nil)
        }
    }

    @Test(arguments: Engine.available)
    func aServerKeyBelongsToOneAppAndTheIdIsUnique(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx in try tx.apps.create(app("a", keys: ["k1"])) }
            for duplicate in [app("b", keys: ["k1"]), app("a")] {
                do {
                    try storage.writeSync { tx in try tx.apps.create(duplicate) }
                    Issue.record("\(duplicate.id.rawValue) was created twice or took another app's key")
                } catch let error as StorageError {
                    #expect(error.isUniqueViolation, "got \(error)")
                }
            }
            // The failed create left nothing behind.
            #expect(try storage.readSync { tx in try tx.apps.find(AppID("b")!) } == nil)
            // Rotation: an update replaces the key set and keeps createdAt.
            let updated = try storage.writeSync { tx in try tx.apps.update(app("a", keys: ["k2", "k3"], updatedAt: 9)) }
            #expect(updated)
            let rotated = try storage.readSync { tx in try tx.apps.find(AppID("a")!).map { [$0.updatedAt, $0.createdAt] } }
            #expect(rotated == [9, 1])
            #expect(try storage.readSync { tx in try tx.apps.find(AppID("a")!)?.serverKeys.map(\.hash) } == ["k2", "k3"])
            #expect(try storage.writeSync { tx in try tx.apps.update(app("missing")) } == false)
            #expect(try storage.readSync { tx in try tx.apps.find(AppID("missing")!) } == nil)
            try storage.writeSync { tx in try tx.apps.create(app("b", keys: ["k1"])) }  // k1 is free again
            // An update taking another app's key fails and keeps the app as it was.
            #expect(throws: StorageError.self) { try storage.writeSync { tx in try tx.apps.update(app("a", keys: ["k1"])) } }
            #expect(try storage.readSync { tx in try tx.apps.find(AppID("a")!)?.serverKeys.map(\.hash) } == ["k2", "k3"])
        }
    }

    @Test(arguments: Engine.available)
    func deletingAnAppRemovesItsRowsInEveryTableAndNoOtherApps(engine: Engine) throws {
        try withStorage(engine) { storage in
            let jobs = try storage.writeSync { tx in
                try tx.apps.create(app("gone", keys: ["kg"]))
                var jobs: [String: Int64] = [:]
                for (app, device) in [("gone", "d1"), ("default", "d2")] {
                    _ = try tx.devices.register(registration(app: app, sid: "s-\(app)", token: "tok-\(app)"),
                                                sessionExpiresAt: nil, newID: device, now: 1)
                    let plan = try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: 1))
                    _ = try tx.notifications.insert(NotificationRecord(id: "n-\(app)", app: app, userID: "u1", kind: "k", planID: plan, createdAt: 1))
                    try tx.deliveries.record(DeliveryEntry(notificationID: "n-\(app)", userID: "u1", outcome: .queued, at: 1))
                    try tx.preferences.save(PushPreferenceRecord(app: app, userID: "u1", isEnabled: false, updatedAt: 1))
                    _ = try tx.members.put(ScopeMember(app: app, scope: "s", userID: "u1", permissions: ["read"], updatedAt: 1))
                    try tx.idempotency.reserve(IdempotencyRecord(app: app, key: "k", requestHash: "h", responseJSON: "", complete: false, createdAt: 1))
                    _ = try tx.users.put(UserProfile(app: app, userID: "u1", locale: "de", updatedAt: 1))
                    jobs[device] = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{\"device_id\":\"\(device)\"}", runAt: 0, now: 0)
                }
                // Payloads that name no device of the app stay, malformed ones too.
                jobs["malformed"] = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{\"device_id\": oops", runAt: 0, now: 0)
                jobs["other"] = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{\"nested\":{\"device_id\":\"d1\"}}", runAt: 0, now: 0)
                // The app's own jobs go by their app, whatever their payload (a receipt check).
                jobs["gone-receipt"] = try tx.jobs.enqueue(kind: "push.receipt", payloadJSON: "{}", app: "gone", runAt: 0, now: 0)
                return jobs
            }
            #expect(try storage.writeSync { tx in try tx.apps.delete(AppID("gone")!) })
            #expect(try storage.writeSync { tx in try tx.apps.delete(AppID("gone")!) } == false)
            try storage.readSync { tx throws in
                #expect(try tx.apps.list().isEmpty)
                #expect(try tx.devices.find(id: "d1", now: 1) == nil)
                #expect(try tx.devices.find(id: "d2", now: 1) != nil)
                #expect(try tx.jobs.find(id: jobs["d1"]!) == nil)
                #expect(try tx.jobs.find(id: jobs["d2"]!) != nil)
                #expect(try tx.jobs.find(id: jobs["malformed"]!) != nil)
                #expect(try tx.jobs.find(id: jobs["other"]!) != nil)
                #expect(try tx.jobs.find(id: jobs["gone-receipt"]!, app: "gone") == nil)
                #expect(try tx.notifications.find(id: "n-gone") == nil)
                #expect(try tx.notifications.find(id: "n-default") != nil)
                #expect(try tx.deliveries.list(notificationID: "n-gone").isEmpty)
                #expect(try tx.deliveries.list(notificationID: "n-default").count == 1)
                #expect(try tx.plans.list(after: 0, limit: 10).count == 1)
                #expect(try tx.sessions.find(sid: "s-gone", app: "gone") == nil)
                #expect(try tx.sessions.find(sid: "s-default") != nil)
                #expect(try tx.preferences.find(app: "gone", userID: "u1", scope: nil) == nil)
                #expect(try tx.preferences.find(app: "default", userID: "u1", scope: nil) != nil)
                #expect(try tx.members.find(app: "gone", scope: "s", userID: "u1") == nil)
                #expect(try tx.members.find(app: "default", scope: "s", userID: "u1") != nil)
                #expect(try tx.idempotency.find(app: "gone", key: "k", notBefore: 0) == nil)
                #expect(try tx.idempotency.find(app: "default", key: "k", notBefore: 0) != nil)
                #expect(try tx.users.find(app: "gone", userID: "u1") == nil)
                #expect(try tx.users.find(app: "default", userID: "u1") != nil)
            }
            // Its server key went with it: another app may take it.
            try storage.writeSync { tx in try tx.apps.create(app("next", keys: ["kg"])) }
        }
    }

    /// ADR 0019 (breaker11): a session is named by its app and sid. Two apps' sessions of one
    /// sid are two sessions: each registers, rotates, expires and ends its own, and every read
    /// that joins a device to its session reads its own app's.
    @Test(arguments: Engine.available)
    func twoAppsSessionsOfOneSidAreTwoSessions(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx throws in
                _ = try tx.devices.register(registration(app: "chat", sid: "17", token: "t-chat"), sessionExpiresAt: nil, newID: "d1", now: 1)
                _ = try tx.devices.register(registration(app: "default", sid: "17", token: "t-default"), sessionExpiresAt: nil, newID: "d2", now: 2)
                #expect(try tx.sessions.find(sid: "17", app: "chat")?.lastSeenAt == 1)
                #expect(try tx.sessions.find(sid: "17", app: "default")?.lastSeenAt == 2)
                // Rotation is within the app: default's new token replaces default's device only.
                _ = try tx.devices.register(registration(app: "default", sid: "17", token: "t-default-2"), sessionExpiresAt: nil, newID: "d3", now: 3)
                #expect(try tx.devices.find(id: "d2", now: 3) == nil)
                #expect(try tx.devices.find(ids: ["d1", "d3"], now: 3).map(\.id).sorted() == ["d1", "d3"])
                // A token's expiry touches its own app's session.
                _ = try tx.sessions.touch(sid: "17", userID: "u1", app: "default", expiresAt: 2, now: 4)
                #expect(try tx.sessions.find(sid: "17", app: "chat")?.expiresAt == nil)
                #expect(try tx.devices.find(id: "d3", now: 5)?.sessionActive == false)
                #expect(try tx.devices.list(app: "chat", userIDs: ["u1"], now: 5).map { [$0.id: $0.sessionActive] } == [["d1": true]])
                #expect(try tx.devices.planningReads(app: "chat", userIDs: ["u1"], scope: nil, now: 5)?.devices.map(\.sessionActive) == [true])
                #expect(try tx.devices.planningReads(app: "default", userIDs: ["u1"], scope: nil, now: 5)?.devices.map(\.sessionActive) == [false])
                // So does the backend's: chat sets and clears its own, default's is left.
                #expect(try tx.sessions.setExpiry(sid: "17", app: "chat", expiresAt: 10_000))
                #expect(try tx.sessions.find(sid: "17", app: "default")?.expiresAt == 2)
                #expect(try tx.sessions.setExpiry(sid: "17", app: "default", expiresAt: nil))
                #expect(try tx.sessions.find(sid: "17", app: "chat")?.expiresAt == 10_000)
                #expect(try !tx.sessions.setExpiry(sid: "18", app: "chat", expiresAt: nil), "an app's unknown sid")
                // Ending default's 17 deletes default's device only.
                #expect(try tx.sessions.end(sid: "17", app: "default", now: 6) == 1)
                #expect(try tx.devices.find(id: "d3", now: 7) == nil)
                #expect(try tx.devices.find(id: "d1", now: 7)?.sessionActive == true)
                #expect(try tx.sessions.find(sid: "17", app: "chat")?.endedAt == nil)
                #expect(try tx.sessions.endedSessions() == [SessionKey(app: "default", sid: "17")])
                #expect(throws: DeviceRegistrationError.sessionEnded) {
                    try tx.devices.register(registration(app: "default", sid: "17", token: "t-default-3"), sessionExpiresAt: nil, newID: "d4", now: 8)
                }
                _ = try tx.devices.register(registration(app: "chat", sid: "17", token: "t-chat-web"), sessionExpiresAt: nil, newID: "d5", now: 8)
                // Another user of the same app still cannot share the sid.
                #expect(throws: DeviceRegistrationError.sessionConflict) {
                    try tx.devices.register(registration(app: "chat", sid: "17", token: "t-other", user: "u2"), sessionExpiresAt: nil, newID: "d6", now: 9)
                }
                // An app's end of a sid it never used is its own: the other app may still use it.
                #expect(try tx.sessions.end(sid: "s-new", app: "chat", now: 10) == 0)
                #expect(try tx.sessions.find(sid: "s-new", app: "default") == nil)
                _ = try tx.devices.register(registration(app: "default", sid: "s-new", token: "t-new"), sessionExpiresAt: nil, newID: "d7", now: 11)
                #expect(try Set(tx.sessions.endedSessions()) == [SessionKey(app: "default", sid: "17"), SessionKey(app: "chat", sid: "s-new")])
                #expect(try tx.sessions.endedSessionIDs() == ["17"])
                #expect(try tx.sessions.end(sid: "17", app: "chat", now: 12) == 1, "d5 replaced d1 (rotation, one platform)")
                #expect(try tx.devices.list(app: "chat", userID: "u1", now: 12).isEmpty)
                #expect(try tx.devices.list(app: "default", userID: "u1", now: 12).map(\.id) == ["d7"])
            }
        }
    }

    @Test(arguments: Engine.available)
    func aUserBoundRegistrationRotatesByInstallationNotBySession(engine: Engine) throws {
        try withStorage(engine) { storage in
            try storage.writeSync { tx throws in
                func bound(_ token: String, installation: String?) -> DeviceRegistration {
                    var value = self.registration(app: "chat", sid: "user:u1", token: token, installation: installation)
                    value.bindsToUser = true
                    return value
                }
                _ = try tx.devices.register(bound("t1", installation: "i1"), sessionExpiresAt: nil, newID: "d1", now: 1)
                _ = try tx.devices.register(bound("t2", installation: "i2"), sessionExpiresAt: nil, newID: "d2", now: 2)
                _ = try tx.devices.register(bound("t3", installation: nil), sessionExpiresAt: nil, newID: "d3", now: 3)
                // Same standing session and platform, other installations: all kept.
                #expect(try Set(tx.devices.list(app: "chat", userID: "u1", now: 4).map(\.id)) == ["d1", "d2", "d3"])
                // A new token of install i1 replaces its earlier one.
                _ = try tx.devices.register(bound("t4", installation: "i1"), sessionExpiresAt: nil, newID: "d4", now: 5)
                #expect(try Set(tx.devices.list(app: "chat", userID: "u1", now: 6).map(\.id)) == ["d2", "d3", "d4"])
            }
        }
    }
}
