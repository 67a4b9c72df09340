import HeraldCore
import StoragePostgres
import StorageSQLite

/// Which `Storage` adapter `HERALD_DATABASE` names: a `postgres://` or `postgresql://` URL is
/// PostgreSQL (several nodes on one database, SC-1); anything else is a SQLite file path, exactly
/// as before.
enum StorageSetup {
    /// An open storage and what only its adapter knows.
    struct Opened {
        let storage: any Storage
        /// Waits for submitted work and closes the connections.
        let close: @Sendable () -> Void
        /// Set for PostgreSQL: the job wake-up across nodes (`listenForJobs`).
        let postgres: PostgresStorage?
    }

    /// Opens and migrates the storage `settings.databasePath` names. Blocks.
    /// - Throws: `StorageError` (`.unavailable` when PostgreSQL cannot be reached, `.migration`, …).
    static func open(_ settings: Settings) throws(StorageError) -> Opened {
        if PostgresConfiguration.isPostgresURL(settings.databasePath) {
            let storage = try PostgresStorage.open(PostgresConfiguration(url: settings.databasePath), nodeID: settings.nodeID)
            return Opened(storage: storage, close: { storage.close() }, postgres: storage)
        }
        let storage = try SQLiteStorage.open(path: settings.databasePath, walSizeLimitBytes: Int64(settings.databaseWALLimitBytes))
        return Opened(storage: storage, close: { storage.close() }, postgres: nil)
    }

    /// Brings the named storage to the newest schema (`herald migrate`). - Returns: versions applied.
    static func migrate(_ settings: Settings) throws(StorageError) -> [Int] {
        if PostgresConfiguration.isPostgresURL(settings.databasePath) {
            return try PostgresStorage.migrate(PostgresConfiguration(url: settings.databasePath))
        }
        return try SQLiteStorage.migrate(path: settings.databasePath)
    }

    /// `HERALD_DATABASE` for logs and errors: a URL without its password.
    static func displayName(_ databasePath: String) -> String {
        PostgresConfiguration.isPostgresURL(databasePath) ? PostgresConfiguration(url: databasePath).redactedURL : databasePath
    }
}
