/// Brings a PostgreSQL database to the newest schema of a migration list.
///
/// The applied versions live in `herald_schema_migrations` (PostgreSQL has no `user_version`).
/// Each step runs in its own transaction holding a transaction-scoped advisory lock, and the
/// applied versions are read again under that lock: several nodes starting at once on one
/// database apply each step exactly once, the others wait for it and find it done. A step runs
/// when its version is not recorded yet, whatever newer ones are: versions follow SQLite's, and a
/// branch merged later may bring a lower number (10 after 11), which existing databases still get.
enum PostgresMigrator {
    /// The advisory lock key of migrations (any constant unique to Herald: "herald" in ASCII).
    static let lockKey: Int64 = 0x68_65_72_61_6C_64

    /// Applies the missing steps in order.
    /// - Returns: the versions applied now; empty when the database was up to date.
    /// - Throws: `PostgresError.migration` when a step fails (nothing of it is kept) or when the
    ///   database is newer than `migrations` knows; `.connectionLost`/`.connect` as any call.
    @discardableResult
    static func migrate(_ connection: PostgresConnection,
                        migrations: [PostgresMigration] = PostgresSchema.migrations) throws -> [Int] {
        for (offset, migration) in migrations.enumerated() where offset > 0 {
            precondition(migration.version > migrations[offset - 1].version,
                         "migration \(migration.name) has version \(migration.version), not above \(migrations[offset - 1].version)")
        }
        // Under the lock too: two concurrent CREATE TABLE IF NOT EXISTS can both try to create it.
        do {
            try connection.execute("BEGIN; SELECT pg_advisory_xact_lock(\(lockKey)); " + """
            CREATE TABLE IF NOT EXISTS herald_schema_migrations (
                version    INTEGER PRIMARY KEY,
                name       TEXT NOT NULL,
                applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
            ); COMMIT
            """)
        } catch {
            if !connection.isBroken { _ = try? connection.execute("ROLLBACK") }
            throw error
        }
        let latest = migrations.last?.version ?? 0
        var appliedNow: [Int] = []
        for migration in migrations {
            try connection.execute("BEGIN")
            do {
                _ = try connection.query("SELECT pg_advisory_xact_lock($1::bigint)", [lockKey])
                let applied = try appliedVersions(of: connection)
                if let newest = applied.max(), newest > latest {
                    throw PostgresError.migration(version: newest, message: "the database is at schema version \(newest), newer than the \(latest) this build knows; refusing to run an older Herald on it")
                }
                if !applied.contains(migration.version) {
                    do {
                        try connection.execute(migration.sql)
                    } catch {
                        throw PostgresError.migration(version: migration.version, message: "\(migration.name): \(error)")
                    }
                    try connection.run("INSERT INTO herald_schema_migrations (version, name) VALUES ($1::integer, $2::text)",
                                       [migration.version, migration.name])
                    appliedNow.append(migration.version)
                }
                try connection.execute("COMMIT")
            } catch {
                if !connection.isBroken { _ = try? connection.execute("ROLLBACK") }
                throw error
            }
        }
        return appliedNow
    }

    /// Checks, without changing anything, that the database has exactly the versions of
    /// `migrations` applied: for a command beside running nodes (`herald jobs retry`), which must
    /// neither migrate the shared schema under them nor run on one it does not know.
    /// - Throws: `PostgresError.schemaMismatch` (`found`: the newest version applied when this
    ///   build does not know it, else the last version before the first one missing; 0 for a
    ///   database never migrated); `.connectionLost`/`.connect`/`.server` as any call.
    static func requireCurrent(_ connection: PostgresConnection, migrations: [PostgresMigration] = PostgresSchema.migrations) throws {
        let known = migrations.map(\.version)
        let expected = known.last ?? 0
        let exists = try connection.query("SELECT to_regclass('herald_schema_migrations') IS NOT NULL AS present")
            .first.map { try $0.value("present", as: Bool.self) } ?? false
        let applied = exists ? try appliedVersions(of: connection) : []
        if let unknown = applied.subtracting(known).max() { throw PostgresError.schemaMismatch(found: unknown, expected: expected) }
        if let missing = known.firstIndex(where: { !applied.contains($0) }) {
            throw PostgresError.schemaMismatch(found: missing == 0 ? 0 : known[missing - 1], expected: expected)
        }
    }

    /// The versions applied so far.
    static func appliedVersions(of connection: PostgresConnection) throws -> Set<Int> {
        Set(try connection.query("SELECT version FROM herald_schema_migrations").map { try $0.value("version", as: Int.self) })
    }
}
