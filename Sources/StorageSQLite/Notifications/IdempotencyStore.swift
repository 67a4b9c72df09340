import HeraldCore
/// The SQL for idempotency keys (NO-1: a paid order pushes once however often the provider
/// confirms). Expiry is a read-time cutoff, so a key is usable again the moment it expires,
/// whenever the purge runs.
enum IdempotencyStore {
    /// The record for `key` if created at or after `notBefore` (unix ms); an older one counts as absent.
    static func find(_ connection: SQLiteConnection, app: String = "default", key: String,
                            notBefore: Int64) throws(SQLiteError) -> IdempotencyRecord? {
        try connection.queryOne("SELECT * FROM idempotency_keys WHERE app = ? AND key = ? AND created_at >= ?", [app, key, notBefore])
            .map { row throws(SQLiteError) in try IdempotencyRecord(row: row) }
    }

    /// Stores the record, replacing any stored one of the same key.
    /// - Important: Call `find` first in the same write transaction: a stored record `find` did
    ///   not return is expired and may go; a live one must be answered, not replaced.
    static func reserve(_ connection: SQLiteConnection, _ record: IdempotencyRecord) throws(SQLiteError) {
        try connection.run("""
            INSERT INTO idempotency_keys (app, key, request_hash, response_json, complete, created_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (app, key) DO UPDATE SET request_hash = excluded.request_hash, response_json = excluded.response_json,
                complete = excluded.complete, created_at = excluded.created_at
            """, [record.app, record.key, record.requestHash, record.responseJSON, record.complete, record.createdAt])
    }

    /// Stores the answer for `key` and marks it complete.
    static func complete(_ connection: SQLiteConnection, app: String = "default", key: String,
                                responseJSON: String) throws(SQLiteError) {
        try connection.run("UPDATE idempotency_keys SET response_json = ?, complete = 1 WHERE app = ? AND key = ?",
                           [responseJSON, app, key])
    }

    /// Deletes keys created before `cutoff` (unix ms). - Returns: how many.
    @discardableResult
    static func purge(_ connection: SQLiteConnection, createdBefore cutoff: Int64) throws(SQLiteError) -> Int {
        try connection.run("DELETE FROM idempotency_keys WHERE created_at < ?", [cutoff])
        return connection.changes
    }
}
