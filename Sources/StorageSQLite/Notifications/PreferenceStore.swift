import HeraldCore
/// The SQL for push preferences (NO-4). Only stored choices live here; the catalog's defaults
/// for a user who never chose are the caller's.
enum PreferenceStore {
    /// The user's stored preference for `scope` (nil: the global switch), if they ever saved one.
    static func find(_ connection: SQLiteConnection, app: String = "default", userID: String,
                            scope: String?) throws(SQLiteError) -> PushPreferenceRecord? {
        try connection.queryOne("SELECT * FROM push_preferences WHERE app = ? AND user_id = ? AND scope = ?",
                                [app, userID, column(scope: scope)])
            .map { row throws(SQLiteError) in try PushPreferenceRecord(row: row) }
    }

    /// The stored preferences of many users in one query, for planning a batch of notifications
    /// (NO-2): each user's global switch and their preference for each of `scopes`, if saved.
    ///
    /// The lists are bound as JSON arrays and expanded by `json_each`, so the SQL text (and its
    /// cached statement) is the same whatever their length.
    static func list(_ connection: SQLiteConnection, app: String = "default", userIDs: [String],
                            scopes: [String]) throws(SQLiteError) -> [PushPreferenceRecord] {
        if userIDs.isEmpty { return [] }
        // Joins (CROSS JOIN keeps the lists as outer loops, so each pair is one primary-key
        // lookup) rather than `IN (SELECT …)`, which builds a temporary index per list per call.
        return try connection.query("""
            SELECT p.* FROM json_each(:users) AS u CROSS JOIN json_each(:scopes) AS s
            CROSS JOIN push_preferences AS p ON p.app = :app AND p.user_id = u.value AND p.scope = s.value
            """, [":app": app, ":users": JSONStringArray.encode(Array(Set(userIDs))),
                  ":scopes": JSONStringArray.encode(Array(Set([""] + scopes.map { column(scope: $0) })))])
            .map { row throws(SQLiteError) in try PushPreferenceRecord(row: row) }
    }

    /// Of `userIDs`, the users of `app` whose global switch is stored off (NO-4): the users a
    /// direct push skips. One seek in the index of such rows (migration 18) when the app has
    /// none, which is the usual case; else one seek per user in it.
    static func switchedOff(_ connection: SQLiteConnection, app: String, userIDs: [String]) throws(SQLiteError) -> Set<String> {
        if userIDs.isEmpty { return [] }
        guard try connection.queryOne(anySwitchedOffSQL, [app]) != nil else { return [] }
        var users = Set<String>()
        for row in try connection.query(switchedOffSQL, [":app": app, ":users": JSONStringArray.encode(Array(Set(userIDs)))]) {
            users.insert(try row[0])
        }
        return users
    }

    /// Whether any user of an app (?1) has the global switch off.
    private static let anySwitchedOffSQL = """
        SELECT 1 FROM push_preferences INDEXED BY push_preferences_switched_off WHERE app = ? AND scope = '' AND is_enabled = 0 LIMIT 1
        """
    /// Which of the users (`:users`, a JSON array) of `:app` have the global switch off.
    private static let switchedOffSQL = """
        SELECT p.user_id FROM json_each(:users) AS u CROSS JOIN push_preferences AS p INDEXED BY push_preferences_switched_off
        ON p.app = :app AND p.user_id = u.value AND p.scope = '' AND p.is_enabled = 0
        """

    /// Stores the preference, replacing the one for the same (app, user, scope).
    static func save(_ connection: SQLiteConnection, _ record: PushPreferenceRecord) throws(SQLiteError) {
        try connection.run("""
            INSERT INTO push_preferences (app, user_id, scope, is_enabled, enabled_events_json, updated_at)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (app, user_id, scope) DO UPDATE SET is_enabled = excluded.is_enabled,
                enabled_events_json = excluded.enabled_events_json, updated_at = excluded.updated_at
            """, [record.app, record.userID, column(scope: record.scope), record.isEnabled,
                  record.enabledEvents.map(JSONStringArray.encode), record.updatedAt])
    }

    // The global switch is scope '' in the table: a NULL in the primary key would not be unique.
    static func column(scope: String?) -> String { scope ?? "" }
    static func scope(fromColumn value: String) -> String? { value.isEmpty ? nil : value }
}
