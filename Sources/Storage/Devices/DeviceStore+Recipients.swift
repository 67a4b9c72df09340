extension DeviceStore {
    /// The devices of many users in one query, for planning a notification's pushes (NO-2):
    /// grouped by user, each user's newest first, with `active`.
    ///
    /// The ids are bound as one JSON array and expanded by `json_each`, so the SQL text (and its
    /// cached statement) is the same whatever the number of users.
    /// - Parameter now: unix ms, for `active`.
    public static func list(_ connection: SQLiteConnection, userIDs: [String], app: String = "default",
                            now: Int64) throws(StorageError) -> [DeviceRecord] {
        if userIDs.isEmpty { return [] }
        return try connection.query(selectWithActive + """
             WHERE d.app = :app AND d.user_id IN (SELECT value FROM json_each(:users))
            ORDER BY d.user_id, d.created_at DESC, d.id
            """, [":app": app, ":users": JSONStringArray.encode(userIDs), ":now": now])
            .map { row throws(StorageError) in try DeviceRecord(row: row) }
    }
}
