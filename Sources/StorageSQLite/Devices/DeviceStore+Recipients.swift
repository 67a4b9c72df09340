import HeraldCore
extension DeviceStore {
    /// The devices of `ids` that exist, with `active`, in no particular order; an id given twice
    /// is found once. One statement for a whole claim of the delivery worker (issue 17): a
    /// statement per id cost its binding, stepping and reset each time.
    /// - Parameter now: unix ms, for `active`.
    static func find(_ connection: SQLiteConnection, ids: [String], now: Int64) throws(SQLiteError) -> [DeviceRecord] {
        if ids.isEmpty { return [] }
        // json_each drives the join (CROSS JOIN keeps it the outer loop), one primary-key lookup per id.
        return try connection.prepare(findIDsSQL).query([":ids": JSONStringArray.encode(Array(Set(ids))), ":now": now]) { row throws(SQLiteError) in
            try DeviceRecord(columns: row)
        }
    }

    /// The devices of many users in one query, for planning a notification's pushes (NO-2):
    /// grouped by user, each user's newest first, with `active`.
    ///
    /// The ids are bound as one JSON array and expanded by `json_each`, so the SQL text (and its
    /// cached statement) is the same whatever the number of users.
    /// - Parameter now: unix ms, for `active`.
    static func list(_ connection: SQLiteConnection, userIDs: [String], app: String = "default",
                            now: Int64) throws(SQLiteError) -> [DeviceRecord] {
        if userIDs.isEmpty { return [] }
        // json_each drives a join (CROSS JOIN keeps it the outer loop) and Swift sorts: with
        // `IN (SELECT …)` and `ORDER BY`, SQLite built a temporary index and a sorter on every
        // call, even for users without devices, which the choke point's planning mostly has.
        let devices = try connection.prepare(listUsersSQL).query([":app": app, ":users": JSONStringArray.encode(Array(Set(userIDs))), ":now": now]) {
            row throws(SQLiteError) in try DeviceRecord(columns: row)
        }
        // SQLite's order: text compared byte by byte.
        return devices.sorted { a, b in
            if a.userID != b.userID { return a.userID.utf8.lexicographicallyPrecedes(b.userID.utf8) }
            if a.createdAt != b.createdAt { return a.createdAt > b.createdAt }
            return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }
    }

    /// `find(_:ids:now:)`'s statement, built once (its text is the statement cache's key).
    private static let findIDsSQL = """
        SELECT \(DeviceRecord.selectColumns)
        FROM json_each(:ids) AS i CROSS JOIN devices d ON d.id = i.value
        LEFT JOIN sessions s ON s.sid = d.sid
        """

    /// `list(_:userIDs:app:now:)`'s statement, built once.
    private static let listUsersSQL = """
        SELECT \(DeviceRecord.selectColumns)
        FROM json_each(:users) AS u CROSS JOIN devices d ON d.user_id = u.value
        LEFT JOIN sessions s ON s.sid = d.sid
        WHERE d.app = :app
        """
}
