import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct HeraldSchemaTests {
    private func migrated() throws -> SQLiteConnection {
        let conn = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(conn)
        try conn.run("INSERT INTO sessions (sid, user_id, created_at, last_seen_at) VALUES (?, ?, ?, ?)", ["s1", "u1", 1000, 1000])
        return conn
    }

    private func insertDevice(_ conn: SQLiteConnection, id: String, platform: String = "ios", token: String = "t1",
                              sid: String? = "s1") throws(SQLiteError) {
        try conn.run("""
            INSERT INTO devices (id, user_id, sid, platform, provider, token, created_at, last_seen_at)
            VALUES (:id, 'u1', :sid, :platform, 'apns', :token, 1000, 1000)
            """, [":id": id, ":sid": sid, ":platform": platform, ":token": token])
    }

    /// Migration 23 (ADR 0025): an ack's lookup is a probe of the partial index, which holds only
    /// jobs waiting for an ack (a plain job adds no entry).
    @Test func anAcksLookupProbesTheIndexOfJobsWaitingForAnAck() throws {
        let conn = try migrated()
        try conn.run("INSERT INTO jobs (kind, payload_json, state, run_at, created_at) VALUES ('push.deliver', '{}', 'queued', 1, 1)")
        try conn.run("""
            INSERT INTO jobs (kind, payload_json, state, run_at, created_at, ack_session, ack_event_id)
            VALUES ('push.deliver', '{}', 'queued', 1, 1, 's1', 'e1')
            """)
        let plan = try conn.query("""
            EXPLAIN QUERY PLAN SELECT * FROM jobs WHERE app = ? AND ack_session = ? AND ack_event_id = ? AND state = 'queued'
            """, ["default", "s1", "e1"]).map { try $0[3, as: String.self] }.joined(separator: "; ")
        #expect(plan.contains("USING INDEX jobs_awaiting_ack"), "\(plan)")
        let entries = try conn.queryOne("SELECT count(*) FROM jobs INDEXED BY jobs_awaiting_ack WHERE ack_event_id IS NOT NULL")
        #expect(try entries?[0, as: Int64.self] == 1)
    }

    @Test func createsTablesAndIndexes() throws {
        let conn = try migrated()
        let names = try conn.query("SELECT name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name")
            .map { try $0[0, as: String.self] }
        #expect(names == ["app_server_keys", "app_server_keys_app", "apps", "deliveries", "deliveries_delivery_id", "deliveries_notification", "devices", "devices_app_provider_token", "devices_app_sid",
                          "devices_last_seen_at", "devices_user_id", "idempotency_keys", "idempotency_keys_created_at", "job_counts", "job_lease_floor", "jobs",
                          "jobs_awaiting_ack", "jobs_due", "notification_plans", "notifications", "notifications_inbox",
                          "notifications_unplanned", "notifications_unread", "notifications_untimed_created_at",
                          "notifications_untimed_plan", "push_preferences", "push_preferences_switched_off", "scope_members",
                          "scope_members_user", "sessions", "storage_probe", "users"])
        let session = try #require(try conn.queryOne("SELECT app, expires_at, ended_at FROM sessions"))
        #expect(try session["app", as: String.self] == "default")
        #expect(try session["expires_at", as: Int64?.self] == nil)
    }

    @Test("issue 17: a job's state is checked without an ephemeral table, and still checked")
    func jobStatesAreCheckedInPlace() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(conn, migrations: Array(HeraldSchema.migrations.prefix(12)))
        try conn.run("INSERT INTO jobs (kind, payload_json, state, run_at, created_at) VALUES ('k', '{}', 'queued', 1, 1)")
        func ephemerals(_ sql: String) throws -> Int {
            try conn.query("EXPLAIN " + sql).count { try $0["opcode", as: String.self] == "OpenEphemeral" }
        }
        let complete = "UPDATE jobs SET state = 'done', lease_until = NULL WHERE id = 1 AND state = 'leased' AND attempts = 1"
        #expect(try ephemerals(complete) == 1)           // schema 12: the IN list's table
        try Migrator.migrate(conn)
        #expect(try ephemerals(complete) == 0)
        #expect(try ephemerals("INSERT INTO jobs (kind, payload_json, state, run_at, created_at) VALUES ('k', '{}', 'queued', 1, 1)") == 0)
        let schema = try #require(try conn.queryOne("SELECT sql FROM sqlite_schema WHERE name = 'jobs'"))
        #expect(try schema[0, as: String.self].contains("CHECK (state = 'queued' OR state = 'leased' OR state = 'done' OR state = 'dead')"))
        #expect(try conn.queryOne("PRAGMA integrity_check")?[0, as: String.self] == "ok")
        // The rows stay, and every state is still the only ones allowed.
        for state in JobState.allCases {
            try conn.run("UPDATE jobs SET state = ? WHERE id = 1", [state.rawValue])
        }
        #expect(throws: SQLiteError.self) { try conn.run("UPDATE jobs SET state = 'lost' WHERE id = 1") }
        #expect(throws: SQLiteError.self) {
            try conn.run("INSERT INTO jobs (kind, payload_json, state, run_at, created_at) VALUES ('k', '{}', 'waiting', 1, 1)")
        }
        #expect(try conn.queryOne("SELECT state FROM jobs WHERE id = 1")?[0, as: String.self] == "dead")
    }

    @Test("issue 17: delivery outcomes and notification priorities are checked without an ephemeral table, and still checked")
    func outcomesAndPrioritiesAreCheckedInPlace() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(conn, migrations: Array(HeraldSchema.migrations.prefix(14)))
        func ephemerals(_ sql: String) throws -> Int {
            try conn.query("EXPLAIN " + sql).count { try $0["opcode", as: String.self] == "OpenEphemeral" }
        }
        let record = "INSERT INTO deliveries (notification_id, user_id, outcome, at) VALUES ('n1', 'u1', 'queued', 1)"
        let notification = "INSERT INTO notifications (id, user_id, kind, priority, created_at) VALUES ('n1', 'u1', 'k', 'normal', 1)"
        #expect(try ephemerals(record) == 1 && ephemerals(notification) == 1)     // schema 14: the IN lists' tables
        try conn.run(notification)
        try conn.run(record)
        #expect(try Migrator.migrate(conn) == Array(15...HeraldSchema.migrations.count))
        #expect(try ephemerals(record) == 0 && ephemerals(notification) == 0)
        #expect(try conn.queryOne("PRAGMA integrity_check")?[0, as: String.self] == "ok")
        for table in ["deliveries", "notifications"] {
            let schema = try #require(try conn.queryOne("SELECT sql FROM sqlite_schema WHERE name = ?", [table]))
            #expect(try !schema[0, as: String.self].contains(" IN ("), "\(table)")
        }
        // The rows stay, every value allowed before is allowed, and nothing else.
        for outcome in DeliveryOutcome.allCases {
            try conn.run("INSERT INTO deliveries (notification_id, user_id, outcome, at) VALUES ('n1', 'u1', ?, 2)", [outcome.rawValue])
        }
        for priority in ["normal", "high", "urgent"] {
            try conn.run("INSERT INTO notifications (id, user_id, kind, priority, created_at) VALUES (?, 'u1', 'k', ?, 2)", ["n-" + priority, priority])
        }
        #expect(throws: SQLiteError.self) { try conn.run("INSERT INTO deliveries (notification_id, user_id, outcome, at) VALUES ('n1', 'u1', 'lost', 3)") }
        #expect(throws: SQLiteError.self) { try conn.run("UPDATE deliveries SET outcome = 'Sent' WHERE id = 1") }
        #expect(throws: SQLiteError.self) {
            try conn.run("INSERT INTO notifications (id, user_id, kind, priority, created_at) VALUES ('n9', 'u1', 'k', 'low', 3)")
        }
        #expect(try conn.queryOne("SELECT count(*) FROM deliveries")?[0, as: Int.self] == 1 + DeliveryOutcome.allCases.count)
        #expect(try conn.queryOne("SELECT count(*) FROM notifications")?[0, as: Int.self] == 4)
    }

    @Test func version4KeepsRowsAnOlderBuildLeftUnplannedForRecoveryToTakeUp() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(conn, migrations: Array(HeraldSchema.migrations.prefix(3)))
        try conn.run("""
            INSERT INTO notifications (id, user_id, kind, priority, plan_json, created_at)
            VALUES ('n1', 'u1', 'k', 'normal', '{"kind":"k"}', 1), ('n2', 'u2', 'k', 'normal', '{"kind":"k"}', 1)
            """)
        #expect(try Migrator.migrate(conn) == Array(4...HeraldSchema.migrations.count))
        #expect(try Migrator.version(of: conn) == HeraldSchema.migrations.count)
        #expect(try NotificationStore.pendingPlans(conn, limit: 10).isEmpty)
        #expect(try NotificationStore.adoptLegacyPlans(conn, now: 0) == 1)
        let plan = try #require(try NotificationStore.pendingPlans(conn, limit: 10).first)
        #expect(try NotificationStore.notifications(conn, ofPlan: plan.id).map(\.id) == ["n1", "n2"])
    }

    @Test func version5GivesPlansOfSchema4AnIDAndNoOwnerAndTheirRowsThatID() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(conn, migrations: Array(HeraldSchema.migrations.prefix(4)))
        // Schema 4: two pending calls stored as seq ranges (2 rows, then 1), a planned row
        // before, between and after them.
        for (index, id) in ["done0", "a1", "a2", "done1", "b1", "done2"].enumerated() {
            try conn.run("INSERT INTO notifications (seq, id, user_id, kind, priority, created_at) VALUES (?, ?, 'u', 'k', 'normal', 1)",
                         [Int64(index + 1), id])
        }
        try conn.run("INSERT INTO notification_plans (first_seq, last_seq, plan_json, created_at) VALUES (2, 3, 'A', 10), (5, 5, 'B', 20)")
        #expect(try Migrator.migrate(conn) == Array(5...HeraldSchema.migrations.count))

        let plans = try NotificationStore.pendingPlans(conn, limit: 10)
        #expect(plans == [PendingPlan(id: 2, planJSON: "A", createdAt: 10), PendingPlan(id: 5, planJSON: "B", createdAt: 20)])
        #expect(try NotificationStore.notifications(conn, ofPlan: 2).map(\.id) == ["a1", "a2"])
        #expect(try NotificationStore.notifications(conn, ofPlan: 5).map(\.id) == ["b1"])
        for id in ["done0", "done1", "done2"] {
            let row = try #require(try NotificationStore.find(conn, id: id))
            #expect(row.planID == nil)
            #expect(try NotificationStore.isPlanned(conn, row))
        }
        #expect(try !NotificationStore.isPlanned(conn, #require(try NotificationStore.find(conn, id: "a2"))))
        // No owner: recovery claims them at once, oldest first.
        let claimed = try NotificationStore.claimPlans(conn, by: "n", limit: 10, leaseMilliseconds: 1_000, now: 100)
        #expect(claimed.map(\.id) == [2, 5])
        // New plans get ids above every migrated one.
        #expect(try NotificationStore.insertPlan(conn, PendingPlan(planJSON: "C", createdAt: 30)) > 5)
        #expect(try NotificationStore.markPlanned(conn, id: 2, by: "n"))
        #expect(try NotificationStore.isPlanned(conn, #require(try NotificationStore.find(conn, id: "a2"))))
    }

    @Test("issue 17: migration 17 keeps the rows stored before it found by time and by plan")
    func version17KeepsOlderRowsInThePartialIndexes() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(conn, migrations: Array(HeraldSchema.migrations.prefix(16)))
        try conn.run("INSERT INTO notification_plans (plan_json, created_at) VALUES ('{}', 10)")
        let t: Int64 = 1_764_000_000_000
        // Rows of an older build: one with a random id, one with a time-ordered one.
        try conn.run("INSERT INTO notifications (id, user_id, kind, priority, plan_id, created_at) VALUES ('ntf_random', 'u', 'k', 'normal', 1, 5)")
        try conn.run("INSERT INTO notifications (id, user_id, kind, priority, plan_id, created_at) VALUES (?, 'u', 'k', 'normal', 1, ?)",
                     [Notifier.newID("ntf", now: t), t])
        #expect(try Migrator.migrate(conn) == Array(17...HeraldSchema.migrations.count))
        #expect(try conn.queryOne("SELECT count(*) FROM notifications WHERE timed = 0")?[0] == Int64(2))
        #expect(try NotificationStore.notifications(conn, ofPlan: 1).count == 2)
        #expect(try NotificationStore.purge(conn, createdBefore: 6) == 1)
        #expect(try NotificationStore.purge(conn, createdBefore: t + 1) == 1)
    }

    @Test("issue 17: after migration 19 a plan row a dead process held before it is recovered, and new rows carry their plan")
    func version19KeepsPlanRowsOfOlderBuildsRecoverable() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(conn, migrations: Array(HeraldSchema.migrations.prefix(18)))
        // What a build before migration 19 left when it died between storing and planning: a
        // one-recipient call's plan row, held, and its notification naming it.
        let t: Int64 = 1_764_000_000_000
        let plan = try NotificationStore.insertPlan(conn, PendingPlan(planJSON: "{}", createdAt: t, claimedBy: "old", leaseUntil: t + 60_000))
        try conn.run("INSERT INTO notifications (id, user_id, kind, priority, plan_id, created_at, timed) VALUES (?, 'u', 'k', 'normal', ?, ?, 1)",
                     [Notifier.newID("ntf", now: t), plan, t])
        #expect(try Migrator.migrate(conn) == Array(19...HeraldSchema.migrations.count))
        let old = try #require(try conn.queryOne("SELECT * FROM notifications").map { try NotificationRecord(row: $0) })
        #expect(old.planID == plan && old.planJSON == nil && old.planLeaseUntil == nil)
        #expect(try NotificationStore.releasePlanLeases(conn, heldByOtherThan: "new") == 1)
        #expect(try NotificationStore.adoptLegacyPlans(conn, now: t) == 0, "a plan row is not a row plan")
        #expect(try NotificationStore.claimPlans(conn, by: "new", limit: 10, leaseMilliseconds: 1_000, now: t).map(\.id) == [plan])
        #expect(try NotificationStore.notifications(conn, ofPlan: plan).map(\.id) == [old.id])
        #expect(try NotificationStore.markPlanned(conn, id: plan, by: "new"))
        #expect(try NotificationStore.isPlanned(conn, old))

        let stored = try NotificationStore.insert(conn, NotificationRecord(id: Notifier.newID("ntf", now: t + 1), userID: "u", kind: "k",
                                                                           createdAt: t + 1),
                                                  carrying: PendingPlan(planJSON: "{}", createdAt: t + 1, claimedBy: "new", leaseUntil: t + 60_000))
        #expect(try NotificationStore.find(conn, id: stored.id)?.planLeaseUntil == t + 60_000)
        #expect(try NotificationStore.markPlanned(conn, row: stored.sequence, cursor: "e1-1", by: "new"))
    }

    @Test func devicesAreUniquePerAppProviderToken() throws {
        let conn = try migrated()
        try insertDevice(conn, id: "d1")
        // The same token under another platform label is the same provider address (migration 9).
        let error = #expect(throws: SQLiteError.self) { try insertDevice(conn, id: "d2", platform: "android") }
        #expect(error == .constraint(.unique, message: "UNIQUE constraint failed: devices.app, devices.provider, devices.token"))
    }

    @Test func platformAndJobStateAreChecked() throws {
        let conn = try migrated()
        let platform = #expect(throws: SQLiteError.self) { try insertDevice(conn, id: "d1", platform: "blackberry") }
        guard case .constraint(.check, _)? = platform else { Issue.record("got \(String(describing: platform))"); return }
        let state = #expect(throws: SQLiteError.self) {
            try conn.run("INSERT INTO jobs (kind, payload_json, state, run_at, created_at) VALUES ('push.deliver', '{}', 'running', 1, 1)")
        }
        guard case .constraint(.check, _)? = state else { Issue.record("got \(String(describing: state))"); return }
    }

    /// ADR 0019: a device's session is its app's (app, sid); a session that still has devices
    /// cannot be deleted (an app's deletion deletes its devices first).
    @Test func deviceSessionIsAForeignKeyOnAppAndSid() throws {
        let conn = try migrated()
        let orphan = #expect(throws: SQLiteError.self) { try insertDevice(conn, id: "d0", sid: "nope") }
        #expect(orphan == .constraint(.foreignKey, message: "FOREIGN KEY constraint failed"))
        let otherApps = #expect(throws: SQLiteError.self) {
            try conn.run("""
                INSERT INTO devices (id, app, user_id, sid, platform, provider, token, created_at, last_seen_at)
                VALUES ('d9', 'chat', 'u1', 's1', 'ios', 'apns', 't9', 1000, 1000)
                """)
        }
        #expect(otherApps == .constraint(.foreignKey, message: "FOREIGN KEY constraint failed"), "default's s1 is not chat's")
        try insertDevice(conn, id: "d1")
        try insertDevice(conn, id: "d2", token: "t2", sid: nil)
        let held = #expect(throws: SQLiteError.self) { try conn.run("DELETE FROM sessions WHERE app = 'default' AND sid = ?", ["s1"]) }
        #expect(held == .constraint(.foreignKey, message: "FOREIGN KEY constraint failed"))
        try conn.run("DELETE FROM devices WHERE app = 'default' AND sid = ?", ["s1"])
        try conn.run("DELETE FROM sessions WHERE app = 'default' AND sid = ?", ["s1"])
        let sids = try conn.query("SELECT sid FROM devices ORDER BY id").map { try $0["sid", as: String?.self] }
        #expect(sids == [nil])
    }

    /// ADR 0019: two apps' sessions of one sid are two rows.
    @Test func sessionsAreKeyedByAppAndSid() throws {
        let conn = try migrated()
        try conn.run("INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at) VALUES ('s1', 'chat', 'u2', 1, 1)")
        let twice = #expect(throws: SQLiteError.self) {
            try conn.run("INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at) VALUES ('s1', 'chat', 'u3', 1, 1)")
        }
        guard case .constraint(.primaryKey, _)? = twice else { Issue.record("got \(String(describing: twice))"); return }
        #expect(try conn.query("SELECT app, user_id FROM sessions WHERE sid = 's1' ORDER BY app").map(\.values) == [["chat", "u2"], ["default", "u1"]])
    }

    /// The statements that join a device to its session, end a session, rotate a session's device
    /// or delete an app's sessions each seek a key: the sessions' primary key, `devices_app_sid`.
    @Test func sessionReadsAndWritesUseTheirKeys() throws {
        let conn = try migrated()
        func plan(_ sql: String) throws -> String {
            // `active` reads :now; any value gives the same plan.
            try conn.query("EXPLAIN QUERY PLAN " + sql.replacingOccurrences(of: ":now", with: "1")).map { try $0["detail", as: String.self] }
                .joined(separator: "; ")
        }
        for sql in [DeviceStore.selectWithActive + " WHERE d.id = 'd1'",
                    DeviceStore.selectWithActive + " WHERE d.app = 'chat' AND d.user_id = 'u1'",
                    "SELECT * FROM sessions WHERE app = 'chat' AND sid = 's1'",
                    "UPDATE sessions SET expires_at = 1, expiry_source = 'server' WHERE app = 'chat' AND sid = 's1'"] {
            let detail = try plan(sql)
            #expect(detail.contains("USING PRIMARY KEY (app=? AND sid=?)"), "\(sql): \(detail)")
        }
        for sql in ["DELETE FROM devices WHERE app = 'chat' AND sid = 's1'",
                    "DELETE FROM devices WHERE app = 'chat' AND sid = 's1' AND user_id = 'u1' AND platform = 'ios' AND id <> 'd1'"] {
            let detail = try plan(sql)
            #expect(detail.contains("INDEX devices_app_sid (app=? AND sid=?)"), "\(sql): \(detail)")
        }
        #expect(try plan("DELETE FROM sessions WHERE app = 'chat'").contains("USING PRIMARY KEY (app=?)"))
    }

    /// Migration 22 (ADR 0019) from a version-21 file with rows: every session and device is kept
    /// with every column; a device stored under another app's session (before ADR 0006's check)
    /// gets a live session of its own app; the keys, the reference and the indexes are the new ones.
    @Test func migrationTwentyTwoKeysSessionsByAppAndKeepsEveryRow() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-m22-\(UUID().uuidString).db").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        do {
            let old = try SQLiteConnection(path: path)
            #expect(try Migrator.migrate(old, migrations: Array(HeraldSchema.migrations.prefix(21))) == Array(1...21))
            try old.execute("""
                INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at, expires_at, ended_at, expiry_source) VALUES
                    ('s1', 'default', 'u1', 10, 20, 900, NULL, 'server'),
                    ('s2', 'chat', 'u2', 11, 21, NULL, 30, NULL),
                    ('s3', 'default', 'u3', 12, 22, 800, NULL, 'token');
                INSERT INTO devices (id, app, user_id, sid, platform, provider, token, environment, installation_id, locale,
                                     app_version, device_name, created_at, last_seen_at) VALUES
                    ('d1', 'default', 'u1', 's1', 'ios', 'apns', 't1', 'sandbox', 'i1', 'pt-BR', '1.2', 'Phone', 40, 41),
                    ('d2', 'chat', 'u4', 's1', 'android', 'fcm', 't2', NULL, NULL, NULL, NULL, NULL, 42, 43),
                    ('d3', 'chat', 'u4', 's1', 'web', 'webpush', 't3', NULL, NULL, NULL, NULL, NULL, 44, 45),
                    ('d4', 'default', 'u3', NULL, 'android', 'fcm', 't4', NULL, NULL, NULL, NULL, NULL, 46, 47);
                """)
        }   // closed here (deinit): the file is reopened as a later start would
        let conn = try SQLiteConnection(path: path)
        #expect(try Migrator.migrate(conn) == Array(22...HeraldSchema.migrations.count))
        let sessions = try conn.query("""
            SELECT app, sid, user_id, created_at, last_seen_at, expires_at, ended_at, expiry_source FROM sessions ORDER BY app, sid
            """).map(\.values)
        #expect(sessions == [["chat", "s1", "u4", 42, 45, nil, nil, nil],      // d2 and d3's own, live
                             ["chat", "s2", "u2", 11, 21, nil, 30, nil],
                             ["default", "s1", "u1", 10, 20, 900, nil, "server"],
                             ["default", "s3", "u3", 12, 22, 800, nil, "token"]])
        let devices = try conn.query("SELECT * FROM devices ORDER BY id").map(\.values)
        #expect(devices == [["d1", "default", "u1", "s1", "ios", "apns", "t1", "sandbox", "i1", "pt-BR", "1.2", "Phone", 40, 41],
                            ["d2", "chat", "u4", "s1", "android", "fcm", "t2", nil, nil, nil, nil, nil, 42, 43],
                            ["d3", "chat", "u4", "s1", "web", "webpush", "t3", nil, nil, nil, nil, nil, 44, 45],
                            ["d4", "default", "u3", nil, "android", "fcm", "t4", nil, nil, nil, nil, nil, 46, 47]])
        // Each device reads its own app's session now: chat's d2 no longer takes default's expiry.
        #expect(try DeviceStore.find(conn, id: "d1", now: 1_000)?.sessionActive == false)
        #expect(try DeviceStore.find(conn, id: "d2", now: 1_000)?.sessionActive == true)
        #expect(try conn.query("PRAGMA foreign_key_check").isEmpty)
        #expect(try conn.queryOne("PRAGMA integrity_check")?[0, as: String.self] == "ok")
        let schema = try conn.query("""
            SELECT name FROM sqlite_schema WHERE tbl_name IN ('sessions', 'devices') AND name NOT LIKE 'sqlite_%' ORDER BY name
            """).map { try $0[0, as: String.self] }
        #expect(schema == ["devices", "devices_app_provider_token", "devices_app_sid", "devices_last_seen_at", "devices_user_id", "sessions"])
        #expect(try conn.query("SELECT name FROM sqlite_schema WHERE name LIKE '%before_22%'").isEmpty)
        // The old key is gone: another app may use s3; the unique and checked columns still are.
        try conn.run("INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at) VALUES ('s3', 'chat', 'u9', 1, 1)")
        #expect(throws: SQLiteError.self) {
            try conn.run("INSERT INTO devices (id, user_id, platform, provider, token, created_at, last_seen_at) VALUES ('x', 'u', 'ios', 'fcm', 't1', 0, 0)")
        }
        #expect(throws: SQLiteError.self) {
            try conn.run("INSERT INTO devices (id, user_id, platform, provider, token, created_at, last_seen_at) VALUES ('x', 'u', 'tv', 'fcm', 'tx', 0, 0)")
        }
        #expect(throws: SQLiteError.self) { try conn.run("UPDATE sessions SET expiry_source = 'client' WHERE sid = 's1'") }
    }

    @Test func strictTablesRejectWrongTypes() throws {
        let conn = try migrated()
        let error = #expect(throws: SQLiteError.self) {
            try conn.run("INSERT INTO sessions (sid, user_id, created_at, last_seen_at) VALUES ('s2', 'u', 'yesterday', 1)")
        }
        guard case .constraint(.other(let code), let message)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(code.primary == .constraint)
        #expect(message.contains("sessions.created_at"))
    }

    @Test func jobsGetIdsAndDefaults() throws {
        let conn = try migrated()
        let rows = try conn.query("""
            INSERT INTO jobs (kind, payload_json, state, run_at, created_at)
            VALUES ('push.deliver', :payload, 'queued', :now, :now)
            RETURNING id, attempts, lease_until
            """, [":payload": #"{"device":"d1"}"#, ":now": 5])
        #expect(rows.map(\.values) == [[1, 0, nil]])
        let plan = try conn.query("""
            EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE state = 'queued' AND leased_at_insert = 0 AND kind = 'push.deliver'
                AND coalesce(lease_until, run_at) <= ?
            ORDER BY coalesce(lease_until, run_at), id LIMIT 10
            """, [10])
        #expect(try plan.contains { try $0["detail", as: String.self].contains("jobs_due (state=? AND kind=? AND <expr><?)") })
        #expect(try !plan.contains { try $0["detail", as: String.self].contains("TEMP B-TREE") })
    }
}
