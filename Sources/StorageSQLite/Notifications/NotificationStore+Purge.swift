import HeraldCore

/// The retention purge of notifications (ADR 0012): apart from the rest of `NotificationStore`,
/// which the hot paths (insert, plan, inbox) share.
extension NotificationStore {
    /// Deletes at most `limit` notifications created before `cutoff` (unix ms), read or not, with
    /// every delivery record carrying their ids, in one transaction (the caller's, or its own):
    /// a batch is deleted whole or not at all. A plan held in a row goes with it.
    ///
    /// Reads only rows it deletes, on the indexes migration 17 left for it: rows whose id carries
    /// their creation time (`timed = 1`) are the range of the UNIQUE id index below the cutoff's
    /// id prefix, the others `notifications_untimed_created_at`; their records are found by
    /// `deliveries_notification`. Exact: every row created before `cutoff` is a candidate.
    /// - Parameter limit: notifications at most (not negative).
    /// - Returns: how many notifications.
    @discardableResult
    static func purge(_ connection: SQLiteConnection, createdBefore cutoff: Int64, limit: Int) throws(SQLiteError) -> Int {
        precondition(limit >= 0, "a negative LIMIT means no limit in SQLite")
        return try connection.inWriteTransaction { () throws(SQLiteError) -> Int in
            var doomed = try connection.query(untimedPurgeSQL, [cutoff, Int64(limit)]).map { row throws(SQLiteError) -> Int64 in try row[0] }
            if doomed.count < limit {
                let rest = Int64(limit - doomed.count)
                let timed: [Row]
                if cutoff < Self.idTimeLimit {
                    timed = try connection.query(timedPurgeSQL, [Notifier.idTimePrefix(idPrefix, at: max(cutoff, 0)), cutoff, rest])
                } else {
                    // Past the 45 bits of an id's time (year 3084): no id prefix bounds them.
                    timed = try connection.query("SELECT seq FROM notifications WHERE created_at < ? AND timed = 1 ORDER BY seq LIMIT ?", [cutoff, rest])
                }
                doomed += try timed.map { row throws(SQLiteError) -> Int64 in try row[0] }
            }
            guard !doomed.isEmpty else { return 0 }
            let sequences = "[" + doomed.map(String.init).joined(separator: ",") + "]"
            // Records first: their subquery reads the notifications' ids.
            try connection.run(purgeDeliveriesSQL, [sequences])
            try connection.run("DELETE FROM notifications WHERE seq IN (SELECT value FROM json_each(?))", [sequences])
            return connection.changes
        }
    }

    /// Every notification created before `cutoff`, with their records, in one transaction.
    /// - Returns: how many notifications.
    @discardableResult
    static func purge(_ connection: SQLiteConnection, createdBefore cutoff: Int64) throws(SQLiteError) -> Int {
        try purge(connection, createdBefore: cutoff, limit: Int(Int64.max))
    }

    /// Rows without their time in their id (stored before migration 17, or whose plan was made at
    /// another millisecond), oldest first: the partial index holds only them.
    static let untimedPurgeSQL = "SELECT seq FROM notifications WHERE created_at < ?1 AND timed = 0 ORDER BY created_at LIMIT ?2"
    /// Rows whose id carries their creation time: the ids below the cutoff's prefix (?1) are the
    /// ones created before it; `created_at` is checked too, for an id of another shape that sorts there.
    static let timedPurgeSQL = "SELECT seq FROM notifications WHERE id < ?1 AND created_at < ?2 AND timed = 1 ORDER BY id LIMIT ?3"
    /// The delivery records of the notifications whose `seq` are in the JSON array ?1.
    static let purgeDeliveriesSQL = """
        DELETE FROM deliveries WHERE notification_id IN (
            SELECT id FROM notifications WHERE seq IN (SELECT value FROM json_each(?1)))
        """
}
