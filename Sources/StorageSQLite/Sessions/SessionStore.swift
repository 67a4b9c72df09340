import HeraldCore
/// The SQL for sessions (DV-4). Functions of a connection: callers choose the thread (the
/// `Database` writer for writes) and the transaction.
enum SessionStore {
    /// Creates app `app`'s session or refreshes `last_seen_at` (and `expires_at` when the token
    /// carries `session_exp`, unless the app backend set the expiry itself: that one wins). An
    /// ended session stays ended. A `sid` already held by another user of the app is left
    /// untouched (the returned record shows its owner), so one user's token never moves another's
    /// session. Another app's session of that `sid` is another session (ADR 0019).
    ///
    /// - Parameters:
    ///   - expiresAt: unix ms from the token's `session_exp`, if any.
    ///   - now: unix ms.
    /// A token whose `session_exp` brings the expiry forward counts in the storage's
    /// `PushAudienceChange`: the session's devices leave pushes sooner than a device read before
    /// it says.
    ///
    /// - Returns: the stored session.
    static func touch(_ connection: SQLiteConnection, sid: String, userID: String, app: String = "default",
                             expiresAt: Int64?, now: Int64) throws(SQLiteError) -> SessionRecord {
        // Only a token with an expiry can bring one forward: the others need no look before.
        let before = try expiresAt == nil ? nil : find(connection, sid: sid, app: app)
        try connection.run("""
            INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at, expires_at, expiry_source)
            VALUES (?, ?, ?, ?, ?, ?, CASE WHEN ? IS NULL THEN NULL ELSE 'token' END)
            ON CONFLICT (app, sid) DO UPDATE SET last_seen_at = excluded.last_seen_at,
                expires_at = CASE WHEN sessions.expiry_source = 'server' OR excluded.expires_at IS NULL
                                  THEN sessions.expires_at ELSE excluded.expires_at END,
                expiry_source = CASE WHEN sessions.expiry_source = 'server' OR excluded.expires_at IS NULL
                                     THEN sessions.expiry_source ELSE 'token' END
            WHERE sessions.user_id = excluded.user_id
            """, [sid, app, userID, now, now, expiresAt, expiresAt])
        guard let row = try connection.queryOne("SELECT * FROM sessions WHERE app = ? AND sid = ?", [app, sid]) else {
            throw .misuse(message: "session \(sid) vanished inside its own transaction")
        }
        let session = try SessionRecord(row: row)
        if let before, let after = session.expiresAt, after < before.expiresAt ?? .max { connection.pushAudience?.count() }
        return session
    }

    /// App `app`'s session, if known: another app's session of that name is another session.
    static func find(_ connection: SQLiteConnection, sid: String, app: String = "default") throws(SQLiteError) -> SessionRecord? {
        try connection.queryOne("SELECT * FROM sessions WHERE app = ? AND sid = ?", [app, sid])
            .map { row throws(SQLiteError) in try SessionRecord(row: row) }
    }

    /// Ends app `app`'s session: marks it ended (creating the row if the app never used that
    /// `sid`, so its tokens are refused from now on) and deletes its devices. Another app's
    /// session of that `sid` is another session, untouched (ADR 0019).
    ///
    /// - Returns: the number of devices deleted.
    static func end(_ connection: SQLiteConnection, sid: String, app: String = "default", now: Int64) throws -> Int {
        try connection.transaction { connection -> Int in
            try connection.run("""
                INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at, ended_at) VALUES (?, ?, '', ?, ?, ?)
                ON CONFLICT (app, sid) DO UPDATE SET ended_at = COALESCE(sessions.ended_at, excluded.ended_at)
                """, [sid, app, now, now, now])
            try connection.run("DELETE FROM devices WHERE app = ? AND sid = ?", [app, sid])
            return connection.changes
        }
    }

    /// Sets or clears the expiry of app `app`'s session (`PUT /v1/sessions/{sid}`).
    /// - Returns: false when the app has no such session.
    static func setExpiry(_ connection: SQLiteConnection, sid: String, app: String = "default", expiresAt: Int64?) throws(SQLiteError) -> Bool {
        try connection.run("UPDATE sessions SET expires_at = ?, expiry_source = 'server' WHERE app = ? AND sid = ?", [expiresAt, app, sid])
        return connection.changes > 0
    }

    /// Every ended session, every app's (loaded at start so tokens of ended sessions are refused
    /// at once).
    static func endedSessions(_ connection: SQLiteConnection) throws(SQLiteError) -> [SessionKey] {
        try connection.query("SELECT app, sid FROM sessions WHERE ended_at IS NOT NULL").map { row throws(SQLiteError) in
            SessionKey(app: try row["app"], sid: try row["sid"])
        }
    }
}
