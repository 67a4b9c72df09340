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
        return sorted(devices)
    }

    /// Devices grouped by user, each user's newest first; SQLite's order: text compared byte by byte.
    private static func sorted(_ devices: [DeviceRecord]) -> [DeviceRecord] {
        devices.sorted { a, b in
            if a.userID != b.userID { return a.userID.utf8.lexicographicallyPrecedes(b.userID.utf8) }
            if a.createdAt != b.createdAt { return a.createdAt > b.createdAt }
            return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }
    }

    /// `list(_:userIDs:app:now:)`, the users' languages and their stored global and `scope`
    /// preferences in one statement (issue 17: planning read them in three, each with its own
    /// `json_each` of the users): each device row carries its user's.
    /// - Parameter scope: nil: the global switches only.
    static func planningReads(_ connection: SQLiteConnection, userIDs: [String], app: String, scope: String?,
                              now: Int64) throws(SQLiteError) -> PlanningReads {
        if userIDs.isEmpty { return PlanningReads(devices: [], userLocales: [:], preferences: []) }
        var locales: [String: String] = [:]
        var preferences: [PushPreferenceRecord] = []
        var seen: Set<String> = []
        let devices = try connection.prepare(planningSQL).query([":app": app, ":users": JSONStringArray.encode(Array(Set(userIDs))),
                                                                 ":now": now, ":scope": scope]) { row throws(SQLiteError) in
            let device = try DeviceRecord(columns: row)
            // Once per user, whatever their number of devices.
            if seen.insert(device.userID).inserted {
                // The statement's own columns, after the device's.
                let own = DeviceRecord.selectColumnCount
                if let locale: String = try row[own] { locales[device.userID] = locale }
                for (column, scope) in [(own + 1, String?.none), (own + 4, scope)] {
                    guard let enabled: Bool = try row[column] else { continue }
                    let events: String? = try row[column + 1]
                    preferences.append(PushPreferenceRecord(
                        app: app, userID: device.userID, scope: scope, isEnabled: enabled,
                        enabledEvents: try events.map { text throws(SQLiteError) in try JSONStringArray.decode(text, column: "enabled_events_json") },
                        updatedAt: try row[column + 2]))
                }
            }
            return device
        }
        return PlanningReads(devices: sorted(devices), userLocales: locales, preferences: preferences)
    }

    /// `planningReads`' statement: `listUsersSQL` with the user's row and two preference rows
    /// (global `''`, and `:scope`; a NULL `:scope` matches none) joined to each device.
    /// `+:scope`, not `:scope`: SQLite compares a bare parameter with the partial index
    /// `push_preferences_switched_off`'s `scope = ''` and then prepares the statement again
    /// whenever `:scope` is bound to another value (every batch: ~200k instructions).
    private static let planningSQL = """
        SELECT \(DeviceRecord.selectColumns), x.locale,
               g.is_enabled, g.enabled_events_json, g.updated_at, p.is_enabled, p.enabled_events_json, p.updated_at
        FROM json_each(:users) AS u CROSS JOIN devices d ON d.user_id = u.value
        LEFT JOIN sessions s ON s.app = d.app AND s.sid = d.sid
        LEFT JOIN users x ON x.app = d.app AND x.user_id = d.user_id
        LEFT JOIN push_preferences g ON g.app = d.app AND g.user_id = d.user_id AND g.scope = ''
        LEFT JOIN push_preferences p ON p.app = d.app AND p.user_id = d.user_id AND p.scope = +:scope
        WHERE d.app = :app
        """

    /// `find(_:ids:now:)`'s statement, built once (its text is the statement cache's key).
    private static let findIDsSQL = """
        SELECT \(DeviceRecord.selectColumns)
        FROM json_each(:ids) AS i CROSS JOIN devices d ON d.id = i.value
        LEFT JOIN sessions s ON s.app = d.app AND s.sid = d.sid
        """

    /// `list(_:userIDs:app:now:)`'s statement, built once.
    private static let listUsersSQL = """
        SELECT \(DeviceRecord.selectColumns)
        FROM json_each(:users) AS u CROSS JOIN devices d ON d.user_id = u.value
        LEFT JOIN sessions s ON s.app = d.app AND s.sid = d.sid
        WHERE d.app = :app
        """
}
