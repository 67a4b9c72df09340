import HeraldCore

/// The SQL for users' profiles (their language, NO-5).
enum UserStore {
    /// Stores the profile. - Returns: true when the user had none.
    @discardableResult
    static func put(_ connection: SQLiteConnection, _ profile: UserProfile) throws(SQLiteError) -> Bool {
        // UPDATE then INSERT, as MemberStore: an upsert's change count would not tell new from old.
        try connection.run("UPDATE users SET locale = ?, updated_at = ? WHERE app = ? AND user_id = ?",
                           [profile.locale, profile.updatedAt, profile.app, profile.userID])
        if connection.changes > 0 { return false }
        try connection.run("INSERT INTO users (app, user_id, locale, updated_at) VALUES (?, ?, ?, ?)",
                           [profile.app, profile.userID, profile.locale, profile.updatedAt])
        return true
    }

    /// One user's profile, if set.
    static func find(_ connection: SQLiteConnection, app: String, userID: String) throws(SQLiteError) -> UserProfile? {
        try connection.queryOne("SELECT * FROM users WHERE app = ? AND user_id = ?", [app, userID])
            .map { row throws(SQLiteError) in
                UserProfile(app: try row["app"], userID: try row["user_id"], locale: try row["locale"], updatedAt: try row["updated_at"])
            }
    }

    /// The locales of those of `userIDs` that have one.
    static func locales(_ connection: SQLiteConnection, app: String, userIDs: [String]) throws(SQLiteError) -> [String: String] {
        if userIDs.isEmpty { return [:] }
        // json_each drives the join, as DeviceStore's recipients query: one statement for a batch.
        let rows = try connection.query("""
            SELECT x.user_id, x.locale FROM json_each(:users) AS u CROSS JOIN users x ON x.user_id = u.value
            WHERE x.app = :app AND x.locale IS NOT NULL
            """, [":app": app, ":users": JSONStringArray.encode(Array(Set(userIDs)))])
        var locales: [String: String] = [:]
        for row in rows {
            let userID: String = try row["user_id"]
            locales[userID] = try row["locale"]
        }
        return locales
    }
}
