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

    @Test("issue 17: the users whose global switch is off, from the index of those rows alone")
    func switchedOffFindsTheGlobalSwitchesOffOnly() throws {
        try withMigratedDatabase { db in
            #expect(try PreferenceStore.switchedOff(db, app: "default", userIDs: ["u1", "u2"]).isEmpty, "no preference at all")
            let saved = [
                PushPreferenceRecord(userID: "u1", scope: nil, isEnabled: false, updatedAt: 1),   // off: the one found
                PushPreferenceRecord(userID: "u2", scope: "s1", isEnabled: false, updatedAt: 1),  // a scope off, not the switch
                PushPreferenceRecord(userID: "u3", scope: nil, isEnabled: true, updatedAt: 1),    // the switch on
                PushPreferenceRecord(app: "other", userID: "u4", scope: nil, isEnabled: false, updatedAt: 1),
                PushPreferenceRecord(userID: "u5", scope: nil, isEnabled: false, updatedAt: 1),   // off, not asked for
            ]
            for record in saved { try PreferenceStore.save(db, record) }
            #expect(try PreferenceStore.switchedOff(db, app: "default", userIDs: ["u1", "u2", "u3", "u4", "u1", "nobody"]) == ["u1"])
            #expect(try PreferenceStore.switchedOff(db, app: "other", userIDs: ["u1", "u4"]) == ["u4"])
            #expect(try PreferenceStore.switchedOff(db, app: "default", userIDs: []).isEmpty)
            // The same answer as the general read the port's default derives it from.
            let general = try PreferenceStore.list(db, userIDs: ["u1", "u2", "u3", "u5"], scopes: [])
                .filter { $0.scope == nil && !$0.isEnabled }.map(\.userID)
            #expect(try PreferenceStore.switchedOff(db, app: "default", userIDs: ["u1", "u2", "u3", "u5"]) == Set(general))
            // Turned back on, the row leaves the index.
            try PreferenceStore.save(db, PushPreferenceRecord(userID: "u1", scope: nil, isEnabled: true, updatedAt: 2))
            try PreferenceStore.save(db, PushPreferenceRecord(userID: "u5", scope: nil, isEnabled: true, updatedAt: 2))
            #expect(try PreferenceStore.switchedOff(db, app: "default", userIDs: ["u1", "u5"]).isEmpty)
            #expect(try db.queryOne("SELECT count(*) FROM push_preferences INDEXED BY push_preferences_switched_off WHERE scope = '' AND is_enabled = 0")?[0]
                    == Int64(1))
        }
    }

    @Test func anEmptyEventListIsNotTheDefaults() throws {
        try withMigratedDatabase { db in
            try PreferenceStore.save(db, PushPreferenceRecord(userID: "u1", scope: "s", isEnabled: true, enabledEvents: [], updatedAt: 1))
            #expect(try PreferenceStore.find(db, userID: "u1", scope: "s")?.enabledEvents == [])
        }
    }
}
