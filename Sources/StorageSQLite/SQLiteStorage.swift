import Glibc
import HeraldCore

/// The `Storage` port on SQLite: units of work on `Database` (one writer connection and queue, a
/// pool of readers, the WAL checkpointer, cached statements), with the repositories of
/// `SQLiteTransaction`.
///
/// A write body runs inside `BEGIN IMMEDIATE … COMMIT` on the writer (the statements cached, as
/// before), or in a savepoint of one such transaction shared with the write bodies submitted
/// while the writer was busy (group commit, `Database.writeUnit`); a read body inside `BEGIN DEFERRED … COMMIT` on a free reader, so it sees one
/// snapshot. A `SQLiteError` never leaves: it becomes the `StorageError` of the same meaning.
///
/// # Thread safety
/// Sendable: every method may be called from any thread; the connections stay on their queues.
public final class SQLiteStorage: Storage {
    let database: Database
    /// Free bytes the database's volume must keep for the probe to pass: the WAL's bound. A full
    /// volume does not fail every write (one that only rewrites rows reuses WAL frames a checkpoint
    /// freed, as the probe's own one-row rewrite does), so the probe also asks the volume.
    let minimumFreeBytes: Int64

    /// One writer connection runs every write unit, in order (`Database.writeUnit`), and its
    /// device, session and preference statements count in it (`SQLiteConnection.pushAudience`).
    public var pushAudience: PushAudienceChange? { database.pushAudience }

    /// Counted by the writer's token rotations that move push jobs (`JobStore.movePushJobs`).
    public var pushRotations: PushJobRotation.Count { database.pushRotations }

    /// Kept by the writer's job statements (`JobStore`): every write of this process goes through it.
    public var jobClaimHorizon: JobClaimHorizon? { database.claimHorizon }

    /// The file the storage was opened at (or `":memory:"`).
    public var path: String { database.path }
    /// The migration versions `open` applied (empty when the file was up to date).
    public var appliedMigrations: [Int] { database.appliedMigrations }

    /// The WAL's default bound in bytes: 8 MiB, so that half of it (when a checkpoint is asked
    /// for) is the 1 000 pages checkpoints ran at before the bound existed. At 4 MiB they came at
    /// 512 pages, and each one syncs: the choke point lost 9-24 % (Benchmarks/RESULTS.md).
    public static let defaultWALSizeLimitBytes: Int64 = 8 << 20

    init(database: Database, minimumFreeBytes: Int64 = 0) {
        self.database = database
        self.minimumFreeBytes = minimumFreeBytes
    }

    /// Opens (creating if needed) the database at `path` and brings it to the newest schema.
    /// Blocks while it migrates: call it at start, not on an event loop.
    /// - Parameters:
    ///   - path: a file path, or `":memory:"` (private to this storage; reads share the writer).
    ///   - readers: reader connections; default 2.
    ///   - busyTimeoutMS: how long, in milliseconds, a connection waits for another's lock
    ///     before `StorageError.busy`. Default 5000.
    ///   - walSizeLimitBytes: the WAL's bound in bytes: `journal_size_limit`, and the size past
    ///     which it is checkpointed and truncated (RL-2). Default 8 MiB.
    ///   - migrating: false for a command beside a running server (`herald jobs retry`, which
    ///     holds no process lock): the schema version is checked, never changed.
    /// - Throws: `StorageError.unavailable` (or another meaning) when the file cannot be opened;
    ///   `.migration` when a migration fails or the file is newer than this build;
    ///   `.schemaMismatch` when not `migrating` and the file is not at exactly this build's version.
    public static func open(path: String, readers: Int = 2, busyTimeoutMS: Int32 = 5000,
                            walSizeLimitBytes: Int64 = defaultWALSizeLimitBytes, migrating: Bool = true) throws(StorageError) -> SQLiteStorage {
        SQLiteStorage(database: try mapped { () throws(SQLiteError) in
            try Database.open(path: path, readers: readers, busyTimeoutMS: busyTimeoutMS, walSizeLimitBytes: walSizeLimitBytes,
                              migrating: migrating)
        }, minimumFreeBytes: walSizeLimitBytes)
    }

    /// Brings the database at `path` to the newest schema and closes it (`herald migrate`).
    /// - Returns: the versions applied now, in order.
    /// - Throws: as `open`.
    @discardableResult
    public static func migrate(path: String, busyTimeoutMS: Int32 = 5000) throws(StorageError) -> [Int] {
        try mapped { () throws(SQLiteError) in try Database.migrate(path: path, busyTimeoutMS: busyTimeoutMS) }
    }

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                                   completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        // Group-committed with the units submitted meanwhile (`Database.writeUnit`).
        database.writeUnit({ connection, ended in try body(SQLiteTransaction(connection: connection, ended: ended)) }) { result in
            completion(result.mapError(StorageError.mapped))
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                                  completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        database.read({ connection in try Self.unit(.deferred, connection, body) }) { result in
            completion(result.mapError(StorageError.mapped))
        }
    }

    public func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        do {
            return try database.writeUnitSync { connection, ended in try body(SQLiteTransaction(connection: connection, ended: ended)) }
        } catch {
            throw StorageError.mapped(error)
        }
    }

    public func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        do {
            return try database.readSync { connection in try Self.unit(.deferred, connection, body) }
        } catch {
            throw StorageError.mapped(error)
        }
    }

    /// Rewrites the one row of `storage_probe` (a page in the WAL, synced as any commit), so a
    /// full volume or a read-only file fails it as it fails real writes.
    /// Fails as `.diskFull` without writing when the volume has less than `minimumFreeBytes` free.
    ///
    /// After a write unit was refused for want of space, and until one stores rows again, a
    /// one-row rewrite proves nothing (it fits in WAL frames a checkpoint freed while every
    /// insert fails, and a volume can refuse writes with more than the bound free: a quota, a
    /// write bigger than what is left): the probe then also needs `roomProbeBytes` of new pages,
    /// taken and given back in its transaction, and fails as `.diskFull` until they fit. Once
    /// they do, the refusal is forgotten.
    public func probeWrite(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        if let free = freeBytesBelowWALBound() {
            completion(.failure(StorageError.diskFull(message: "\(free) bytes free on the database's volume, below the WAL bound of \(minimumFreeBytes) (HERALD_DATABASE_WAL_LIMIT_BYTES)")))
            return
        }
        let refused = database.spaceRefusal, database = self.database, room = Self.roomProbeBytes
        database.write({ connection in
            try connection.transaction(.immediate) { connection in
                // A blob in the row's INTEGER column (SQLite keeps a blob as given): overflow
                // pages the next statement frees again, so nothing stays but free pages.
                if refused != nil {
                    // An upsert: the row may not be there yet (no probe ran before the refusal).
                    try connection.run("INSERT INTO storage_probe (id, written_at) VALUES (1, zeroblob(?)) ON CONFLICT (id) DO UPDATE SET written_at = excluded.written_at",
                                       [room])
                }
                try connection.run("INSERT INTO storage_probe (id, written_at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET written_at = excluded.written_at",
                                   [SystemClock().unixMilliseconds])
            }
        }) { result in
            switch result {
            case .success:
                if refused != nil { database.noteRoomForWrites() }
                completion(.success(()))
            case .failure(let error):
                let mapped = StorageError.mapped(error)
                if let refused, case .diskFull? = mapped as? StorageError {
                    completion(.failure(StorageError.diskFull(message: "\(room / 1024) KiB of new pages do not fit yet (a write was refused: \(refused))")))
                } else {
                    completion(.failure(mapped))
                }
            }
        }
    }

    /// The new pages the probe needs after a write was refused for want of space: 64 KiB, room
    /// for a few notifications and their jobs.
    static let roomProbeBytes: Int64 = 64 << 10

    /// The bytes free on the database's volume when they are fewer than the WAL's bound, which
    /// `probeWrite` then fails as full; nil when the volume has that much (or cannot be asked, or
    /// the database is in memory). A volume smaller than the bound never has it, so a start that
    /// finds it logs why the node will not be ready (`/readyz` `storage: full`), where a full disk
    /// would otherwise be blamed on a volume that is mostly empty.
    public func freeBytesBelowWALBound() -> Int64? {
        guard let free = Self.freeBytes(onVolumeOf: database.path), free < minimumFreeBytes else { return nil }
        return free
    }

    /// The WAL's bound this storage was opened with (`HERALD_DATABASE_WAL_LIMIT_BYTES`), in bytes:
    /// the free space `probeWrite` asks of the volume.
    public var walBoundBytes: Int64 { minimumFreeBytes }

    /// Bytes an unprivileged writer may still use on the volume holding `path` (`statvfs`), nil in
    /// memory or when the volume cannot be asked.
    static func freeBytes(onVolumeOf path: String) -> Int64? {
        guard !SQLiteConnection.isInMemory(path) else { return nil }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var volume = statvfs()
        guard statvfs(directory, &volume) == 0 else { return nil }
        return Int64(volume.f_bavail) * Int64(volume.f_frsize)
    }

    /// Waits for submitted work, then closes every connection (the writer last, checkpointing the
    /// WAL into the main file). Later work fails with `StorageError.closed`.
    /// - Important: Must not be called from a `read` or `write` body.
    public func close() {
        database.close()
    }

    /// One unit of work: `body` in one transaction on `connection`; then the actions the body
    /// kept with `whenEnded`, told whether it committed.
    private static func unit<T>(_ mode: TransactionMode, _ connection: SQLiteConnection,
                                _ body: (any StorageTransaction) throws -> T) throws -> T {
        // A unit nested in an open transaction only ends a savepoint: its end is not a commit.
        let ended = connection.isInTransaction ? nil : UnitEndActions()
        let result: T
        do {
            result = try connection.transaction(mode) { connection in try body(SQLiteTransaction(connection: connection, ended: ended)) }
        } catch {
            ended?.run(committed: false)
            throw error
        }
        ended?.run(committed: true)
        return result
    }
}

/// A unit of work on one connection inside its transaction: each repository is a thin value over
/// the connection and the static stores' SQL.
struct SQLiteTransaction: StorageTransaction {
    let connection: SQLiteConnection
    /// The unit's end actions; nil inside another transaction (no commit of its own to report).
    var ended: UnitEndActions? = nil

    func whenEnded(_ action: @escaping (_ committed: Bool) -> Void) -> Bool {
        guard let ended else { return false }
        ended.append(action)
        return true
    }

    var notifications: any NotificationRepository { SQLiteNotificationRepository(connection: connection) }
    var plans: any PlanRepository { SQLitePlanRepository(connection: connection) }
    var deliveries: any DeliveryRepository { SQLiteDeliveryRepository(connection: connection) }
    var devices: any DeviceRepository { SQLiteDeviceRepository(connection: connection) }
    var sessions: any SessionRepository { SQLiteSessionRepository(connection: connection) }
    var preferences: any PreferenceRepository { SQLitePreferenceRepository(connection: connection) }
    var members: any MemberRepository { SQLiteMemberRepository(connection: connection) }
    var idempotency: any IdempotencyRepository { SQLiteIdempotencyRepository(connection: connection) }
    var jobs: any JobQueue { SQLiteJobQueue(connection: connection) }
    var users: any UserRepository { SQLiteUserRepository(connection: connection) }
    var apps: any AppRepository { SQLiteAppRepository(connection: connection) }
}
