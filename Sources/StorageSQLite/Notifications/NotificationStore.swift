import HeraldCore
/// The SQL for notifications: storing them (NO-1), the push planning hand-off (NO-2) and the
/// inbox (NO-3). Functions of a connection: callers run writes on the `Database` writer.
enum NotificationStore {
    /// Stores a new notification; the store assigns `sequence`, and `cursor` and `readAt` start
    /// empty whatever `new` holds. - Returns: the row, with its `seq`.
    /// - Throws: `SQLiteError.constraint(.unique, _)` for a known id, `.check` for an unknown priority.
    static func insert(_ connection: SQLiteConnection, _ new: NotificationRecord) throws(SQLiteError) -> NotificationRecord {
        // Every column is given, so the stored row is `new` with its rowid: no `RETURNING *`, whose
        // result rows SQLite buffers and Herald decodes by column name (a fifth of the insert).
        // `timed` (migration 17): the id carries created_at, and the plan, if any, was created at
        // the same millisecond, so `purge` and `notifications(ofPlan:)` find the row by its id.
        try insert(connection, new, claimedBy: nil)
    }

    /// Stores a call's only notification with the call's plan in its row, held by
    /// `plan.claimedBy` until `plan.leaseUntil` (ADR 0003's amendment, migration 19); `new.planID`
    /// and `new.planJSON` are ignored. - Returns: the row, with its `seq`.
    /// - Throws: as `insert(_:_:)`.
    static func insert(_ connection: SQLiteConnection, _ new: NotificationRecord, carrying plan: PendingPlan) throws(SQLiteError) -> NotificationRecord {
        var record = new
        record.planID = nil
        record.planJSON = plan.planJSON
        // A plan nobody holds is adopted by the next recovery, as a released one (lease 0).
        record.planLeaseUntil = plan.claimedBy == nil ? 0 : plan.leaseUntil
        return try insert(connection, record, claimedBy: plan.claimedBy)
    }

    /// Both inserts: one statement (one cached SQL text) with the hold's columns NULL for a row
    /// without a plan of its own.
    private static func insert(_ connection: SQLiteConnection, _ new: NotificationRecord, claimedBy: String?) throws(SQLiteError) -> NotificationRecord {
        let timeInID = Notifier.idCarriesTime(new.id, prefix: idPrefix, at: new.createdAt)
        try connection.run("""
            INSERT INTO notifications (id, app, user_id, kind, scope, title_json, body_json, args_json, data_json,
                                       collapse_key, thread_id, priority, expires_at, in_inbox, plan_id, plan_json, created_at, timed,
                                       plan_claimed_by, plan_lease_until)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                    ?18 AND (?15 IS NULL OR (SELECT created_at FROM notification_plans WHERE id = ?15) IS ?17), ?19, ?20)
            """, [new.id, new.app, new.userID, new.kind, new.scope, new.titleJSON, new.bodyJSON, new.argsJSON, new.dataJSON,
                  new.collapseKey, new.threadID, new.priority, new.expiresAt, new.inInbox, new.planID, new.planJSON, new.createdAt,
                  timeInID, claimedBy, new.planLeaseUntil])
        var stored = new
        stored.sequence = connection.lastInsertRowID
        stored.cursor = nil
        stored.readAt = nil
        return stored
    }

    /// A notification by id, whoever it belongs to.
    static func find(_ connection: SQLiteConnection, id: String) throws(SQLiteError) -> NotificationRecord? {
        try connection.queryOne("SELECT * FROM notifications WHERE id = ?", [id])
            .map { row throws(SQLiteError) in try NotificationRecord(row: row) }
    }

    /// Sets the stream cursor of the notification's live event once it is broadcast (NO-2).
    /// - Parameter sequence: the row's `seq`.
    static func setCursor(_ connection: SQLiteConnection, sequence: Int64, cursor: String) throws(SQLiteError) {
        try connection.run("UPDATE notifications SET cursor = ? WHERE seq = ?", [cursor, sequence])
    }

    // MARK: Push plans (NO-2)

    /// Stores a call's push plan until its pushes are planned (its `id` is ignored); the call's
    /// notifications name it in `planID`. A live call stores it claimed by its node.
    /// - Returns: the plan's id, never one an earlier plan had.
    static func insertPlan(_ connection: SQLiteConnection, _ plan: PendingPlan) throws(SQLiteError) -> Int64 {
        try connection.run("INSERT INTO notification_plans (plan_json, created_at, claimed_by, lease_until) VALUES (?, ?, ?, ?)",
                           [plan.planJSON, plan.createdAt, plan.claimedBy, plan.leaseUntil])
        return connection.lastInsertRowID
    }

    /// Records that plan `id`'s pushes are planned: the plan goes, so recovery leaves the call
    /// alone. Fenced: only while `node` holds it.
    /// - Returns: false when `node` does not hold the plan (it is gone, or another node took it
    ///   over after the lease ran out): the caller must not record its planning.
    static func markPlanned(_ connection: SQLiteConnection, id: Int64, by node: String) throws(SQLiteError) -> Bool {
        try connection.run("DELETE FROM notification_plans WHERE id = ? AND claimed_by = ?", [id, node])
        return connection.changes > 0
    }

    /// Records that the pushes of the plan held in row `sequence` are planned: the row gets its
    /// event cursor (nil: none) and loses its plan and hold, in one UPDATE of the row the
    /// cursor rewrites anyway. Fenced: only while `node` holds it.
    /// - Returns: false when `node` does not hold it (recovery adopted it after the lease ran out).
    static func markPlanned(_ connection: SQLiteConnection, row sequence: Int64, cursor: String?, by node: String) throws(SQLiteError) -> Bool {
        try connection.run("""
            UPDATE notifications SET cursor = ?, plan_json = NULL, plan_claimed_by = NULL, plan_lease_until = NULL
            WHERE seq = ? AND plan_claimed_by = ?
            """, [cursor, sequence, node])
        return connection.changes > 0
    }

    /// Gives up `node`'s hold on the plans held in the rows `sequences` (planning failed):
    /// recovery may adopt them at once. - Returns: how many it held.
    @discardableResult
    static func releaseRowPlans(_ connection: SQLiteConnection, sequences: [Int64], by node: String) throws(SQLiteError) -> Int {
        if sequences.isEmpty { return 0 }
        try connection.run("""
            UPDATE notifications SET plan_claimed_by = NULL, plan_lease_until = 0
            WHERE plan_claimed_by = ? AND seq IN (SELECT value FROM json_each(?))
            """, [node, jsonArray(sequences)])
        return connection.changes
    }

    /// Deletes plan `id` whoever holds it (a plan that cannot be read is given up).
    static func deletePlan(_ connection: SQLiteConnection, id: Int64) throws(SQLiteError) {
        try connection.run("DELETE FROM notification_plans WHERE id = ?", [id])
    }

    /// Claims for `node`, until `now + leaseMilliseconds`, up to `limit` plans with ids above
    /// `after` that nobody holds or whose lease is over (`lease_until <= now`), oldest first. The
    /// plans are read, then leased by id, in one write transaction (the caller's, or its own), so
    /// two claimers never get the same plan.
    /// - Parameters:
    ///   - after: only plans with a greater id (paging within one recovery pass).
    ///   - now: unix ms.
    /// - Returns: the plans as stored after the claim, by id.
    /// - Throws: `SQLiteError`; nothing is claimed then (inside the caller's transaction, once it
    ///   rolls back).
    static func claimPlans(_ connection: SQLiteConnection, by node: String, after: Int64 = 0, limit: Int,
                                  leaseMilliseconds: Int64, now: Int64) throws(SQLiteError) -> [PendingPlan] {
        precondition(limit >= 0, "a negative LIMIT means no limit in SQLite")
        // Issue 17: as the job claim, no `UPDATE … WHERE id IN (…) RETURNING *` (ephemeral tables
        // for the list and the returned rows): a rowid range read, then rowid updates.
        return try connection.inWriteTransaction { () throws(SQLiteError) in
            let until = now + leaseMilliseconds
            let plans = try connection.query("""
                SELECT id, plan_json, created_at FROM notification_plans
                WHERE id > ? AND (lease_until IS NULL OR lease_until <= ?) ORDER BY id LIMIT ?
                """, [after, now, limit])
                .map { row throws(SQLiteError) in
                    PendingPlan(id: try row[0], planJSON: try row[1], createdAt: try row[2], claimedBy: node, leaseUntil: until)
                }
            for plan in plans {
                try connection.run("UPDATE notification_plans SET claimed_by = ?, lease_until = ? WHERE id = ?", [node, until, plan.id])
            }
            return plans
        }
    }

    /// Extends `node`'s lease on the plans `ids` to `until` (unix ms), while it plans them.
    /// - Returns: how many it still held.
    @discardableResult
    static func renewPlans(_ connection: SQLiteConnection, ids: [Int64], by node: String, until: Int64) throws(SQLiteError) -> Int {
        if ids.isEmpty { return 0 }
        try connection.run("UPDATE notification_plans SET lease_until = ? WHERE claimed_by = ? AND id IN (SELECT value FROM json_each(?))",
                           [until, node, jsonArray(ids)])
        return connection.changes
    }

    /// Gives up `node`'s hold on the plans `ids` (planning failed): recovery may take them at once.
    /// - Returns: how many it held.
    @discardableResult
    static func releasePlans(_ connection: SQLiteConnection, ids: [Int64], by node: String) throws(SQLiteError) -> Int {
        if ids.isEmpty { return 0 }
        try connection.run("""
            UPDATE notification_plans SET claimed_by = NULL, lease_until = NULL
            WHERE claimed_by = ? AND id IN (SELECT value FROM json_each(?))
            """, [node, jsonArray(ids)])
        return connection.changes
    }

    /// Releases every plan held by a node other than `node`. Run at start: with one process per
    /// database, such a hold belongs to a process that died, and waiting out its lease would only
    /// delay its pushes. - Returns: how many.
    @discardableResult
    static func releasePlanLeases(_ connection: SQLiteConnection, heldByOtherThan node: String) throws(SQLiteError) -> Int {
        try connection.run("UPDATE notification_plans SET claimed_by = NULL, lease_until = NULL WHERE claimed_by <> ?", [node])
        let plans = connection.changes
        // Plans held in rows: `plan_json IS NOT NULL` as notifications_unplanned states it.
        try connection.run("""
            UPDATE notifications SET plan_claimed_by = NULL, plan_lease_until = 0
            WHERE plan_json IS NOT NULL AND plan_claimed_by <> ?
            """, [node])
        return plans + connection.changes
    }

    /// Stored plans, oldest first, whoever holds them (inspection and tests).
    /// - Parameter id: only plans with a greater id (paging).
    static func pendingPlans(_ connection: SQLiteConnection, after id: Int64 = 0, limit: Int) throws(SQLiteError) -> [PendingPlan] {
        precondition(limit >= 0, "a negative LIMIT means no limit in SQLite")
        return try connection.query("SELECT * FROM notification_plans WHERE id > ? ORDER BY id LIMIT ?", [id, limit])
            .map { row throws(SQLiteError) in try PendingPlan(row: row) }
    }

    /// The prefix of the ids `Notifier` gives notifications (`Notifier.newID`).
    static let idPrefix = "ntf"

    /// The notifications of plan `id`, in order (fewer than stored when the retention purge took some).
    /// While the plan is stored, its timed rows are the ids of its creation millisecond and the
    /// others are in `notifications_untimed_plan` (migration 17); once it is gone, every row is read.
    static func notifications(_ connection: SQLiteConnection, ofPlan id: Int64) throws(SQLiteError) -> [NotificationRecord] {
        let rows: [Row]
        if let createdAt: Int64 = try connection.queryOne("SELECT created_at FROM notification_plans WHERE id = ?", [id])?[0],
           (0..<Self.idTimeLimit - 1).contains(createdAt) {
            rows = try connection.query("""
                SELECT * FROM notifications WHERE plan_id = ? AND timed = 0
                UNION ALL
                SELECT * FROM notifications WHERE id >= ? AND id < ? AND plan_id = ? AND timed = 1
                ORDER BY seq
                """, [id, Notifier.idTimePrefix(idPrefix, at: createdAt), Notifier.idTimePrefix(idPrefix, at: createdAt + 1), id])
        } else {
            // Inspection of a plan planned or given up: no recovery reads it.
            rows = try connection.query("SELECT * FROM notifications WHERE plan_id = ? ORDER BY seq", [id])
        }
        return try rows.map { row throws(SQLiteError) in try NotificationRecord(row: row) }
    }

    /// The creation times (unix ms) an id's time prefix can hold (`Notifier.newID`: 45 bits).
    static let idTimeLimit: Int64 = 1 << 45

    /// Whether the notification's pushes are planned: its plan is gone, and it has no
    /// `plan_json` of an older build.
    static func isPlanned(_ connection: SQLiteConnection, _ record: NotificationRecord) throws(SQLiteError) -> Bool {
        guard record.planJSON == nil else { return false }
        guard let plan = record.planID else { return true }
        let exists: Bool = try connection.queryOne("SELECT EXISTS (SELECT 1 FROM notification_plans WHERE id = ?)", [plan])?[0] ?? false
        return !exists
    }

    /// Turns the plans rows carry in `plan_json` and nobody holds into plans without an owner, in
    /// one transaction. Rows an older build stored (one `plan_json` per recipient, cleared once
    /// planned; no hold, `plan_lease_until` NULL): each run of consecutive rows sharing one
    /// `plan_json` was stored by one call and becomes one plan. A one-recipient call's row
    /// (migration 19) becomes a plan of its own once its hold is released (lease 0) or its lease
    /// is over at `now`; a held one is left alone. Recovery runs it first.
    /// - Returns: plans made.
    @discardableResult
    static func adoptLegacyPlans(_ connection: SQLiteConnection, now: Int64) throws(SQLiteError) -> Int {
        do {
            return try connection.transaction { connection throws(SQLiteError) -> Int in
                let rows = try connection.query("""
                    SELECT seq, plan_json, created_at, plan_lease_until FROM notifications WHERE plan_json IS NOT NULL ORDER BY seq
                    """)
                guard !rows.isEmpty else { return 0 }
                var runs: [(first: Int64, last: Int64, json: String, createdAt: Int64, legacy: Bool)] = []
                for row in rows {
                    let sequence: Int64 = try row[0], json: String = try row[1], createdAt: Int64 = try row[2]
                    let leaseUntil: Int64? = try row[3]
                    if let leaseUntil {
                        if leaseUntil <= now { runs.append((sequence, sequence, json, createdAt, false)) }
                    } else if let last = runs.last, last.legacy, last.json == json, last.last == sequence - 1 {
                        runs[runs.count - 1].last = sequence
                    } else {
                        runs.append((sequence, sequence, json, createdAt, true))
                    }
                }
                for run in runs {
                    let id = try insertPlan(connection, PendingPlan(planJSON: run.json, createdAt: run.createdAt))
                    try connection.run("""
                        UPDATE notifications SET plan_id = ?, plan_json = NULL, plan_claimed_by = NULL, plan_lease_until = NULL
                        WHERE seq BETWEEN ? AND ? AND plan_json IS NOT NULL
                        """, [id, run.first, run.last])
                }
                return runs.count
            }
        } catch let error as SQLiteError {
            throw error
        } catch {
            // The body throws only SQLiteError; transaction's signature just does not say so.
            throw .misuse(message: "adopting legacy plans: \(error)")
        }
    }

    // Two statements instead of `(:unread = 0 OR read_at IS NULL)`: SQLite uses a partial index
    // only when the WHERE clause states its condition literally.
    private static let pageSQL = """
        SELECT * FROM notifications
        WHERE app = :app AND user_id = :user AND in_inbox = 1 AND seq < :before
        ORDER BY seq DESC LIMIT :limit
        """
    private static let unreadPageSQL = """
        SELECT * FROM notifications
        WHERE app = :app AND user_id = :user AND read_at IS NULL AND in_inbox = 1 AND seq < :before
        ORDER BY seq DESC LIMIT :limit
        """

    /// One page of a user's inbox (NO-3), newest first. Push-only notifications (`inInbox`
    /// false) are left out.
    ///
    /// - Parameters:
    ///   - unreadOnly: only notifications not read yet.
    ///   - before: the `sequence` of the last row of the previous page; nil for the first page.
    ///   - limit: rows at most.
    static func page(_ connection: SQLiteConnection, app: String = "default", userID: String, unreadOnly: Bool,
                            before: Int64?, limit: Int) throws(SQLiteError) -> [NotificationRecord] {
        precondition(limit >= 0, "a negative LIMIT means no limit in SQLite")
        return try connection.query(unreadOnly ? unreadPageSQL : pageSQL,
                                    [":app": app, ":user": userID, ":before": before ?? Int64.max, ":limit": limit])
            .map { row throws(SQLiteError) in try NotificationRecord(row: row) }
    }

    /// Unread inbox notifications of a user (NO-3; also the badge when the caller asks for it).
    static func unreadCount(_ connection: SQLiteConnection, app: String = "default", userID: String) throws(SQLiteError) -> Int {
        try connection.queryOne("SELECT count(*) FROM notifications WHERE app = ? AND user_id = ? AND read_at IS NULL AND in_inbox = 1",
                                [app, userID])?[0] ?? 0
    }

    /// Marks one of the user's inbox notifications read (NO-3). A missing id, another user's
    /// notification and a push-only one (`persist: false`) all answer `.notFound`, so ids of
    /// others cannot be probed.
    ///
    /// - Parameter now: unix ms.
    static func markRead(_ connection: SQLiteConnection, app: String = "default", userID: String, id: String,
                                now: Int64) throws(SQLiteError) -> MarkReadResult {
        try connection.run("UPDATE notifications SET read_at = ? WHERE id = ? AND app = ? AND user_id = ? AND read_at IS NULL AND in_inbox = 1",
                           [now, id, app, userID])
        if connection.changes > 0 { return .marked(at: now) }
        guard let row = try connection.queryOne("SELECT read_at FROM notifications WHERE id = ? AND app = ? AND user_id = ? AND in_inbox = 1",
                                                [id, app, userID]) else { return .notFound }
        guard let readAt: Int64 = try row["read_at"] else {
            throw .misuse(message: "notification \(id) is unread but the update did not change it")
        }
        return .alreadyRead(at: readAt)
    }

    /// Marks every unread inbox notification of the user read (NO-3).
    /// - Parameter now: unix ms.
    /// - Returns: how many changed.
    static func markAllRead(_ connection: SQLiteConnection, app: String = "default", userID: String,
                                   now: Int64) throws(SQLiteError) -> Int {
        try connection.run("UPDATE notifications SET read_at = ? WHERE app = ? AND user_id = ? AND read_at IS NULL AND in_inbox = 1",
                           [now, app, userID])
        return connection.changes
    }

    /// `ids` as a JSON array, for `json_each(?)`: one statement (one cached SQL text) for any count.
    private static func jsonArray(_ ids: [Int64]) -> String {
        "[" + ids.map(String.init).joined(separator: ",") + "]"
    }
}
