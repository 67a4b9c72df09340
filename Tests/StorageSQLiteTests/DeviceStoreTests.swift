import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct DeviceStoreTests {
    private func withDatabase(_ body: (SQLiteConnection) throws -> Void) throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try Migrator.migrate(connection, migrations: HeraldSchema.migrations)
        try body(connection)
    }

    private func registration(user: String = "u1", session: String = "s1", platform: String = "android", token: String = "t1",
                              installation: String? = nil) -> DeviceRegistration {
        DeviceRegistration(userID: user, sessionID: session, platform: platform, provider: "fcm", token: token, installationID: installation)
    }

    @Test func devicesBoundToTheUserRotateByInstallationOnlyAndStayInTheirApp() throws {
        try withDatabase { db in
            func userBound(_ token: String, installation: String?, app: String = "plain") -> DeviceRegistration {
                var r = registration(session: DeviceRegistration.userSessionID(app: app, userID: "u1"), token: token, installation: installation)
                r.app = app
                r.bindsToUser = true
                return r
            }
            _ = try DeviceStore.register(db, userBound("t1", installation: "phone"), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            _ = try DeviceStore.register(db, userBound("t2", installation: "tablet"), sessionExpiresAt: nil, newID: "d2", now: 1_000)
            _ = try DeviceStore.register(db, userBound("t3", installation: nil), sessionExpiresAt: nil, newID: "d3", now: 1_000)
            // One standing session, yet no session rotation: all three stay.
            #expect(Set(try DeviceStore.list(db, userID: "u1", app: "plain", now: 2_000).map(\.id)) == ["d1", "d2", "d3"])
            // The phone's new token replaces its old one; the others stay.
            _ = try DeviceStore.register(db, userBound("t4", installation: "phone"), sessionExpiresAt: nil, newID: "d4", now: 2_000)
            #expect(Set(try DeviceStore.list(db, userID: "u1", app: "plain", now: 2_000).map(\.id)) == ["d2", "d3", "d4"])
            #expect(try DeviceStore.list(db, userID: "u1", now: 2_000).isEmpty, "another app's devices are not the default app's")
            #expect(!(try DeviceStore.delete(db, id: "d2", userID: "u1")), "deleting names the app")
            #expect(try DeviceStore.delete(db, app: "plain", id: "d2", userID: "u1"))
        }
    }

    @Test func registeringTwiceUpdatesOneRow() throws {
        try withDatabase { db in
            let first = try DeviceStore.register(db, registration(), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            let second = try DeviceStore.register(db, registration(), sessionExpiresAt: nil, newID: "d2", now: 2_000)
            #expect(first.created && !second.created)
            #expect(second.device.id == "d1" && second.device.lastSeenAt == 2_000 && second.device.createdAt == 1_000)
            #expect(try DeviceStore.list(db, userID: "u1", now: 2_000).count == 1)
        }
    }

    @Test func anotherUsersInstallationKeepsItsTokenAndNothingChanges() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(installation: "inst-a"), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            #expect(throws: DeviceRegistrationError.installationMismatch) {
                _ = try DeviceStore.register(db, registration(user: "u2", session: "s2", installation: "inst-b"),
                                             sessionExpiresAt: nil, newID: "d2", now: 2_000)
            }
            #expect(try DeviceStore.find(db, id: "d1", now: 2_000)?.userID == "u1")
            #expect(try SessionStore.find(db, sid: "s2") == nil, "the refused registration left no session row")
            // The same installation moves it.
            let moved = try DeviceStore.register(db, registration(user: "u2", session: "s2", installation: "inst-a"),
                                                 sessionExpiresAt: nil, newID: "d2", now: 3_000)
            #expect(moved.device.id == "d1" && moved.device.userID == "u2")
        }
    }

    @Test func oneFCMTokenUnderTwoPlatformLabelsIsOneDeviceAndMeetsTheInstallationCheck() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(platform: "ios", installation: "inst-a"), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            // Another user's app, the same FCM token labelled android: refused, not a second device.
            #expect(throws: DeviceRegistrationError.installationMismatch) {
                _ = try DeviceStore.register(db, registration(user: "u2", session: "s2", platform: "android", installation: "inst-b"),
                                             sessionExpiresAt: nil, newID: "d2", now: 2_000)
            }
            // The same user relabelling it: the one row follows.
            let relabelled = try DeviceStore.register(db, registration(platform: "android", installation: "inst-a"),
                                                      sessionExpiresAt: nil, newID: "d3", now: 3_000)
            #expect(!relabelled.created && relabelled.device.id == "d1" && relabelled.device.platform == "android")
            #expect(try DeviceStore.list(db, userID: "u1", now: 3_000).map(\.id) == ["d1"])
        }
    }

    @Test func theSameTokenOnTheSamePlatformUnderAnotherProviderIsRelabelledNotRefused() throws {
        try withDatabase { db in
            let hex = String(repeating: "ab", count: 32)
            let apns = DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "apns", token: hex)
            let fcm = DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "fcm", token: hex)
            _ = try DeviceStore.register(db, apns, sessionExpiresAt: nil, newID: "d1", now: 1_000)
            let moved = try DeviceStore.register(db, fcm, sessionExpiresAt: nil, newID: "d2", now: 2_000)
            #expect(!moved.created && moved.device.id == "d1" && moved.device.provider == "fcm")
            #expect(try DeviceStore.list(db, userID: "u1", now: 2_000).map(\.id) == ["d1"])
        }
    }

    @Test func migrationNineKeepsTheLastSeenRowOfEachProviderToken() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try Migrator.migrate(connection, migrations: Array(HeraldSchema.migrations.prefix(8)))
        for (id, platform, seen) in [("d-ios", "ios", 5), ("d-android", "android", 9), ("d-web", "web", 7)] {
            try connection.run("""
                INSERT INTO devices (id, user_id, platform, provider, token, created_at, last_seen_at)
                VALUES (?, 'u', ?, 'fcm', 'same-token', 0, ?)
                """, [id, platform, Int64(seen)])
        }
        _ = try Migrator.migrate(connection)
        #expect(try DeviceStore.list(connection, userID: "u", now: 10).map(\.id) == ["d-android"])
        #expect(throws: SQLiteError.self) {
            try connection.run("INSERT INTO devices (id, user_id, platform, provider, token, created_at, last_seen_at) VALUES ('x', 'u', 'ios', 'fcm', 'same-token', 0, 0)")
        }
    }

    @Test func rotationDropsTheSessionsEarlierDeviceOfThatPlatformOnly() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(token: "old"), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            _ = try DeviceStore.register(db, registration(platform: "web", token: "w"), sessionExpiresAt: nil, newID: "d2", now: 1_000)
            _ = try DeviceStore.register(db, registration(token: "new"), sessionExpiresAt: nil, newID: "d3", now: 2_000)
            #expect(Set(try DeviceStore.list(db, userID: "u1", now: 2_000).map(\.id)) == ["d2", "d3"])
        }
    }

    @Test func endedSessionsLoseTheirDevicesAndRefuseNewOnes() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            #expect(try SessionStore.end(db, sid: "s1", now: 2_000) == 1)
            #expect(try DeviceStore.list(db, userID: "u1", now: 2_000).isEmpty)
            #expect(throws: DeviceRegistrationError.sessionEnded) {
                _ = try DeviceStore.register(db, registration(), sessionExpiresAt: nil, newID: "d2", now: 3_000)
            }
            #expect(try SessionStore.endedSessions(db) == [SessionKey(app: "default", sid: "s1")])
        }
    }

    @Test func expiredSessionsKeepRowsButListInactiveAndTheBackendsExpiryWins() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(), sessionExpiresAt: 10_000, newID: "d1", now: 1_000)
            #expect(try DeviceStore.find(db, id: "d1", now: 5_000)?.sessionActive == true)
            #expect(try DeviceStore.find(db, id: "d1", now: 10_000)?.sessionActive == false)
            #expect(try SessionStore.setExpiry(db, sid: "s1", expiresAt: 2_000))
            // The client registers again with its old token's session_exp: the backend's expiry stays.
            _ = try DeviceStore.register(db, registration(), sessionExpiresAt: 10_000, newID: "d1", now: 3_000)
            #expect(try SessionStore.find(db, sid: "s1")?.expiresAt == 2_000)
            #expect(try DeviceStore.find(db, id: "d1", now: 3_000)?.sessionActive == false)
        }
    }

    @Test func purgeAndInvalidTokenDeletion() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(token: "stale", installation: nil), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            _ = try DeviceStore.register(db, registration(session: "s2", token: "fresh"), sessionExpiresAt: nil, newID: "d2", now: 9_000)
            #expect(try DeviceStore.purge(db, notSeenSince: 5_000) == 1)
            #expect(try DeviceStore.find(db, id: "d1", now: 9_000) == nil)
            // Registered again (9 000) after the provider's verdict (8 000): kept (PU-5c).
            #expect(!(try DeviceStore.deleteInvalid(db, id: "d2", invalidSince: 8_000)))
            #expect(try DeviceStore.deleteInvalid(db, id: "d2", invalidSince: 9_500))
        }
    }

    @Test func anotherUsersSidIsRefusedAndTheirSessionUntouched() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(user: "alice", session: "sess-1", token: "a"), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            #expect(throws: DeviceRegistrationError.sessionConflict) {
                _ = try DeviceStore.register(db, registration(user: "bob", session: "sess-1", token: "b"), sessionExpiresAt: 1_500,
                                             newID: "d2", now: 2_000)
            }
            #expect(try DeviceStore.list(db, userID: "alice", now: 2_000).map(\.id) == ["d1"])
            #expect(try DeviceStore.list(db, userID: "bob", now: 2_000).isEmpty)
            // Bob's token neither refreshed nor expired Alice's session.
            let session = try #require(try SessionStore.find(db, sid: "sess-1"))
            #expect(session.userID == "alice" && session.expiresAt == nil && session.lastSeenAt == 1_000)
        }
    }

    @Test func deleteByIDIsScopedToTheUser() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            #expect(!(try DeviceStore.delete(db, id: "d1", userID: "someone-else")))
            #expect(try DeviceStore.delete(db, id: "d1", userID: "u1"))
        }
    }

    @Test func listOfManyUsersGroupsByUserNewestFirstWithActive() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(user: "u2", session: "s2", token: "b1"), sessionExpiresAt: nil, newID: "d3", now: 1_000)
            _ = try DeviceStore.register(db, registration(user: "u1", token: "a1"), sessionExpiresAt: 5_000, newID: "d1", now: 1_000)
            _ = try DeviceStore.register(db, registration(user: "u1", platform: "web", token: "a2"), sessionExpiresAt: 5_000, newID: "d2", now: 2_000)
            _ = try DeviceStore.register(db, registration(user: "u3", session: "s3", token: "c1"), sessionExpiresAt: nil, newID: "d4", now: 1_000)
            let devices = try DeviceStore.list(db, userIDs: ["u2", "ghost", "u1"], now: 6_000)
            #expect(devices.map(\.id) == ["d2", "d1", "d3"])
            #expect(devices.map(\.sessionActive) == [false, false, true], "u1's session expired at 5 000")
            #expect(try DeviceStore.list(db, userIDs: [], now: 6_000).isEmpty)
            #expect(try DeviceStore.list(db, userIDs: ["u1"], app: "other", now: 6_000).isEmpty)
            // A quote or bracket in an id is data inside the bound JSON, not SQL or JSON syntax.
            #expect(try DeviceStore.list(db, userIDs: ["u1\"]) --", "u3"], now: 6_000).map(\.id) == ["d4"])
        }
    }

    /// Issue 17: the combined planning read answers what the three reads it replaces answer, for
    /// the users with a device.
    @Test func planningReadsAreTheDevicesWithTheirUsersLanguagesAndPreferences() throws {
        try withDatabase { db in
            _ = try DeviceStore.register(db, registration(user: "u1", token: "a1"), sessionExpiresAt: nil, newID: "d1", now: 1_000)
            _ = try DeviceStore.register(db, registration(user: "u1", platform: "web", token: "a2"), sessionExpiresAt: nil, newID: "d2", now: 2_000)
            _ = try DeviceStore.register(db, registration(user: "u2", session: "s2", token: "b1"), sessionExpiresAt: 1_500, newID: "d3", now: 1_000)
            try UserStore.put(db, UserProfile(userID: "u1", locale: "pt-BR", updatedAt: 1))
            try UserStore.put(db, UserProfile(userID: "u3", locale: "de", updatedAt: 1))   // no device: not asked
            try UserStore.put(db, UserProfile(userID: "u2", locale: nil, updatedAt: 1))
            let global = PushPreferenceRecord(userID: "u1", isEnabled: false, updatedAt: 3)
            let scoped = PushPreferenceRecord(userID: "u1", scope: "store-1", isEnabled: true, enabledEvents: ["order.paid"], updatedAt: 4)
            let other = PushPreferenceRecord(userID: "u2", scope: "store-2", isEnabled: false, updatedAt: 5)
            for record in [global, scoped, other] { try PreferenceStore.save(db, record) }
            let users = ["u2", "u3", "u1", "ghost"]

            for scope in [nil, "store-1", "store-2"] {
                let reads = try DeviceStore.planningReads(db, userIDs: users, app: "default", scope: scope, now: 2_000)
                #expect(reads.devices == (try DeviceStore.list(db, userIDs: users, now: 2_000)))
                #expect(reads.devices.map(\.sessionActive) == [true, true, false])
                #expect(reads.userLocales == ["u1": "pt-BR"])
                let expected = try PreferenceStore.list(db, userIDs: ["u1", "u2"], scopes: scope.map { [$0] } ?? [])
                #expect(Set(reads.preferences.map(\.scope)) == Set(expected.map(\.scope)) && reads.preferences.count == expected.count,
                        "scope \(scope ?? "nil")")
                for record in expected { #expect(reads.preferences.contains(record)) }
            }
            #expect(try DeviceStore.planningReads(db, userIDs: users, app: "other", scope: nil, now: 2_000)
                == PlanningReads(devices: [], userLocales: [:], preferences: []))
        }
    }
}
