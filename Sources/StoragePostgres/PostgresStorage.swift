import Dispatch
import Foundation
import HeraldCore
import Synchronization

/// The `Storage` port on PostgreSQL (SC-1): every repository and the job queue in one database
/// that several Herald nodes share.
///
/// - A write body runs as one transaction (`BEGIN … COMMIT`, `ROLLBACK` when it throws) on this
///   node's writer connection, one at a time in submission order. A serialization failure or a
///   deadlock re-runs the body, up to `PostgresConfiguration.conflictAttempts` times in all.
/// - A read body runs in one `REPEATABLE READ READ ONLY` transaction (one snapshot) on one of a
///   few reader connections, concurrently with writes; a write in it fails with `.readOnly`.
/// - Each connection belongs to one serial queue, is made on first use, and is made again after
///   it breaks; failed connects back off (100 ms doubling to 2 s), and while they do, units of
///   work fail at once with `StorageError.unavailable` (routes answer 503). A broken connection
///   found at `BEGIN` is replaced and the unit run on the new one, so the first call after a
///   PostgreSQL restart succeeds when the server is back. A unit whose connection broke after
///   `BEGIN` fails with `.unavailable`: it may or may not have committed.
/// - A statement with no answer after `PostgresConfiguration.clientDeadlineMilliseconds` (a
///   server stopped or frozen never fires its own `statement_timeout`) closes its connection and
///   fails its unit with `.unavailable`; the next unit on that queue connects again.
/// - A failed statement aborts the whole transaction (SQLite undoes only the statement): a body
///   that catches a repository error and goes on gets `StorageError.failed` at its end, and
///   nothing of it is kept.
/// - No `PostgresError` or libpq type leaves: failures are `StorageError`s.
///
/// # Thread safety
/// Sendable: every method may be called from any thread; connections stay on their queues.
public final class PostgresStorage: Storage {
    /// Where it connects, and its bounds.
    public let configuration: PostgresConfiguration
    /// The name this node leases jobs under (`jobs.locked_by`).
    public let nodeID: String
    /// The migration versions `open` applied (empty when the database was up to date).
    public let appliedMigrations: [Int]

    private let connector: Connector
    private let writer: ConnectionWorker
    private let readers: [ConnectionWorker]
    private let nextReader = Atomic<Int>(0)
    private let listener: Mutex<JobListener?> = Mutex(nil)
    private let planHolder: Mutex<SessionLock?> = Mutex(nil)
    private let holderWatch: Mutex<HolderWatch?> = Mutex(nil)
    /// Why the last write unit refused for want of space failed (SQLSTATE 53100 `disk_full`,
    /// `.diskFull`), until a probe finds room again (`probeWrite`); nil otherwise. The probe's
    /// one-row rewrite can pass on a full volume (an update that fits in its page, WAL segments
    /// already allocated) while every insert that must extend a table fails: `/readyz` says `full`
    /// meanwhile, as SQLite's latch does (RL-2).
    private let refusedForSpace = Mutex<String?>(nil)

    /// Counted by this process's token rotations that move push jobs, inside their transaction.
    /// Another node's rotation is not counted here (ADR 0014's consequences say what that leaves).
    public let pushRotations = PushJobRotation.Count()

    private init(configuration: PostgresConfiguration, nodeID: String, connector: Connector, appliedMigrations: [Int]) {
        self.configuration = configuration
        self.nodeID = nodeID
        self.connector = connector
        self.appliedMigrations = appliedMigrations
        writer = ConnectionWorker(label: "herald.postgres.writer", connector: connector)
        readers = (0..<max(1, configuration.readers)).map { ConnectionWorker(label: "herald.postgres.reader\($0)", connector: connector) }
    }

    /// Connects to `configuration.url` and brings the database to the newest schema (several
    /// nodes may do so at once). Blocks: call it at start, not on an event loop.
    /// - Parameters:
    ///   - nodeID: the name jobs are leased under; unique per process by default.
    ///   - migrating: false for a command beside running nodes (`herald jobs retry`): the schema
    ///     is checked, never changed.
    /// - Throws: `StorageError.unavailable` when PostgreSQL cannot be reached; `.migration` when
    ///   a migration fails or the database is newer than this build; `.schemaMismatch` when not
    ///   `migrating` and the applied versions are not exactly this build's.
    public static func open(_ configuration: PostgresConfiguration, nodeID: String? = nil, migrating: Bool = true) throws(StorageError) -> PostgresStorage {
        let connector = Connector(configuration: configuration)
        let applied = try mapped {
            let connection = try connector.connect()
            defer { connection.close() }
            guard migrating else {
                try PostgresMigrator.requireCurrent(connection)
                return [Int]()
            }
            return try PostgresMigrator.migrate(connection)
        }
        return PostgresStorage(configuration: configuration, nodeID: nodeID ?? Self.newNodeID(), connector: connector,
                               appliedMigrations: applied)
    }

    /// Brings the database to the newest schema and disconnects (`herald migrate`).
    /// - Returns: the versions applied now, in order. - Throws: as `open`.
    @discardableResult
    public static func migrate(_ configuration: PostgresConfiguration) throws(StorageError) -> [Int] {
        try mapped {
            let connection = try Connector(configuration: configuration).connect()
            defer { connection.close() }
            return try PostgresMigrator.migrate(connection)
        }
    }

    /// A name unique to this process: host, pid and a random part.
    static func newNodeID() -> String {
        let host = ProcessInfo.processInfo.hostName
        return "\(host)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    // MARK: Storage

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                                   completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let attempts = configuration.conflictAttempts, node = nodeID, rotations = pushRotations
        writer.submit({ [self] slot in
            let result = Result { try Self.unit(slot, readOnly: false, node: node, rotations: rotations, attempts: attempts, body) }.mapError(StorageError.mapped)
            if case .failure(let error) = result, case .diskFull? = error as? StorageError {
                refusedForSpace.withLock { $0 = "\(error)" }
            }
            completion(result)
        }, rejected: { completion(.failure(StorageError.closed)) })
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                                  completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let node = nodeID, rotations = pushRotations
        let reader = readers[nextReader.add(1, ordering: .relaxed).oldValue % readers.count]
        reader.submit({ slot in
            completion(Result { try Self.unit(slot, readOnly: true, node: node, rotations: rotations, attempts: 1, body) }.mapError(StorageError.mapped))
        }, rejected: { completion(.failure(StorageError.closed)) })
    }

    public func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        try waitForCompletion { self.write(body, completion: $0) }
    }

    public func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        try waitForCompletion { self.read(body, completion: $0) }
    }

    /// Rewrites the one row of `storage_probe` in a write unit: fails as real writes fail (the
    /// server down, a read-only standby, a full disk).
    ///
    /// After a write unit was refused for want of space (`spaceRefusal`), the rewrite proves
    /// nothing: the probe then also creates a table of its own and stores `roomProbeBytes` of
    /// random bytes in it (new files, extended as an insert's table is), and rolls it all back.
    /// It fails as `.diskFull` until they fit; once they do, the refusal is forgotten.
    public func probeWrite(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let now = SystemClock().unixMilliseconds
        guard let refused = spaceRefusal else {
            return write({ tx in
                guard let tx = tx as? PostgresTransaction else { return }
                try mapped {
                    try tx.connection.run("""
                        INSERT INTO storage_probe (id, written_at) VALUES (1, $1::bigint)
                        ON CONFLICT (id) DO UPDATE SET written_at = excluded.written_at
                        """, [now])
                }
            }, completion: completion)
        }
        // Another node's probe may create its table at the same time: a name of this probe's own.
        let table = "storage_probe_room_\(String(UInt64.random(in: 1...UInt64.max), radix: 16))"
        let rows = Self.roomProbeBytes / 16
        write({ tx in
            guard let tx = tx as? PostgresTransaction else { return }
            try mapped {
                try tx.connection.run("CREATE TABLE \(table) (b bytea)")
                // md5 of random(): 16 bytes no compression shrinks, so TOAST stores them all.
                try tx.connection.run("INSERT INTO \(table) SELECT decode(string_agg(md5(random()::text), ''), 'hex') FROM generate_series(1, $1::integer)",
                                      [rows])
            }
            throw RoomFound()   // rolled back: the table and its pages go again
        }) { [self] result in
            switch result {
            case .failure(let error) where error is RoomFound:
                refusedForSpace.withLock { $0 = nil }
                completion(.success(()))
            case .failure(let error):
                if case .diskFull? = error as? StorageError {
                    completion(.failure(StorageError.diskFull(message: "\(Self.roomProbeBytes / 1024) KiB of new pages do not fit yet (a write was refused: \(refused))")))
                } else {
                    completion(.failure(error))
                }
            case .success:
                completion(.success(()))
            }
        }
    }

    /// Why the last write unit refused for want of space failed, until `probeWrite` finds room
    /// again; nil when writes are not known to be refused.
    public var spaceRefusal: String? { refusedForSpace.withLock { $0 } }

    /// The new pages the probe needs after a write was refused for want of space: 64 KiB, as
    /// SQLite's (`SQLiteStorage.roomProbeBytes`).
    static let roomProbeBytes = 64 << 10

    /// Ends the room probe's unit in a rollback once its pages were written.
    private struct RoomFound: Error {}

    /// Waits for submitted work, then closes every connection and stops the listener. Later
    /// work fails with `StorageError.closed`. Not from a `read` or `write` body.
    public func close() {
        listener.withLock { $0 }?.stop()
        // Taken out, so a second close waits for nothing; closing its connection drops the lock.
        holderWatch.withLock { watch in
            defer { watch = nil }
            return watch
        }?.stop()
        planHolder.withLock { holder in
            defer { holder = nil }
            return holder
        }?.stop()
        writer.close()
        for reader in readers { reader.close() }
    }

    // MARK: Plan holders

    /// The name this process holds notification plans under (`PendingPlan.claimedBy`, ADR 0023):
    /// `live:<host>:<pid>:<random>`, whose session-level advisory lock a connection of its own
    /// holds from now until `close` (or the process's end, however it ends), and takes again
    /// after it breaks. Other nodes take a plan held under it at once when no session holds that
    /// lock, instead of waiting out its lease. Blocks until the lock is held; calling it again
    /// returns the same name.
    /// - Throws: `StorageError.unavailable` when PostgreSQL cannot be reached; `.busy` when the
    ///   name's key stays locked by another session (a hash collision: never in practice).
    public func holdPlans() throws(StorageError) -> String {
        try planHolder.withLock { holder throws(StorageError) -> String in
            if let holder { return holder.name }
            let name = PostgresPlanRepository.livePrefix
                + "\(ProcessInfo.processInfo.hostName):\(getpid()):\(String(UInt64.random(in: 1...UInt64.max), radix: 16))"
            let started = try mapped { try SessionLock.start(name: name, connector: connector) }
            holder = started
            return started.name
        }
    }

    /// Calls `onGone` as soon as the plan holder after this process's in the ring of live holders
    /// dies (ADR 0027: a shared wait on its session lock, on a connection of its own), so the
    /// caller recovers its plans now instead of at its next pass. Starts `holdPlans()` first if it
    /// has not run. Calling it again starts nothing.
    /// - Parameter onGone: runs on the watcher's thread; keep it short (`Notifier.recover`).
    /// - Throws: `holdPlans()`'s errors.
    public func watchPlanHolders(_ onGone: @escaping @Sendable () -> Void) throws(StorageError) {
        let name = try holdPlans()
        guard let started = holderWatch.withLock({ watch -> HolderWatch? in
            guard watch == nil else { return nil }
            watch = HolderWatch.start(name: name, connector: connector, onGone: onGone)
            return watch
        }) else { return }
        planHolder.withLock { $0 }?.whenHoldersChange { started.holdersChanged() }
    }

    /// Whether `holdPlans()`'s lock is held now (tests: false while its connection is made again).
    var holdsPlanLock: Bool { planHolder.withLock { $0?.isLocked ?? false } }

    // MARK: Job wake-ups

    /// Starts a thread that `LISTEN`s on the job channel and calls `handler` when another
    /// transaction (this node's or another's) enqueued jobs or revived dead ones, and once after
    /// each reconnect (a notification sent while disconnected is lost). Poll as well: this is a
    /// shortcut, not a guarantee. Calling it again replaces nothing and returns at once.
    /// - Parameter handler: runs on the listener's thread; keep it short (`DeliveryWorker.wake`).
    public func listenForJobs(_ handler: @escaping @Sendable () -> Void) {
        listener.withLock { listener in
            guard listener == nil else { return }
            let started = JobListener(connector: connector, channel: PostgresJobQueue.channel, handler: handler)
            started.start()
            listener = started
        }
    }

    // MARK: Internals


    /// One unit of work on the slot's connection, in its transaction.
    private static func unit<T>(_ slot: ConnectionSlot, readOnly: Bool, node: String, rotations: PushJobRotation.Count, attempts: Int,
                                _ body: (any StorageTransaction) throws -> T) throws -> T {
        let begin = readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN"
        var attempt = 0
        var replacedBrokenConnection = false
        while true {
            attempt += 1
            let connection = try slot.connection()
            do {
                try connection.execute(begin)
            } catch PostgresError.connectionLost(let message) {
                // The server closed an idle connection (a restart): nothing ran, so a new
                // connection may run the unit. Once: a second loss means the server is down.
                slot.drop()
                if replacedBrokenConnection { throw PostgresError.connectionLost(message: message) }
                replacedBrokenConnection = true
                attempt -= 1
                continue
            }
            // Each attempt keeps its own end actions: a conflict's re-run keeps them again.
            let ended = UnitEndActions()
            do {
                let value = try body(PostgresTransaction(connection: connection, readOnly: readOnly, node: node, ended: ended,
                                                         rotations: rotations))
                let tag = try connection.execute("COMMIT")
                // A statement the body caught failed the transaction, and COMMIT rolled it back.
                if tag == "ROLLBACK" {
                    throw PostgresError.server(sqlState: "25P02", message: "the transaction failed inside its body and was rolled back", constraint: nil)
                }
                ended.run(committed: true)
                return value
            } catch {
                // Told "not committed" also when the connection broke at COMMIT (the unit may
                // have committed): what waits for a commit (a job leased at insert) is then not
                // done here, and a job that did commit comes back through a claim once its lease
                // passes, never twice.
                defer { ended.run(committed: false) }
                if connection.isBroken {
                    slot.drop()
                    if let error = error as? PostgresError, case .connectionLost = error { throw error }
                    if let error = error as? PostgresError, case .timedOut = error { throw error }
                    if let error = error as? StorageError, case .unavailable = error { throw error }
                    throw PostgresError.connectionLost(message: "\(error)")
                }
                // Read before the ROLLBACK, which is a statement of its own.
                let retryable = connection.lastErrorWasRetryableConflict
                _ = try? connection.execute("ROLLBACK")
                if attempt < attempts, retryable { continue }
                throw error
            }
        }
    }
}

/// A unit of work on one connection inside its transaction.
struct PostgresTransaction: StorageTransaction {
    let connection: PostgresConnection
    let readOnly: Bool
    let node: String
    /// The unit's end actions (ADR 0007): run with true after COMMIT, false after ROLLBACK.
    let ended: UnitEndActions
    /// The storage's count of token rotations that moved push jobs (`Storage.pushRotations`).
    let rotations: PushJobRotation.Count

    func whenEnded(_ action: @escaping (_ committed: Bool) -> Void) -> Bool {
        ended.append(action)
        return true
    }

    var notifications: any NotificationRepository { PostgresNotificationRepository(connection: connection) }
    var plans: any PlanRepository { PostgresPlanRepository(connection: connection) }
    var deliveries: any DeliveryRepository { PostgresDeliveryRepository(connection: connection) }
    var devices: any DeviceRepository { PostgresDeviceRepository(connection: connection, rotations: rotations) }
    var sessions: any SessionRepository { PostgresSessionRepository(connection: connection) }
    var preferences: any PreferenceRepository { PostgresPreferenceRepository(connection: connection) }
    var members: any MemberRepository { PostgresMemberRepository(connection: connection) }
    var idempotency: any IdempotencyRepository { PostgresIdempotencyRepository(connection: connection, readOnly: readOnly) }
    var jobs: any JobQueue { PostgresJobQueue(connection: connection, node: node, rotations: rotations) }
    var users: any UserRepository { PostgresUserRepository(connection: connection) }
    var apps: any AppRepository { PostgresAppRepository(connection: connection) }
}
