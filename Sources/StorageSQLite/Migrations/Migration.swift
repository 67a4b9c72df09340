/// One step of a database schema: a version number, a name for logs, and the SQL script that
/// takes the schema from `version - 1` to `version`.
///
/// The script runs inside the migration's transaction, so it must not contain statements SQLite
/// refuses there (`VACUUM`, `PRAGMA journal_mode`) and `PRAGMA foreign_keys` has no effect in it.
/// A table rebuild should follow SQLite's "12 steps"; the migrator runs `PRAGMA foreign_key_check`
/// before committing, so a rebuild that breaks references fails instead of committing.
///
/// Once released, a migration never changes: fix mistakes with a new one.
struct Migration: Sendable, Equatable {
    /// 1, 2, 3… with no gaps; stored in `PRAGMA user_version` once applied.
    let version: Int
    /// A short description for logs (`"sessions, devices, jobs"`).
    let name: String
    /// One or more SQL statements without parameters.
    let sql: String

    init(version: Int, name: String, sql: String) {
        precondition(version > 0, "migration versions start at 1")
        self.version = version
        self.name = name
        self.sql = sql
    }
}
