/// Brings a database to the newest schema a list of migrations describes.
///
/// The schema version lives in SQLite's `PRAGMA user_version` (an integer in the file header)
/// rather than a `schema_migrations` table: it is written in the same transaction as the
/// migration's own changes, so a crash leaves either both or neither; it costs nothing to read at
/// start; and the migration names live in code, where they are reviewed. (A future PostgreSQL
/// backend has no `user_version` and will keep its own table.)
enum Migrator {
    /// Applies every migration newer than the database, in order, each in its own
    /// `BEGIN IMMEDIATE` transaction that also sets `user_version`.
    ///
    /// The version is read again inside each transaction, so two processes migrating one file at
    /// the same time apply each step once.
    /// - Parameters:
    ///   - connection: a read-write connection, outside any transaction.
    ///   - migrations: versions 1, 2, 3… in order (checked: a gap or reordering is a programming error).
    /// - Returns: the versions applied now, in order; empty when the database was up to date.
    /// - Throws: `SQLiteError.migration(version, message)` when a step fails (nothing of that step
    ///   is kept; earlier steps are) or when the database's version is newer than `migrations`
    ///   knows: an older build must not run on a newer schema.
    @discardableResult
    static func migrate(_ connection: SQLiteConnection,
                               migrations: [Migration] = HeraldSchema.migrations) throws(SQLiteError) -> [Int] {
        for (offset, migration) in migrations.enumerated() {
            precondition(migration.version == offset + 1,
                         "migration \(migration.name) has version \(migration.version), expected \(offset + 1)")
        }
        precondition(!connection.isInTransaction, "migrate must not run inside a transaction")
        let latest = migrations.count
        let current = try version(of: connection)
        if current > latest {
            throw .migration(version: current, message: "the database is at schema version \(current), newer than the \(latest) this build knows; refusing to run an older Herald on it")
        }
        var applied: [Int] = []
        for migration in migrations where migration.version > current {
            do {
                let didApply = try connection.transaction(.immediate) { conn throws(SQLiteError) -> Bool in
                    guard try version(of: conn) < migration.version else { return false }  // another process did it
                    try conn.execute(migration.sql)
                    if let broken = try conn.queryOne("PRAGMA foreign_key_check") {
                        let table: String = (try? broken["table"]) ?? "?"
                        throw .migration(version: migration.version, message: "\(migration.name): leaves a broken foreign key in table \(table)")
                    }
                    // PRAGMA takes no bound parameters; the version is an Int from code, not input.
                    try conn.execute("PRAGMA user_version = \(migration.version)")
                    return true
                }
                if didApply { applied.append(migration.version) }
            } catch let error as SQLiteError {
                if case .migration = error { throw error }
                throw .migration(version: migration.version, message: "\(migration.name): \(error)")
            } catch {
                throw .migration(version: migration.version, message: "\(migration.name): \(error)")
            }
        }
        return applied
    }

    /// Checks, without changing anything, that the database is at exactly the newest version of
    /// `migrations`: for a command that opens the file beside a running server (`herald jobs
    /// retry`), which must neither migrate the schema under it nor run on one it does not know.
    /// - Throws: `SQLiteError.schemaMismatch` for any other version (0: a new, empty file).
    static func requireCurrent(_ connection: SQLiteConnection, migrations: [Migration] = HeraldSchema.migrations) throws(SQLiteError) {
        let current = try version(of: connection)
        guard current == migrations.count else { throw .schemaMismatch(found: current, expected: migrations.count) }
    }

    /// The schema version recorded in the database (`PRAGMA user_version`; 0 for a new file).
    /// - Throws: `SQLiteError` when the pragma cannot run.
    static func version(of connection: SQLiteConnection) throws(SQLiteError) -> Int {
        guard let row = try connection.queryOne("PRAGMA user_version") else { return 0 }
        return try row[0, as: Int.self]
    }
}
