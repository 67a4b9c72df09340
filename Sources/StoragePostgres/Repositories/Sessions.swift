import HeraldCore

/// `SessionRepository` on PostgreSQL (DV-4), as `SessionStore` does it on SQLite.
struct PostgresSessionRepository: SessionRepository {
    let connection: PostgresConnection

    func touch(sid: String, userID: String, app: String, expiresAt: Int64?, now: Int64) throws(StorageError) -> SessionRecord {
        try mapped {
            // The upsert leaves a sid held by another user untouched (its WHERE), like SQLite's.
            try connection.run("""
                INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at, expires_at, expiry_source)
                VALUES ($1::text, $2::text, $3::text, $4::bigint, $4::bigint, $5::bigint, CASE WHEN $5::bigint IS NULL THEN NULL ELSE 'token' END)
                ON CONFLICT (sid) DO UPDATE SET last_seen_at = excluded.last_seen_at,
                    expires_at = CASE WHEN sessions.expiry_source = 'server' OR excluded.expires_at IS NULL
                                      THEN sessions.expires_at ELSE excluded.expires_at END,
                    expiry_source = CASE WHEN sessions.expiry_source = 'server' OR excluded.expires_at IS NULL
                                         THEN sessions.expiry_source ELSE 'token' END
                WHERE sessions.user_id = excluded.user_id
                """, [sid, app, userID, now, expiresAt])
            guard let row = try connection.queryOne("SELECT * FROM sessions WHERE sid = $1::text", [sid]) else {
                throw PostgresError.misuse(message: "session \(sid) vanished inside its own transaction")
            }
            return try SessionRecord(row: row)
        }
    }

    func find(sid: String) throws(StorageError) -> SessionRecord? {
        try mapped { try connection.queryOne("SELECT * FROM sessions WHERE sid = $1::text", [sid]).map(SessionRecord.init(row:)) }
    }

    func end(sid: String, now: Int64) throws(StorageError) -> Int {
        try mapped {
            try connection.run("""
                INSERT INTO sessions (sid, user_id, created_at, last_seen_at, ended_at) VALUES ($1::text, '', $2::bigint, $2::bigint, $2::bigint)
                ON CONFLICT (sid) DO UPDATE SET ended_at = COALESCE(sessions.ended_at, excluded.ended_at)
                """, [sid, now])
            return try connection.run("DELETE FROM devices WHERE sid = $1::text", [sid])
        }
    }

    func setExpiry(sid: String, expiresAt: Int64?) throws(StorageError) -> Bool {
        try mapped {
            try connection.run("UPDATE sessions SET expires_at = $1::bigint, expiry_source = 'server' WHERE sid = $2::text", [expiresAt, sid]) > 0
        }
    }

    func endedSessionIDs() throws(StorageError) -> [String] {
        try mapped { try connection.query("SELECT sid FROM sessions WHERE ended_at IS NOT NULL").map { try $0.value("sid") } }
    }
}

extension SessionRecord {
    init(row: PostgresRow) throws {
        self.init(sid: try row.value("sid"), app: try row.value("app"), userID: try row.value("user_id"),
                  createdAt: try row.value("created_at"), lastSeenAt: try row.value("last_seen_at"),
                  expiresAt: try row.nullable("expires_at"), endedAt: try row.nullable("ended_at"))
    }
}
