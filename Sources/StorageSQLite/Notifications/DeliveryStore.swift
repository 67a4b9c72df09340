import HeraldCore
/// The SQL for the delivery record (NO-8): an append-only log per notification, written by
/// planning, the delivery worker and the open beacon.
enum DeliveryStore {
    /// Appends an entry (its `id` is ignored). - Returns: the id assigned.
    @discardableResult
    static func record(_ connection: SQLiteConnection, _ entry: DeliveryEntry) throws(SQLiteError) -> Int64 {
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
        try connection.query("SELECT * FROM deliveries WHERE notification_id = ? ORDER BY id", [notificationID])
            .map { row throws(SQLiteError) in try DeliveryEntry(row: row) }
    }

    /// The `queued` entry carrying `deliveryID`: the open beacon's key to its notification,
    /// user and device. The first one when recovery queued it twice.
    static func queued(_ connection: SQLiteConnection, deliveryID: String) throws(SQLiteError) -> DeliveryEntry? {
        try connection.queryOne("SELECT * FROM deliveries WHERE delivery_id = ? AND outcome = 'queued' ORDER BY id LIMIT 1", [deliveryID])
            .map { row throws(SQLiteError) in try DeliveryEntry(row: row) }
    }

    /// True when an entry with this delivery id and outcome exists (e.g. an `opened` beacon
    /// recorded already).
    static func exists(_ connection: SQLiteConnection, deliveryID: String, outcome: DeliveryOutcome) throws(SQLiteError) -> Bool {
        try connection.queryOne("SELECT EXISTS (SELECT 1 FROM deliveries WHERE delivery_id = ? AND outcome = ?)",
                                [deliveryID, outcome.rawValue])?[0] ?? false
    }
}
