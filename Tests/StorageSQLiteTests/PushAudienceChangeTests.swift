import HeraldCore
import StorageSQLite
import Synchronization
import Testing

/// ADR 0007's amendment: every SQLite write that can take a device out of its user's pushes
/// counts in its storage's `PushAudienceChange` inside its unit, so a push that waited in the
/// worker's backlog reads its device again.
@Suite struct PushAudienceChangeTests {
    /// Runs `write` in one unit on a fresh database holding u1's device d1 (token t1, session
    /// s1, expiring at 50,000) and tells whether the counter moved during it.
    private func counts(_ write: @escaping @Sendable (any StorageTransaction) throws -> Void) throws -> Bool {
        let storage = try SQLiteStorage.open(path: ":memory:")
        defer { storage.close() }
        try storage.writeSync { tx in
            _ = try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "apns", token: "t1"),
                                        sessionExpiresAt: 50_000, newID: "d1", now: 1_000)
        }
        let audience = try #require(storage.pushAudience)
        let before = audience.current
        try storage.writeSync { tx in try write(tx) }
        return audience.current != before
    }

    @Test("device deletes count: by id, by token, as invalid (DV-6) and by the purge")
    func deviceDeletesCount() throws {
        #expect(try counts { tx in _ = try tx.devices.delete(app: "default", id: "d1", userID: "u1") })
        #expect(try counts { tx in _ = try tx.devices.delete(app: "default", token: "t1", userID: "u1") })
        #expect(try counts { tx in _ = try tx.devices.deleteInvalid(id: "d1", invalidSince: nil) })
        #expect(try counts { tx in _ = try tx.devices.purge(notSeenSince: 2_000) })
    }

    @Test("a session ended or its expiry set counts, and so does a token that brings the expiry forward")
    func sessionWritesCount() throws {
        #expect(try counts { tx in _ = try tx.sessions.end(sid: "s1", app: "default", now: 2_000) })
        #expect(try counts { tx in _ = try tx.sessions.setExpiry(sid: "s1", app: "default", expiresAt: 3_000) })
        #expect(try counts { tx in _ = try tx.sessions.touch(sid: "s1", userID: "u1", app: "default", expiresAt: 40_000, now: 2_000) })
    }

    @Test("a saved preference counts")
    func aSavedPreferenceCounts() throws {
        #expect(try counts { tx in try tx.preferences.save(PushPreferenceRecord(userID: "u1", isEnabled: false, updatedAt: 2_000)) })
    }

    @Test("DV-1: a token that moves to another user counts; the device keeps its id and is the new user's")
    func aTokenTakenOverCounts() throws {
        let moved = Mutex<DeviceRecord?>(nil)
        #expect(try counts { tx in
            let answer = try tx.devices.register(DeviceRegistration(userID: "u2", sessionID: "s2", platform: "ios", provider: "apns", token: "t1"),
                                                 sessionExpiresAt: nil, newID: "d2", now: 2_000)
            moved.withLock { $0 = answer.created ? nil : answer.device }
        })
        let device = try #require(moved.withLock { $0 })
        #expect(device.id == "d1" && device.userID == "u2")
    }

    @Test("a device read carries its session's expiry, for a send that comes after the read")
    func aDeviceCarriesItsSessionsExpiry() throws {
        let storage = try SQLiteStorage.open(path: ":memory:")
        defer { storage.close() }
        let device = try storage.writeSync { tx in
            try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "apns", token: "t1"),
                                    sessionExpiresAt: 50_000, newID: "d1", now: 1_000).device
        }
        #expect(device.sessionExpiresAt == 50_000 && device.sessionActive)
        let later = try storage.readSync { tx in try tx.devices.find(ids: ["d1"], now: 60_000) }
        #expect(later.map(\.sessionExpiresAt) == [50_000] && later.map(\.sessionActive) == [false])
        let unbounded = try storage.writeSync { tx in
            try tx.devices.register(DeviceRegistration(userID: "u2", sessionID: "s2", platform: "ios", provider: "apns", token: "t2"),
                                    sessionExpiresAt: nil, newID: "d2", now: 1_000).device
        }
        #expect(unbounded.sessionExpiresAt == nil)
    }
}
