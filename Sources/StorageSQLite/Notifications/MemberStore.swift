import HeraldCore
/// The SQL for scope membership (NO-6): who belongs to a scope and with which permissions, the
/// input of "every member holding permission P" recipient rules.
enum MemberStore {
    /// Stores the member, replacing their permissions when known.
    /// - Returns: true when the member was created, false when updated.
    @discardableResult
    static func put(_ connection: SQLiteConnection, _ member: ScopeMember) throws(SQLiteError) -> Bool {
        let permissions = JSONStringArray.encode(Array(Set(member.permissions)).sorted())
        // UPDATE then INSERT rather than an upsert: an upsert's change count is 1 either way and
        // would not tell a new member from an old one. Writes run on the one writer, so nothing
        // can insert in between.
        try connection.run("UPDATE scope_members SET permissions_json = ?, updated_at = ? WHERE app = ? AND scope = ? AND user_id = ?",
                           [permissions, member.updatedAt, member.app, member.scope, member.userID])
        if connection.changes > 0 { return false }
        try connection.run("INSERT INTO scope_members (app, scope, user_id, permissions_json, updated_at) VALUES (?, ?, ?, ?, ?)",
                           [member.app, member.scope, member.userID, permissions, member.updatedAt])
        return true
    }

    /// Removes a member. - Returns: false when there was no such member.
    static func delete(_ connection: SQLiteConnection, app: String = "default", scope: String,
                              userID: String) throws(SQLiteError) -> Bool {
        try connection.run("DELETE FROM scope_members WHERE app = ? AND scope = ? AND user_id = ?", [app, scope, userID])
        return connection.changes > 0
    }

    /// One member, if known.
    static func find(_ connection: SQLiteConnection, app: String = "default", scope: String,
                            userID: String) throws(SQLiteError) -> ScopeMember? {
        try connection.queryOne("SELECT * FROM scope_members WHERE app = ? AND scope = ? AND user_id = ?", [app, scope, userID])
            .map { row throws(SQLiteError) in try ScopeMember(row: row) }
    }

    // Two statements rather than `(:after IS NULL OR user_id > :after)`: with the OR, SQLite
    // walks the scope from its first member on every page instead of seeking past `after`.
    private static let firstPageSQL = """
        SELECT * FROM scope_members WHERE app = :app AND scope = :scope ORDER BY user_id LIMIT :limit
        """
    private static let nextPageSQL = """
        SELECT * FROM scope_members WHERE app = :app AND scope = :scope AND user_id > :after ORDER BY user_id LIMIT :limit
        """

    /// One page of a scope's members, sorted by user id.
    /// - Parameters:
    ///   - after: the last user id of the previous page; nil for the first page.
    ///   - limit: members at most.
    static func list(_ connection: SQLiteConnection, app: String = "default", scope: String, after: String?,
                            limit: Int) throws(SQLiteError) -> [ScopeMember] {
        precondition(limit >= 0, "a negative LIMIT means no limit in SQLite")
        var values: [String: any SQLiteBindable] = [":app": app, ":scope": scope, ":limit": limit]
        if let after { values[":after"] = after }
        return try connection.query(after == nil ? firstPageSQL : nextPageSQL, values)
            .map { row throws(SQLiteError) in try ScopeMember(row: row) }
    }

    /// The scope's members holding `permission` (every member when nil), sorted by user id: the
    /// recipients of a permission-gated kind (NO-6).
    static func holding(_ connection: SQLiteConnection, app: String = "default", scope: String,
                               permission: String?) throws(SQLiteError) -> [ScopeMember] {
        try connection.query("""
            SELECT * FROM scope_members m
            WHERE m.app = :app AND m.scope = :scope
              AND (:permission IS NULL OR EXISTS (SELECT 1 FROM json_each(m.permissions_json) WHERE value = :permission))
            ORDER BY m.user_id
            """, [":app": app, ":scope": scope, ":permission": permission])
            .map { row throws(SQLiteError) in try ScopeMember(row: row) }
    }
}
