import HeraldCore

/// `NotificationRepository` on PostgreSQL (NO-1, NO-3), as `NotificationStore` does it on SQLite.
struct PostgresNotificationRepository: NotificationRepository {
    let connection: PostgresConnection

    func insert(_ record: NotificationRecord) throws(StorageError) -> NotificationRecord {
        try mapped {
            let row = try connection.queryOne("""
                INSERT INTO notifications (id, app, user_id, kind, scope, title_json, body_json, args_json, data_json,
                                           collapse_key, thread_id, priority, expires_at, in_inbox, plan_id, plan_json, created_at)
                VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text,
                        $10::text, $11::text, $12::text, $13::bigint, $14::boolean, $15::bigint, $16::text, $17::bigint)
                RETURNING seq
                """, [record.id, record.app, record.userID, record.kind, record.scope, record.titleJSON, record.bodyJSON,
                      record.argsJSON, record.dataJSON, record.collapseKey, record.threadID, record.priority, record.expiresAt,
                      record.inInbox, record.planID, record.planJSON, record.createdAt])
            guard let row else { throw PostgresError.misuse(message: "INSERT … RETURNING gave no row") }
            var stored = record
            stored.sequence = try row.value("seq")
            stored.cursor = nil
            stored.readAt = nil
            return stored
        }
    }

    func find(id: String) throws(StorageError) -> NotificationRecord? {
        try mapped { try connection.queryOne("SELECT * FROM notifications WHERE id = $1::text", [id]).map(NotificationRecord.init(row:)) }
    }

    func setCursor(sequence: Int64, cursor: String) throws(StorageError) {
        try mapped { try connection.run("UPDATE notifications SET cursor = $1::text WHERE seq = $2::bigint", [cursor, sequence]) }
    }

    func page(app: String, userID: String, unreadOnly: Bool, before: Int64?, limit: Int) throws(StorageError) -> [NotificationRecord] {
        precondition(limit >= 0, "a negative limit")
        // Two statements, so the unread one matches the partial index's condition literally.
        let sql = unreadOnly
            ? """
              SELECT * FROM notifications
              WHERE app = $1::text AND user_id = $2::text AND read_at IS NULL AND in_inbox AND seq < $3::bigint
              ORDER BY seq DESC LIMIT $4::bigint
              """
            : """
              SELECT * FROM notifications
              WHERE app = $1::text AND user_id = $2::text AND in_inbox AND seq < $3::bigint
              ORDER BY seq DESC LIMIT $4::bigint
              """
        return try mapped {
            try connection.query(sql, [app, userID, before ?? Int64.max, limit]).map(NotificationRecord.init(row:))
        }
    }

    func unreadCount(app: String, userID: String) throws(StorageError) -> Int {
        try mapped {
            try connection.queryOne("SELECT count(*) AS n FROM notifications WHERE app = $1::text AND user_id = $2::text AND read_at IS NULL AND in_inbox",
                                    [app, userID])?.value("n") ?? 0
        }
    }

    func markRead(app: String, userID: String, id: String, now: Int64) throws(StorageError) -> MarkReadResult {
        try mapped {
            let changed = try connection.run("""
                UPDATE notifications SET read_at = $1::bigint
                WHERE id = $2::text AND app = $3::text AND user_id = $4::text AND read_at IS NULL AND in_inbox
                """, [now, id, app, userID])
            if changed > 0 { return .marked(at: now) }
            guard let row = try connection.queryOne("SELECT read_at FROM notifications WHERE id = $1::text AND app = $2::text AND user_id = $3::text AND in_inbox",
                                                    [id, app, userID]) else { return .notFound }
            guard let readAt: Int64 = try row.nullable("read_at") else {
                throw PostgresError.misuse(message: "notification \(id) is unread but the update did not change it")
            }
            return .alreadyRead(at: readAt)
        }
    }

    func markAllRead(app: String, userID: String, now: Int64) throws(StorageError) -> Int {
        try mapped {
            try connection.run("UPDATE notifications SET read_at = $1::bigint WHERE app = $2::text AND user_id = $3::text AND read_at IS NULL AND in_inbox",
                               [now, app, userID])
        }
    }

    func purge(createdBefore cutoff: Int64, limit: Int) throws(StorageError) -> Int {
        try mapped {
            let count: Int64? = try connection.queryOne(NotificationPurgeSQL.batch, [cutoff, Int64(limit)])?.value("n")
            return Int(count ?? 0)
        }
    }

    func isPlanned(_ record: NotificationRecord) throws(StorageError) -> Bool {
        guard record.planJSON == nil else { return false }
        guard let plan = record.planID else { return true }
        return try mapped {
            let exists: Bool = try connection.queryOne("SELECT EXISTS (SELECT 1 FROM notification_plans WHERE id = $1::bigint) AS e", [plan])?.value("e") ?? false
            return !exists
        }
    }
}

/// `PlanRepository` on PostgreSQL: plan leases (ADR 0003) shared by every node of the database.
struct PostgresPlanRepository: PlanRepository {
    let connection: PostgresConnection

    /// Names of holders whose session lock says whether they live (`PostgresStorage.holdPlans`,
    /// ADR 0023). Other names (an older build's, during a rolling upgrade) have their lease only.
    static let livePrefix = "live:"

    /// The keys of the advisory locks sessions of this database hold, read once a statement
    /// (`pg_locks` shows a bigint key as its high and low halves, `classid` and `objid`, with
    /// `objsubid` 1), and only when a row under a running lease asks (`holderGone`).
    static let liveLocks = """
        live_locks AS MATERIALIZED (
            SELECT (l.classid::bigint << 32) | l.objid::bigint AS key FROM pg_locks l
            WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
              AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()))
        """

    /// True when the holder named by `column` is known gone: its name is a `live:` one and no
    /// session holds its advisory lock (`liveLocks`, a hashed subplan: one read of `pg_locks`
    /// whatever the number of rows).
    static func holderGone(_ column: String) -> String {
        "(\(column) LIKE '\(livePrefix)%' AND hashtextextended(\(column), \(SessionLock.seed)) NOT IN (SELECT key FROM live_locks))"
    }

    static let claimSQL = """
        WITH \(liveLocks), picked AS MATERIALIZED (
            SELECT id FROM notification_plans
            WHERE id > $1::bigint AND (lease_until IS NULL OR lease_until <= $2::bigint OR \(holderGone("claimed_by")))
            ORDER BY id LIMIT $3::bigint FOR UPDATE SKIP LOCKED)
        UPDATE notification_plans p SET claimed_by = $4::text, lease_until = $5::bigint
        FROM picked WHERE p.id = picked.id
        RETURNING p.*
        """

    static let holdingSQL = """
        WITH \(liveLocks)
        SELECT CASE WHEN claimed_by IS NULL OR lease_until <= $2::bigint THEN 'free'
                    WHEN \(holderGone("claimed_by")) THEN 'orphaned' ELSE 'held' END AS holding
        FROM notification_plans WHERE id = $1::bigint
        """

    func insert(_ plan: PendingPlan) throws(StorageError) -> Int64 {
        try mapped {
            guard let row = try connection.queryOne("""
                INSERT INTO notification_plans (plan_json, created_at, claimed_by, lease_until)
                VALUES ($1::text, $2::bigint, $3::text, $4::bigint) RETURNING id
                """, [plan.planJSON, plan.createdAt, plan.claimedBy, plan.leaseUntil]) else {
                throw PostgresError.misuse(message: "INSERT … RETURNING gave no row")
            }
            return try row.value("id")
        }
    }

    func markPlanned(id: Int64, by node: String) throws(StorageError) -> Bool {
        try mapped { try connection.run("DELETE FROM notification_plans WHERE id = $1::bigint AND claimed_by = $2::text", [id, node]) > 0 }
    }

    func delete(id: Int64) throws(StorageError) {
        try mapped { try connection.run("DELETE FROM notification_plans WHERE id = $1::bigint", [id]) }
    }

    func claim(by node: String, after: Int64, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(StorageError) -> [PendingPlan] {
        precondition(limit >= 0, "a negative limit")
        // SKIP LOCKED: a plan another node is claiming right now is left to it, not waited for.
        // A plan whose holder's session lock is gone is taken before its lease ends (ADR 0023).
        return try mapped {
            try connection.query(Self.claimSQL, [after, now, limit, node, now + leaseMilliseconds])
                .map(PendingPlan.init(row:))
                .sorted { $0.id < $1.id }
        }
    }

    func renew(ids: [Int64], by node: String, until: Int64) throws(StorageError) -> Int {
        if ids.isEmpty { return 0 }
        return try mapped {
            try connection.run("UPDATE notification_plans SET lease_until = $1::bigint WHERE claimed_by = $2::text AND id = ANY($3::bigint[])",
                               [until, node, PostgresInt64Array(elements: ids)])
        }
    }

    func release(ids: [Int64], by node: String) throws(StorageError) -> Int {
        if ids.isEmpty { return 0 }
        return try mapped {
            try connection.run("""
                UPDATE notification_plans SET claimed_by = NULL, lease_until = NULL WHERE claimed_by = $1::text AND id = ANY($2::bigint[])
                """, [node, PostgresInt64Array(elements: ids)])
        }
    }

    /// Does nothing and returns 0: several nodes share this database, so a hold of another node
    /// may be a live one. A dead node's plans are claimable once its session lock is gone, or
    /// their lease runs out (ADR 0023).
    func releaseLeases(heldByOtherThan node: String) throws(StorageError) -> Int { 0 }

    /// One query: the lease, and for a `live:` holder under a running lease its session lock.
    func holding(ofPlan id: Int64, now: Int64) throws(StorageError) -> PlanHolding {
        try mapped {
            switch try connection.queryOne(Self.holdingSQL, [id, now])?.value("holding", as: String.self) {
            case "held": .held
            case "orphaned": .orphaned
            default: .free
            }
        }
    }

    func list(after: Int64, limit: Int) throws(StorageError) -> [PendingPlan] {
        try mapped {
            try connection.query("SELECT * FROM notification_plans WHERE id > $1::bigint ORDER BY id LIMIT $2::bigint", [after, limit])
                .map(PendingPlan.init(row:))
        }
    }

    func notifications(ofPlan id: Int64) throws(StorageError) -> [NotificationRecord] {
        try mapped {
            try connection.query("SELECT * FROM notifications WHERE plan_id = $1::bigint ORDER BY seq", [id]).map(NotificationRecord.init(row:))
        }
    }

    /// Each run of consecutive rows sharing one `plan_json` becomes one plan without an owner, as
    /// on SQLite. A database made by this adapter never has such rows unless a caller stores them:
    /// it keeps no plan held in a row (`insert(_:carrying:)` answers nil), so `now` has no hold
    /// to check.
    func adoptLegacyPlans(now: Int64) throws(StorageError) -> Int {
        try mapped {
            let rows = try connection.query("SELECT seq, plan_json, created_at FROM notifications WHERE plan_json IS NOT NULL ORDER BY seq FOR UPDATE")
            var runs: [(first: Int64, last: Int64, json: String, createdAt: Int64)] = []
            for row in rows {
                let sequence: Int64 = try row.value("seq"), json: String = try row.value("plan_json"), createdAt: Int64 = try row.value("created_at")
                if let last = runs.last, last.json == json, last.last == sequence - 1 {
                    runs[runs.count - 1].last = sequence
                } else {
                    runs.append((sequence, sequence, json, createdAt))
                }
            }
            for run in runs {
                let id = try insert(PendingPlan(planJSON: run.json, createdAt: run.createdAt))
                try connection.run("""
                    UPDATE notifications SET plan_id = $1::bigint, plan_json = NULL
                    WHERE seq BETWEEN $2::bigint AND $3::bigint AND plan_json IS NOT NULL
                    """, [id, run.first, run.last])
            }
            return runs.count
        }
    }
}

extension NotificationRecord {
    init(row: PostgresRow) throws {
        self.init(sequence: try row.value("seq"), id: try row.value("id"), app: try row.value("app"), userID: try row.value("user_id"),
                  kind: try row.value("kind"), scope: try row.nullable("scope"), titleJSON: try row.nullable("title_json"),
                  bodyJSON: try row.nullable("body_json"), argsJSON: try row.nullable("args_json"), dataJSON: try row.value("data_json"),
                  collapseKey: try row.nullable("collapse_key"), threadID: try row.nullable("thread_id"),
                  priority: try row.value("priority"), expiresAt: try row.nullable("expires_at"), inInbox: try row.value("in_inbox"),
                  cursor: try row.nullable("cursor"), planID: try row.nullable("plan_id"), planJSON: try row.nullable("plan_json"),
                  createdAt: try row.value("created_at"), readAt: try row.nullable("read_at"))
    }
}

extension PendingPlan {
    init(row: PostgresRow) throws {
        self.init(id: try row.value("id"), planJSON: try row.value("plan_json"), createdAt: try row.value("created_at"),
                  claimedBy: try row.nullable("claimed_by"), leaseUntil: try row.nullable("lease_until"))
    }
}
