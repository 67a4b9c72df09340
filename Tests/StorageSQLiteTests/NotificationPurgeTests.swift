import HeraldCore
@testable import StorageSQLite
import Testing

/// The retention purge of notifications on SQLite (ADR 0012): batches, the cutoff, the records
/// that go with a notification, what the inbox reads after, and that each batch is one write.
@Suite struct NotificationPurgeTests {
    private let t: Int64 = 1_764_000_000_000

    private func new(_ id: String, user: String = "u1", at: Int64, inInbox: Bool = true) -> NotificationRecord {
        NotificationRecord(id: id, userID: user, kind: "k", inInbox: inInbox, createdAt: at)
    }

    private func count(_ db: SQLiteConnection, _ table: String) throws -> Int64 {
        try db.queryOne("SELECT count(*) FROM \(table)")?[0] ?? -1
    }

    /// Stores, in this order: an untimed row created after the cutoff (the lowest seq), an
    /// untimed one before it, timed ones at t-3, t-2, t-1 (read), t (the cutoff itself), t+1, a
    /// push-only one at t-2 and another user's at t-1; each with a delivery record, the t-3 one
    /// with a second recorded long after the cutoff. - Returns: ids by name.
    private func store(_ db: SQLiteConnection) throws -> [String: String] {
        var ids: [String: String] = ["young-untimed": "young-untimed", "old-untimed": "old-untimed"]
        _ = try NotificationStore.insert(db, new("young-untimed", at: t + 5))
        _ = try NotificationStore.insert(db, new("old-untimed", at: t - 5))
        for (name, at, user, inbox) in [("t-3", t - 3, "u1", true), ("t-2", t - 2, "u1", true), ("t-1", t - 1, "u1", true),
                                        ("t", t, "u1", true), ("t+1", t + 1, "u1", true), ("push-only", t - 2, "u1", false),
                                        ("other", t - 1, "u2", true)] {
            let id = Notifier.newID("ntf", now: at)
            ids[name] = id
            _ = try NotificationStore.insert(db, new(id, user: user, at: at, inInbox: inbox))
        }
        #expect(try db.queryOne("SELECT count(*) FROM notifications WHERE timed = 1")?[0] == Int64(7))
        _ = try NotificationStore.markRead(db, userID: "u1", id: ids["t-1"]!, now: t)
        for id in ids.values { try DeliveryStore.record(db, DeliveryEntry(notificationID: id, userID: "u1", outcome: .queued, at: t)) }
        try DeliveryStore.record(db, DeliveryEntry(notificationID: ids["t-3"]!, userID: "u1", outcome: .opened, at: t + 86_400_000))
        return ids
    }

    @Test func thePurgeDeletesInBatchesEveryRowBeforeTheCutoffWithItsRecords() throws {
        try withMigratedDatabase { db in
            let ids = try store(db)
            #expect(try NotificationStore.unreadCount(db, userID: "u1") == 6)
            let cursor = try #require(try NotificationStore.find(db, id: ids["t-2"]!)).sequence
            // Six rows created before t: the untimed one first, then the timed ones by id.
            #expect(try NotificationStore.purge(db, createdBefore: t, limit: 4) == 4)
            #expect(try NotificationStore.find(db, id: "old-untimed") == nil)
            #expect(try NotificationStore.purge(db, createdBefore: t, limit: 4) == 2)
            #expect(try NotificationStore.purge(db, createdBefore: t, limit: 4) == 0)
            for name in ["old-untimed", "t-3", "t-2", "t-1", "push-only", "other"] {
                #expect(try NotificationStore.find(db, id: ids[name]!) == nil, "\(name)")
                // Every record of it, the one recorded a day after the cutoff too.
                #expect(try DeliveryStore.list(db, notificationID: ids[name]!).isEmpty, "\(name)")
            }
            // A row created exactly at the cutoff stays, with the younger ones and their records.
            for name in ["t", "t+1", "young-untimed"] {
                #expect(try NotificationStore.find(db, id: ids[name]!) != nil, "\(name)")
                #expect(try DeliveryStore.list(db, notificationID: ids[name]!).count == 1, "\(name)")
            }
            #expect(try count(db, "notifications") == 3 && count(db, "deliveries") == 3)
            // The unread count (and the badge) is counted from what is left.
            #expect(try NotificationStore.unreadCount(db, userID: "u1") == 3)
            #expect(try NotificationStore.unreadCount(db, userID: "u2") == 0)
            // A cursor at a purged row pages on to the older rows left, then ends.
            #expect(try NotificationStore.page(db, userID: "u1", unreadOnly: false, before: cursor, limit: 10).map(\.id) == ["young-untimed"])
            #expect(try NotificationStore.page(db, userID: "u1", unreadOnly: true, before: cursor, limit: 10).map(\.id) == ["young-untimed"])
            #expect(try NotificationStore.page(db, userID: "u1", unreadOnly: false, before: nil, limit: 10).map(\.id)
                    == [ids["t+1"]!, ids["t"]!, "young-untimed"])
            // The cutoff's next millisecond takes the row at it.
            #expect(try NotificationStore.purge(db, createdBefore: t + 1, limit: 4) == 1)
            #expect(try NotificationStore.find(db, id: ids["t"]!) == nil)
        }
    }

    @Test func aBatchOfNoneOrOfAnEmptyTableDeletesNothing() throws {
        try withMigratedDatabase { db in
            #expect(try NotificationStore.purge(db, createdBefore: t, limit: 1_000) == 0)
            _ = try store(db)
            #expect(try NotificationStore.purge(db, createdBefore: t, limit: 0) == 0)
            #expect(try NotificationStore.purge(db, createdBefore: 0, limit: 1_000) == 0)
            #expect(try count(db, "notifications") == 9)
        }
    }

    @Test func aBatchThatFailsDeletesNothing() throws {
        try withMigratedDatabase { db in
            let ids = try store(db)
            // The notifications' delete fails after their records' delete ran: both roll back.
            try db.run("CREATE TEMP TRIGGER refuse BEFORE DELETE ON notifications BEGIN SELECT RAISE(ABORT, 'refused'); END")
            #expect(throws: SQLiteError.self) { try NotificationStore.purge(db, createdBefore: t, limit: 4) }
            #expect(try count(db, "notifications") == 9 && count(db, "deliveries") == 10)
            #expect(try DeliveryStore.list(db, notificationID: ids["t-3"]!).count == 2)
            try db.run("DROP TRIGGER refuse")
            #expect(try NotificationStore.purge(db, createdBefore: t, limit: 4) == 4)
        }
    }

    /// Each batch reads only what it deletes: index searches, no scan of the rows kept.
    @Test func theBatchsStatementsAreIndexSearches() throws {
        try withMigratedDatabase { db in
            func plan(_ sql: String, _ values: [any SQLiteBindable]) throws -> String {
                try db.query("EXPLAIN QUERY PLAN " + sql, values).map { try $0["detail", as: String.self] }.joined(separator: "; ")
            }
            #expect(try plan(NotificationStore.untimedPurgeSQL, [t, 1_000])
                    == "SEARCH notifications USING INDEX notifications_untimed_created_at (created_at<?)")
            #expect(try plan(NotificationStore.timedPurgeSQL, [Notifier.idTimePrefix("ntf", at: t), t, 1_000])
                    == "SEARCH notifications USING INDEX sqlite_autoindex_notifications_1 (id<?)")
            let records = try plan(NotificationStore.purgeDeliveriesSQL, ["[1,2]"])
            #expect(records.contains("SEARCH deliveries USING INDEX deliveries_notification (notification_id=?)"), "\(records)")
            #expect(records.contains("SEARCH notifications USING INTEGER PRIMARY KEY (rowid=?)") && !records.contains("SCAN notifications"), "\(records)")
            let rows = try plan("DELETE FROM notifications WHERE seq IN (SELECT value FROM json_each(?))", ["[1,2]"])
            #expect(rows.contains("SEARCH notifications USING INTEGER PRIMARY KEY (rowid=?)") && !rows.contains("SCAN notifications"), "\(rows)")
        }
    }

    @Test("rows stored before migration 17 (no time in their index) are purged in batches after the upgrade")
    func rowsOfAnOlderSchemaArePurgedInBatches() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(db, migrations: Array(HeraldSchema.migrations.prefix(16)))
        for (index, at) in [t - 3, t - 2, t - 1, t].enumerated() {
            try db.run("INSERT INTO notifications (id, user_id, kind, priority, created_at) VALUES (?, 'u', 'k', 'normal', ?)",
                       [Notifier.newID("ntf", now: at), at])
            try db.run("INSERT INTO deliveries (notification_id, user_id, outcome, at) VALUES ((SELECT id FROM notifications WHERE seq = ?), 'u', 'queued', ?)",
                       [Int64(index + 1), at])
        }
        _ = try Migrator.migrate(db)
        #expect(try NotificationStore.purge(db, createdBefore: t, limit: 2) == 2)
        #expect(try NotificationStore.purge(db, createdBefore: t, limit: 2) == 1)
        #expect(try NotificationStore.purge(db, createdBefore: t, limit: 2) == 0)
        #expect(try count(db, "notifications") == 1 && count(db, "deliveries") == 1)
        #expect(try NotificationStore.unreadCount(db, app: "default", userID: "u") == 1)
    }
}
