import HeraldCore

/// `SessionRepository` on PostgreSQL (DV-4), as `SessionStore` does it on SQLite.
struct PostgresSessionRepository: SessionRepository {
    let connection: PostgresConnection

    func touch(sid: String, userID: String, app: String, expiresAt: Int64?, now: Int64) throws(StorageError) -> SessionRecord {
        try mapped {
            // The upsert leaves a sid held by another user of the app untouched (its WHERE), like
            // SQLite's; another app's session of that sid is another row (ADR 0019).
            try connection.run("""
                INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at, expires_at, expiry_source)
                VALUES ($1::text, $2::text, $3::text, $4::bigint, $4::bigint, $5::bigint, CASE WHEN $5::bigint IS NULL THEN NULL ELSE 'token' END)
                ON CONFLICT (app, sid) DO UPDATE SET last_seen_at = excluded.last_seen_at,
                    expires_at = CASE WHEN sessions.expiry_source = 'server' OR excluded.expires_at IS NULL
                                      THEN sessions.expires_at ELSE excluded.expires_at END,
                    expiry_source = CASE WHEN sessions.expiry_source = 'server' OR excluded.expires_at IS NULL
                                         THEN sessions.expiry_source ELSE 'token' END
                WHERE sessions.user_id = excluded.user_id
                """, [sid, app, userID, now, expiresAt])
            guard let row = try connection.queryOne("SELECT * FROM sessions WHERE app = $1::text AND sid = $2::text", [app, sid]) else {
                throw PostgresError.misuse(message: "session \(sid) vanished inside its own transaction")
            }
            return try SessionRecord(row: row)
        }
    }

    func find(sid: String, app: String) throws(StorageError) -> SessionRecord? {
        try mapped {
            try connection.queryOne("SELECT * FROM sessions WHERE app = $1::text AND sid = $2::text", [app, sid]).map(SessionRecord.init(row:))
        }
    }

    func end(sid: String, app: String, now: Int64) throws(StorageError) -> Int {
        try mapped {
            // Another app's session of that sid is another row, untouched (ADR 0019).
            try connection.run("""
                INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at, ended_at)
                VALUES ($1::text, $2::text, '', $3::bigint, $3::bigint, $3::bigint)
                ON CONFLICT (app, sid) DO UPDATE SET ended_at = COALESCE(sessions.ended_at, excluded.ended_at)
                """, [sid, app, now])
            return try connection.run("DELETE FROM devices WHERE app = $1::text AND sid = $2::text", [app, sid])
        }
    }

    func setExpiry(sid: String, app: String, expiresAt: Int64?) throws(StorageError) -> Bool {
        try mapped {
            try connection.run("UPDATE sessions SET expires_at = $1::bigint, expiry_source = 'server' WHERE app = $2::text AND sid = $3::text",
                               [expiresAt, app, sid]) > 0
        }
    }

    func endedSessions() throws(StorageError) -> [SessionKey] {
        try mapped {
            try connection.query("SELECT app, sid FROM sessions WHERE ended_at IS NOT NULL").map {
                SessionKey(app: try $0.value("app"), sid: try $0.value("sid"))
            }
        }
    }
}

extension SessionRecord {
    init(row: PostgresRow) throws {
        self.init(sid: try row.value("sid"), app: try row.value("app"), userID: try row.value("user_id"),
                  createdAt: try row.value("created_at"), lastSeenAt: try row.value("last_seen_at"),
                  expiresAt: try row.nullable("expires_at"), endedAt: try row.nullable("ended_at"))
    }
}

/// `UserRepository` on PostgreSQL: users' profiles (their language, NO-5).
struct PostgresUserRepository: UserRepository {
    let connection: PostgresConnection

    func put(_ profile: UserProfile) throws(StorageError) -> Bool {
        try mapped {
            // One upsert, atomic across nodes; `xmax = 0` holds for a row this statement inserted.
            try connection.queryOne("""
                INSERT INTO users (app, user_id, locale, updated_at) VALUES ($1::text, $2::text, $3::text, $4::bigint)
                ON CONFLICT (app, user_id) DO UPDATE SET locale = excluded.locale, updated_at = excluded.updated_at
                RETURNING (xmax = 0) AS created
                """, [profile.app, profile.userID, profile.locale, profile.updatedAt])?.value("created") ?? false
        }
    }

    func find(app: String, userID: String) throws(StorageError) -> UserProfile? {
        try mapped {
            try connection.queryOne("SELECT * FROM users WHERE app = $1::text AND user_id = $2::text", [app, userID]).map { row in
                UserProfile(app: try row.value("app"), userID: try row.value("user_id"), locale: try row.nullable("locale"),
                            updatedAt: try row.value("updated_at"))
            }
        }
    }

    func locales(app: String, userIDs: [String]) throws(StorageError) -> [String: String] {
        if userIDs.isEmpty { return [:] }
        return try mapped {
            var locales: [String: String] = [:]
            for row in try connection.query("""
                SELECT user_id, locale FROM users WHERE app = $1::text AND user_id = ANY($2::text[]) AND locale IS NOT NULL
                """, [app, PostgresTextArray(elements: Array(Set(userIDs)))]) {
                locales[try row.value("user_id")] = try row.value("locale")
            }
            return locales
        }
    }
}
