/// The retention purge's statement on PostgreSQL (ADR 0012), apart from the notification
/// repository's hot paths.
enum NotificationPurgeSQL {
    /// One batch, as one statement (one snapshot, one transaction): up to $2 notifications created
    /// before $1 (unix ms), oldest first by `notifications_created_at`, so it reads only rows it
    /// deletes; their delivery records by `deliveries_notification`, the rows by their key: `= ANY
    /// (ARRAY(…))`, an array the index is probed with, since with `IN (SELECT …)` the planner
    /// hash-joined the batch with a scan of every row kept. `SKIP LOCKED`: nodes purging
    /// at once take disjoint batches, and a row being marked read waits for a later run instead
    /// of the purge waiting for it. Answers `n`, the notifications deleted.
    static let batch = """
        WITH doomed AS (
            SELECT seq, id FROM notifications WHERE created_at < $1::bigint
            ORDER BY created_at LIMIT $2::bigint FOR UPDATE SKIP LOCKED),
        records AS (DELETE FROM deliveries WHERE notification_id = ANY (ARRAY(SELECT id FROM doomed))),
        gone AS (DELETE FROM notifications WHERE seq = ANY (ARRAY(SELECT seq FROM doomed)) RETURNING 1)
        SELECT count(*) AS n FROM gone
        """
}
