import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

/// The apps table (migration 10) through the `AppRepository` port: round trip of settings, sealed
/// secrets and server keys, a key owned by one app only, and deletion of an app's rows everywhere.
@Suite struct AppStoreTests {
    private func withStorage(_ body: (SQLiteStorage) throws -> Void) throws {
        try withTemporaryDirectory { directory in
            let storage = try SQLiteStorage.open(path: directory.databasePath())
            defer { storage.close() }
            try body(storage)
        }
    }

    private func app(_ id: String, keys: [String] = []) -> AppRecord {
        var settings = AppSettings()
        settings.tokens.issuer = "https://\(id).example"
        settings.tokens.sessionClaim = nil
        settings.payload.rootKey = "respondo"
        settings.push.apnsTopic = "com.example.\(id)"
        return AppRecord(id: AppID(id)!, settings: settings,
                         secrets: [.apnsKey: SealedSecret(sealed: "v1.k.n.c", fingerprint: "00ff", setAt: 5)],
                         serverKeys: keys.map { ServerKeyEntry(hash: $0, createdAt: 1) }, createdAt: 1, updatedAt: 2)
    }

    @Test func anAppRoundTripsWithItsSettingsSecretsAndKeys() throws {
        try withStorage { storage in
            let stored = app("chat", keys: ["aa", "bb"])
            try storage.writeSync { tx in try tx.apps.create(stored) }
            let found = try storage.readSync { tx in try tx.apps.find(AppID("chat")!) }
            #expect(found == stored)
            #expect(found?.settings.tokens.sessionClaim == nil)
            #expect(try storage.readSync { tx in try tx.apps.list().map(\.id.rawValue) } == ["chat"])
            #expect(try storage.readSync { tx in try tx.apps.find(AppID("other")!) } == nil)
        }
    }

    @Test func aServerKeyBelongsToOneAppAndTheIdIsUnique() throws {
        try withStorage { storage in
            try storage.writeSync { tx in try tx.apps.create(app("a", keys: ["k1"])) }
            #expect(throws: StorageError.self) { try storage.writeSync { tx in try tx.apps.create(app("b", keys: ["k1"])) } }
            #expect(throws: StorageError.self) { try storage.writeSync { tx in try tx.apps.create(app("a")) } }
            // The failed create left nothing behind.
            #expect(try storage.readSync { tx in try tx.apps.find(AppID("b")!) } == nil)
            // Rotation: an update replaces the key set.
            let rotated = app("a", keys: ["k2", "k3"])
            #expect(try storage.writeSync { tx in try tx.apps.update(rotated) })
            #expect(try storage.readSync { tx in try tx.apps.find(AppID("a")!)?.serverKeys.map(\.hash) } == ["k2", "k3"])
            #expect(try storage.writeSync { tx in try tx.apps.update(app("missing")) } == false)
            try storage.writeSync { tx in try tx.apps.create(app("b", keys: ["k1"])) }  // k1 is free again
        }
    }

    @Test func deletingAnAppRemovesItsRowsAndNoOtherApps() throws {
        try withStorage { storage in
            try storage.writeSync { tx in
                try tx.apps.create(app("gone"))
                for (app, id) in [("gone", "d1"), ("default", "d2")] {
                    var registration = DeviceRegistration(userID: "u1", sessionID: "s-\(app)", platform: "android", provider: "fcm",
                                                          token: "tok-\(app)")
                    registration.app = app
                    _ = try tx.devices.register(registration, sessionExpiresAt: nil, newID: id, now: 1)
                    _ = try tx.notifications.insert(NotificationRecord(id: "n-\(app)", app: app, userID: "u1", kind: "k", createdAt: 1))
                    _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{\"device_id\":\"\(id)\"}", runAt: 0, now: 0)
                }
            }
            #expect(try storage.writeSync { tx in try tx.apps.delete(AppID("gone")!) })
            #expect(try storage.writeSync { tx in try tx.apps.delete(AppID("gone")!) } == false)
            let (gone, kept, apps) = try storage.readSync { tx in
                (try tx.devices.find(id: "d1", now: 1), try tx.devices.find(id: "d2", now: 1), try tx.apps.list())
            }
            #expect(gone == nil && kept != nil && apps.isEmpty)
            let jobs = try storage.readSync { tx in try tx.jobs.find(id: 1) == nil && tx.jobs.find(id: 2) != nil }
            #expect(jobs)
            let counts = try storage.readSync { tx in
                (try tx.notifications.unreadCount(app: "gone", userID: "u1"), try tx.notifications.unreadCount(app: "default", userID: "u1"))
            }
            #expect(counts.0 == 0 && counts.1 == 1)
        }
    }
}
