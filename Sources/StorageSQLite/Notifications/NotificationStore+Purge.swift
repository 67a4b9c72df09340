import HeraldCore

/// The retention purge of notifications (ADR 0012): apart from the rest of `NotificationStore`,
/// which the hot paths (insert, plan, inbox) share.
extension NotificationStore {
    /// Deletes notifications created before `cutoff` (unix ms), with their delivery record, in
    /// one transaction (retention). - Returns: how many notifications.
    @discardableResult
    static func purge(_ connection: SQLiteConnection, createdBefore cutoff: Int64) throws(SQLiteError) -> Int {
        do {
            return try connection.transaction { connection throws(SQLiteError) -> Int in
                // Migration 17: the timed rows created before `cutoff` are the ids below its time
                // prefix (the id index); the others are in notifications_untimed_created_at.
                guard cutoff < Self.idTimeLimit else {
                    try connection.run("DELETE FROM deliveries WHERE notification_id IN (SELECT id FROM notifications WHERE created_at < ?)",
                                       [cutoff])
                    try connection.run("DELETE FROM notifications WHERE created_at < ?", [cutoff])
                    return connection.changes
                }
                let below = Notifier.idTimePrefix(idPrefix, at: max(cutoff, 0))
                // Deliveries first: the subquery needs the notifications still there.
                try connection.run("""
                    DELETE FROM deliveries WHERE notification_id IN (
                        SELECT id FROM notifications WHERE created_at < ? AND timed = 0
                        UNION ALL
                        SELECT id FROM notifications WHERE id < ? AND created_at < ? AND timed = 1)
                    """, [cutoff, below, cutoff])
                try connection.run("DELETE FROM notifications WHERE created_at < ? AND timed = 0", [cutoff])
                let untimed = connection.changes
                try connection.run("DELETE FROM notifications WHERE id < ? AND created_at < ? AND timed = 1", [below, cutoff])
                return untimed + connection.changes
            }
        } catch let error as SQLiteError {
            throw error
        } catch {
            // The body throws only SQLiteError; transaction's signature just does not say so.
            throw .misuse(message: "notification purge: \(error)")
        }
    }
}
