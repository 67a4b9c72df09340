import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct PreferenceStoreTests {
    @Test func saveUpsertsPerScopeAndTheGlobalSwitchIsItsOwnRow() throws {
        try withMigratedDatabase { db in
            #expect(try PreferenceStore.find(db, userID: "u1", scope: "store-1") == nil)
            let scoped = PushPreferenceRecord(userID: "u1", scope: "store-1", isEnabled: true,
                                              enabledEvents: ["order.paid", "conversation.message"], updatedAt: 1_000)
            try PreferenceStore.save(db, scoped)
            #expect(try PreferenceStore.find(db, userID: "u1", scope: "store-1") == scoped)
            #expect(try PreferenceStore.find(db, userID: "u1", scope: nil) == nil, "a scope's row is not the global switch")

            let global = PushPreferenceRecord(userID: "u1", scope: nil, isEnabled: false, updatedAt: 2_000)
            try PreferenceStore.save(db, global)
            #expect(try PreferenceStore.find(db, userID: "u1", scope: nil) == global)

            var changed = scoped
            changed.isEnabled = false
            changed.enabledEvents = nil  // back to the catalog's defaults
            changed.updatedAt = 3_000
            try PreferenceStore.save(db, changed)
            #expect(try PreferenceStore.find(db, userID: "u1", scope: "store-1") == changed)
            #expect(try count(db, "push_preferences") == 2)
            #expect(try PreferenceStore.find(db, app: "other", userID: "u1", scope: nil) == nil)
        }
    }

    @Test func listReadsTheGlobalSwitchAndTheGivenScopesOfManyUsers() throws {
        try withMigratedDatabase { db in
            let saved = [
                PushPreferenceRecord(userID: "u1", scope: nil, isEnabled: false, updatedAt: 1),
                PushPreferenceRecord(userID: "u1", scope: "s1", isEnabled: true, updatedAt: 1),
                PushPreferenceRecord(userID: "u1", scope: "s2", isEnabled: true, updatedAt: 1),
                PushPreferenceRecord(userID: "u2", scope: "s1", isEnabled: false, enabledEvents: ["a"], updatedAt: 1),
                PushPreferenceRecord(userID: "u3", scope: nil, isEnabled: true, updatedAt: 1),
                PushPreferenceRecord(app: "other", userID: "u1", scope: "s1", isEnabled: true, updatedAt: 1),
            ]
            for record in saved { try PreferenceStore.save(db, record) }
            let found = try PreferenceStore.list(db, userIDs: ["u1", "u2", "nobody"], scopes: ["s1"])
            #expect(Set(found.map { "\($0.userID)/\($0.scope ?? "-")" }) == ["u1/-", "u1/s1", "u2/s1"])
            #expect(found.contains(saved[3]))
            #expect(try PreferenceStore.list(db, userIDs: ["u1"], scopes: []).map(\.scope) == [nil])
            #expect(try PreferenceStore.list(db, userIDs: [], scopes: ["s1"]).isEmpty)
        }
    }

    @Test func anEmptyEventListIsNotTheDefaults() throws {
        try withMigratedDatabase { db in
            try PreferenceStore.save(db, PushPreferenceRecord(userID: "u1", scope: "s", isEnabled: true, enabledEvents: [], updatedAt: 1))
            #expect(try PreferenceStore.find(db, userID: "u1", scope: "s")?.enabledEvents == [])
        }
    }
}
