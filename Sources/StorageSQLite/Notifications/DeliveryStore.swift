import HeraldCore
/// The SQL for the delivery record (NO-8): an append-only log per notification, written by
/// planning, the delivery worker and the open beacon.
///
/// A row whose `queued_at` is set (migration 19) holds two entries: the `queued` one (at
/// `queued_at`, with `queued_detail`) and the outcome written into it later. Every read expands
/// it, so the record reads as appended.
enum DeliveryStore {
    /// Appends an entry (its `id` is ignored). - Returns: the id assigned (for an outcome written
    /// into its queued row, that row's).
    @discardableResult
    static func record(_ connection: SQLiteConnection, _ entry: DeliveryEntry) throws(SQLiteError) -> Int64 {
        // Issue 17: a push's outcome (the worker's, after the planning's `queued`) goes into its
        // queued row when that row is the notification's last, not folded yet, and names the same
        // user, device, session, job and delivery id: the two entries it then reads back as are
        // the ones appending would have written, in the same order. One UPDATE of a row instead
        // of a row and an index entry.
        if let jobID = entry.jobID, entry.outcome != .queued, entry.connectionID == nil,
           let last: Int64 = try connection.queryOne("SELECT max(id) FROM deliveries WHERE notification_id = ?", [entry.notificationID])?[0] {
            try connection.run("""
                UPDATE deliveries SET queued_at = at, queued_detail = detail, outcome = ?1, provider_message_id = ?2, detail = ?3, at = ?4
                WHERE id = ?5 AND outcome = 'queued' AND queued_at IS NULL AND job_id = ?6 AND user_id = ?7 AND device_id IS ?8
                  AND session_id IS ?9 AND delivery_id IS ?10 AND connection_id IS NULL AND provider_message_id IS NULL
                """, [entry.outcome.rawValue, entry.providerMessageID, entry.detail, entry.at, last, jobID, entry.userID,
                      entry.deviceID, entry.sessionID, entry.deliveryID])
            if connection.changes > 0 { return last }
        }
        try connection.run("""
            INSERT INTO deliveries (notification_id, user_id, device_id, connection_id, session_id, outcome,
                                    provider_message_id, job_id, delivery_id, detail, at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [entry.notificationID, entry.userID, entry.deviceID, entry.connectionID, entry.sessionID, entry.outcome.rawValue,
                  entry.providerMessageID, entry.jobID, entry.deliveryID, entry.detail, entry.at])
        return connection.lastInsertRowID
    }

    /// A notification's record, oldest first (in the order written, whatever the `at` values).
    static func list(_ connection: SQLiteConnection, notificationID: String) throws(SQLiteError) -> [DeliveryEntry] {
        var entries: [DeliveryEntry] = []
        for row in try connection.query("SELECT * FROM deliveries WHERE notification_id = ? ORDER BY id", [notificationID]) {
            let entry = try DeliveryEntry(row: row)
            if let queued = try queuedEntry(row, entry) { entries.append(queued) }
            entries.append(entry)
        }
        return entries
    }

    /// The `queued` entry carrying `deliveryID`: the open beacon's key to its notification,
    /// user and device. The first one when recovery queued it twice.
    static func queued(_ connection: SQLiteConnection, deliveryID: String) throws(SQLiteError) -> DeliveryEntry? {
        guard let row = try connection.queryOne("""
            SELECT * FROM deliveries WHERE delivery_id = ? AND (outcome = 'queued' OR queued_at IS NOT NULL) ORDER BY id LIMIT 1
            """, [deliveryID]) else { return nil }
        let entry = try DeliveryEntry(row: row)
        return try queuedEntry(row, entry) ?? entry
    }

    /// True when an entry with this delivery id and outcome exists (e.g. an `opened` beacon
    /// recorded already).
    static func exists(_ connection: SQLiteConnection, deliveryID: String, outcome: DeliveryOutcome) throws(SQLiteError) -> Bool {
        try connection.queryOne("""
            SELECT EXISTS (SELECT 1 FROM deliveries WHERE delivery_id = ?1 AND (outcome = ?2 OR (?2 = 'queued' AND queued_at IS NOT NULL)))
            """, [deliveryID, outcome.rawValue])?[0] ?? false
    }

    /// The `queued` entry a row holds before its own (`queued_at` set), if any.
    private static func queuedEntry(_ row: Row, _ entry: DeliveryEntry) throws(SQLiteError) -> DeliveryEntry? {
        guard let at: Int64 = try row["queued_at"] else { return nil }
        var queued = entry
        queued.outcome = .queued
        queued.providerMessageID = nil
        queued.detail = try row["queued_detail"]
        queued.at = at
        return queued
    }
}
