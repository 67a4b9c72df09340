/// Brings a PostgreSQL database to the newest schema of a migration list.
///
/// The applied versions live in `herald_schema_migrations` (PostgreSQL has no `user_version`).
/// Each step runs in its own transaction holding a transaction-scoped advisory lock, and the
/// version is read again under that lock: several nodes starting at once on one database apply
/// each step exactly once, the others wait for it and find it done.
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
            precondition(migration.version == migrations[offset - 1].version + 1,
                         "migration \(migration.name) has version \(migration.version), expected \(migrations[offset - 1].version + 1)")
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
        var applied: [Int] = []
        for migration in migrations {
            try connection.execute("BEGIN")
            do {
                _ = try connection.query("SELECT pg_advisory_xact_lock($1::bigint)", [lockKey])
                let current = try version(of: connection)
                if current > latest {
                    throw PostgresError.migration(version: current, message: "the database is at schema version \(current), newer than the \(latest) this build knows; refusing to run an older Herald on it")
                }
                if current < migration.version {
                    do {
                        try connection.execute(migration.sql)
                    } catch {
                        throw PostgresError.migration(version: migration.version, message: "\(migration.name): \(error)")
                    }
                    try connection.run("INSERT INTO herald_schema_migrations (version, name) VALUES ($1::integer, $2::text)",
                                       [migration.version, migration.name])
                    applied.append(migration.version)
                }
                try connection.execute("COMMIT")
            } catch {
                if !connection.isBroken { _ = try? connection.execute("ROLLBACK") }
                throw error
            }
        }
        return applied
    }

    /// The newest version applied (0 for an empty database).
    static func version(of connection: PostgresConnection) throws -> Int {
        try connection.queryOne("SELECT COALESCE(MAX(version), 0) AS v FROM herald_schema_migrations")?.value("v") ?? 0
    }
}
