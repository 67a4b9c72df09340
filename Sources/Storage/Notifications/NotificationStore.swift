/// The SQL for notifications: storing them (NO-1), the push planning hand-off (NO-2) and the
/// inbox (NO-3). Functions of a connection: callers run writes on the `Database` writer.
public enum NotificationStore {
    /// Stores a new notification; the store assigns `sequence`, and `cursor` and `readAt` start
    /// empty whatever `new` holds. - Returns: the row, with its `seq`.
    /// - Throws: `StorageError.constraint(.unique, _)` for a known id, `.check` for an unknown priority.
    public static func insert(_ connection: SQLiteConnection, _ new: NotificationRecord) throws(StorageError) -> NotificationRecord {
        let row = try connection.queryOne("""
            INSERT INTO notifications (id, app, user_id, kind, scope, title_json, body_json, args_json, data_json,
                                       collapse_key, thread_id, priority, expires_at, in_inbox, plan_json, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            RETURNING *
            """, [new.id, new.app, new.userID, new.kind, new.scope, new.titleJSON, new.bodyJSON, new.argsJSON, new.dataJSON,
                  new.collapseKey, new.threadID, new.priority, new.expiresAt, new.inInbox, new.planJSON, new.createdAt])
        guard let row else { throw .misuse(message: "INSERT … RETURNING gave no row for notification \(new.id)") }
        return try NotificationRecord(row: row)
    }

    /// A notification by id, whoever it belongs to.
    public static func find(_ connection: SQLiteConnection, id: String) throws(StorageError) -> NotificationRecord? {
        try connection.queryOne("SELECT * FROM notifications WHERE id = ?", [id])
            .map { row throws(StorageError) in try NotificationRecord(row: row) }
    }

    /// Records that the notification's pushes are planned (NO-2): sets the live event's cursor
    /// (nil when nothing was broadcast) and clears `plan_json`, so recovery leaves it alone.
    public static func markPlanned(_ connection: SQLiteConnection, id: String, cursor: String?) throws(StorageError) {
        try connection.run("UPDATE notifications SET cursor = ?, plan_json = NULL WHERE id = ?", [cursor, id])
    }

    /// Notifications stored but not planned yet (a crash came between), oldest first, for the
    /// recovery at start.
    public static func unplanned(_ connection: SQLiteConnection, after sequence: Int64 = 0, limit: Int) throws(StorageError) -> [NotificationRecord] {
        precondition(limit >= 0, "a negative LIMIT means no limit in SQLite")
        return try connection.query("SELECT * FROM notifications WHERE plan_json IS NOT NULL AND seq > ? ORDER BY seq LIMIT ?",
                                    [sequence, limit])
            .map { row throws(StorageError) in try NotificationRecord(row: row) }
    }

    /// Every unplanned row sharing `planJSON`: the rows of one call, which are planned together.
    public static func unplanned(_ connection: SQLiteConnection, planJSON: String) throws(StorageError) -> [NotificationRecord] {
        try connection.query("SELECT * FROM notifications WHERE plan_json = ? ORDER BY seq", [planJSON])
            .map { row throws(StorageError) in try NotificationRecord(row: row) }
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
    public static func page(_ connection: SQLiteConnection, app: String = "default", userID: String, unreadOnly: Bool,
                            before: Int64?, limit: Int) throws(StorageError) -> [NotificationRecord] {
        precondition(limit >= 0, "a negative LIMIT means no limit in SQLite")
        return try connection.query(unreadOnly ? unreadPageSQL : pageSQL,
                                    [":app": app, ":user": userID, ":before": before ?? Int64.max, ":limit": limit])
            .map { row throws(StorageError) in try NotificationRecord(row: row) }
    }

    /// Unread inbox notifications of a user (NO-3; also the badge when the caller asks for it).
    public static func unreadCount(_ connection: SQLiteConnection, app: String = "default", userID: String) throws(StorageError) -> Int {
        try connection.queryOne("SELECT count(*) FROM notifications WHERE app = ? AND user_id = ? AND read_at IS NULL AND in_inbox = 1",
                                [app, userID])?[0] ?? 0
    }

    /// Marks one of the user's inbox notifications read (NO-3). A missing id, another user's
    /// notification and a push-only one (`persist: false`) all answer `.notFound`, so ids of
    /// others cannot be probed.
    ///
    /// - Parameter now: unix ms.
    public static func markRead(_ connection: SQLiteConnection, app: String = "default", userID: String, id: String,
                                now: Int64) throws(StorageError) -> MarkReadResult {
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
    public static func markAllRead(_ connection: SQLiteConnection, app: String = "default", userID: String,
                                   now: Int64) throws(StorageError) -> Int {
        try connection.run("UPDATE notifications SET read_at = ? WHERE app = ? AND user_id = ? AND read_at IS NULL AND in_inbox = 1",
                           [now, app, userID])
        return connection.changes
    }

    /// Deletes notifications created before `cutoff` (unix ms), with their delivery record, in
    /// one transaction (retention). - Returns: how many notifications.
    @discardableResult
    public static func purge(_ connection: SQLiteConnection, createdBefore cutoff: Int64) throws(StorageError) -> Int {
        do {
            return try connection.transaction { connection throws(StorageError) -> Int in
                // Deliveries first: the subquery needs the notifications still there.
                try connection.run("DELETE FROM deliveries WHERE notification_id IN (SELECT id FROM notifications WHERE created_at < ?)",
                                   [cutoff])
                try connection.run("DELETE FROM notifications WHERE created_at < ?", [cutoff])
                return connection.changes
            }
        } catch let error as StorageError {
            throw error
        } catch {
            // The body throws only StorageError; transaction's signature just does not say so.
            throw .misuse(message: "notification purge: \(error)")
        }
    }
}
