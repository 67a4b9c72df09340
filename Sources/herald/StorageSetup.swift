import Foundation
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
    /// - Parameter migrating: false for an admin command that runs beside a server (`herald jobs
    ///   retry`: it takes no process lock, ADR 0017): the schema must be exactly this build's and
    ///   is never changed, so a newer binary cannot migrate it under an older server.
    /// - Throws: `StorageError` (`.unavailable` when PostgreSQL cannot be reached, `.migration`,
    ///   `.schemaMismatch` when not `migrating`, …).
    static func open(_ settings: Settings, migrating: Bool = true) throws(StorageError) -> Opened {
        if PostgresConfiguration.isPostgresURL(settings.databasePath) {
            let storage = try PostgresStorage.open(PostgresConfiguration(url: settings.databasePath), nodeID: settings.nodeID,
                                                   migrating: migrating)
            return Opened(storage: storage, close: { storage.close() }, postgres: storage)
        }
        let storage = try SQLiteStorage.open(path: settings.databasePath, walSizeLimitBytes: Int64(settings.databaseWALLimitBytes),
                                             migrating: migrating)
        return Opened(storage: storage, close: { storage.close() }, postgres: nil)
    }

    /// Takes the SQLite database's process lock (ADR 0017) for `herald serve` and `herald migrate`:
    /// one of them per file. `herald jobs retry`, which only queues dead letters again, runs
    /// beside a server without it.
    /// - Returns: the lock, held for the process's life unless released; nil for PostgreSQL
    ///   (shared by nodes; ADR 0016 holds each node's id) and in-memory SQLite.
    /// - Throws: `SQLiteProcessLock.Failure`: `.held` (exit `heldExitStatus`) or `.unusable` (exit 2).
    static func lock(_ settings: Settings) throws(SQLiteProcessLock.Failure) -> SQLiteProcessLock? {
        if PostgresConfiguration.isPostgresURL(settings.databasePath) { return nil }
        return try SQLiteProcessLock.acquire(databasePath: settings.databasePath)
    }

    /// The exit status of a start (or migration) refused because another process holds the
    /// SQLite database: ADR 0016's for a held node id, "this identity is held" (docs/operations.md).
    static let heldExitStatus = NodeIdentitySetup.heldExitStatus

    /// `lock(_:)` for a command's start: nil and the status to exit with (a line on standard error
    /// says why) when refused; else the lock (nil when none is needed).
    static func lockOrExitStatus(_ settings: Settings) -> (lock: SQLiteProcessLock?, refused: Int32?) {
        do {
            return (try lock(settings), nil)
        } catch {
            Console.error("herald: HERALD_DATABASE '\(displayName(settings.databasePath))': \(error)\n")
            if case .held = error { return (nil, heldExitStatus) }
            return (nil, 2)
        }
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
