import HeraldCore

/// `SessionRepository` over `SessionStore`.
struct SQLiteSessionRepository: SessionRepository {
    let connection: SQLiteConnection

    func touch(sid: String, userID: String, app: String, expiresAt: Int64?, now: Int64) throws(StorageError) -> SessionRecord {
        try mapped { () throws(SQLiteError) in try SessionStore.touch(connection, sid: sid, userID: userID, app: app, expiresAt: expiresAt, now: now) }
    }

    func find(sid: String, app: String) throws(StorageError) -> SessionRecord? {
        try mapped { () throws(SQLiteError) in try SessionStore.find(connection, sid: sid, app: app) }
    }

    func end(sid: String, app: String, now: Int64) throws(StorageError) -> Int {
        defer { connection.pushAudience?.count() }  // inside the writer's unit (ADR 0007's amendment)
        do {
            return try SessionStore.end(connection, sid: sid, app: app, now: now)
        } catch let error as SQLiteError {
            throw StorageError(error)
        } catch {
            // The body throws only SQLiteError; transaction's signature just does not say so.
            throw .misuse(message: "ending a session: \(error)")
        }
    }

    func setExpiry(sid: String, app: String, expiresAt: Int64?) throws(StorageError) -> Bool {
        defer { connection.pushAudience?.count() }
        return try mapped { () throws(SQLiteError) in try SessionStore.setExpiry(connection, sid: sid, app: app, expiresAt: expiresAt) }
    }

    func endedSessions() throws(StorageError) -> [SessionKey] {
        try mapped { () throws(SQLiteError) in try SessionStore.endedSessions(connection) }
    }
}
