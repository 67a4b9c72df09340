import HeraldCore
import Dispatch
import Synchronization

/// Herald's SQLite database: one writer connection and a few reader connections, each on its own
/// serial queue, so no SQLite call ever runs on an event loop or in Swift's cooperative pool.
///
/// ```swift
/// let db = try Database.open(path: "herald.db")                // migrates to HeraldSchema
/// let id = try await db.write { conn in
///     try conn.transaction { conn in
///         try conn.run("INSERT INTO jobs (kind, payload_json, state, run_at, created_at) VALUES (?, ?, 'queued', ?, ?)",
///                      ["push.deliver", json, now, now])
///         return conn.lastInsertRowID
///     }
/// }
/// db.read({ conn in try conn.query("SELECT * FROM devices WHERE user_id = ?", [user]) }) { result in
///     loop.execute { respond(result) }                          // hop back to the event loop
/// }
/// ```
///
/// - Writes run one at a time, in submission order, on the writer queue. A body is not a
///   transaction by itself: wrap several statements in `conn.transaction { … }` (one commit, one
///   fsync, all or nothing). A body that returns with a transaction open is rolled back and fails
///   with `.misuse`.
/// - Reads run on read-only connections, in WAL mode concurrently with the writer and each other;
///   each statement sees the data committed when it started (use `conn.transaction` in a read for
///   one snapshot across several statements). A body that tries to write fails with `SQLITE_READONLY`.
///   With `readers: 0` (forced for `":memory:"`, which cannot be shared) reads run on the writer.
/// - The WAL is checkpointed by a connection and queue of its own (`Checkpointer`), not inside
///   the writer's commits.
/// - Completion handlers run on the storage queue that did the work, except a unit's
///   (`writeUnit`): its end actions and completion run on the writer's completion queue, in the
///   order the units ran, so the writer starts the next group while they run. Keep them short
///   and hand results to their event loop.
/// - Work is not cancellable once submitted; cancelling the awaiting task does not stop it.
///
/// Internal to the adapter: callers reach it through `SQLiteStorage`, the `Storage` port, whose
/// units of work run here (a write body inside `BEGIN IMMEDIATE … COMMIT` on the writer).
///
/// # Thread safety
/// Sendable: every method may be called from any thread. The connections are confined to their
/// queues by `ConnectionWorker`.
final class Database: Sendable {
    /// The path the database was opened at.
    let path: String
    /// Number of reader connections (0: reads share the writer).
    let readerCount: Int
    /// The migration versions `open` applied (empty when the file was up to date).
    let appliedMigrations: [Int]

    private let writer: ConnectionWorker
    /// Kept by the writer's job statements (`SQLiteConnection.claimHorizon`): this process's one
    /// writer sees every write but another process's (issue 17).
    let claimHorizon: JobClaimHorizon
    /// Counted by the writer's statements that may take a device out of pushes
    /// (`SQLiteConnection.pushAudience`): this storage's, not the process's, so another storage's
    /// writes never move it.
    let pushAudience: PushAudienceChange
    /// Counted by the writer's token rotations that move push jobs (`SQLiteConnection.pushRotations`),
    /// this storage's for the same reason.
    let pushRotations: PushJobRotation.Count
    /// Where the units' end actions and completions run after their group's transaction ended,
    /// in the order the units ran (issue 17: they were ~12k instructions a notification of the
    /// writer's serial time, the choke point's one serial resource).
    private let unitEnds = DispatchQueue(label: "herald.storage.writer.ends")
    private let readers: ReaderPool?
    /// Checkpoints the WAL off the writer's queue; nil in memory (no WAL).
    private let checkpointer: Checkpointer?
    /// Units of work (`writeUnit`) submitted and not started yet: whoever submits one while it is
    /// open joins it, and its block runs them all in one transaction (group commit). nil when
    /// none waits, or when a plain `write` was submitted after it (it keeps its place in line).
    private let openGroup = Mutex<WriteGroup?>(nil)
    /// Units that committed in a group of more than one, since open (tests).
    private let groupedUnitCount = Atomic<Int>(0)
    /// Why the last write unit that met a full volume failed, until a later unit stores rows or
    /// `SQLiteStorage.probeWrite` finds room again; nil otherwise. A volume refuses the writes
    /// that need new space while a one-row rewrite (the probe's) still fits in WAL frames a
    /// checkpoint freed, and while its free bytes may still pass the probe's bound (a quota, a
    /// `max_page_count`, a write bigger than what is left): `/readyz` reads this (RL-2).
    private let refusedForSpace = Mutex<String?>(nil)
    /// Whether `refusedForSpace` may be set: a group that stored rows skips its lock otherwise.
    private let spaceRefused = Atomic<Bool>(false)

    private init(path: String, writer: ConnectionWorker, claimHorizon: JobClaimHorizon, pushAudience: PushAudienceChange,
                 pushRotations: PushJobRotation.Count, readers: ReaderPool?, checkpointer: Checkpointer?, appliedMigrations: [Int]) {
        self.path = path
        self.writer = writer
        self.claimHorizon = claimHorizon
        self.pushAudience = pushAudience
        self.pushRotations = pushRotations
        self.readers = readers
        self.checkpointer = checkpointer
        self.readerCount = readers?.workers.count ?? 0
        self.appliedMigrations = appliedMigrations
    }

    /// Opens (creating if needed) the database at `path`, brings it to the newest schema, and
    /// opens the readers. Blocks while it migrates: call it at start, not on an event loop.
    /// - Parameters:
    ///   - path: a file path, or `":memory:"` (private to this `Database`; readers forced to 0).
    ///   - readers: reader connections; default 2. 0 runs reads on the writer.
    ///   - busyTimeoutMS: per-connection wait, in milliseconds, for another connection's lock
    ///     (another process on the same file, a checkpoint) before `.busy`. Default 5000.
    ///   - migrations: the schema; default `HeraldSchema.migrations`.
    ///   - walSizeLimitBytes: the WAL's bound in bytes (`journal_size_limit`, and the size past
    ///     which the checkpointer truncates it; see `Checkpointer`).
    ///   - migrating: false: check that the file is at exactly `migrations`' newest version
    ///     (`Migrator.requireCurrent`), change nothing.
    /// - Throws: `SQLiteError.open` when a connection cannot open or WAL cannot be enabled;
    ///   `SQLiteError.migration` when a migration fails or the file is newer than `migrations`;
    ///   `.schemaMismatch` when not `migrating` and the version is another.
    static func open(path: String, readers: Int = 2, busyTimeoutMS: Int32 = 5000,
                     migrations: [Migration] = HeraldSchema.migrations,
                     walSizeLimitBytes: Int64 = SQLiteConnection.defaultWALSizeLimitBytes,
                     migrating: Bool = true) throws(SQLiteError) -> Database {
        precondition(readers >= 0, "reader count must not be negative")
        let writerConnection = try SQLiteConnection(path: path, mode: .readWrite, busyTimeoutMS: busyTimeoutMS,
                                                    walSizeLimitBytes: walSizeLimitBytes)
        var applied: [Int] = []
        if migrating {
            applied = try Migrator.migrate(writerConnection, migrations: migrations)
        } else {
            try Migrator.requireCurrent(writerConnection, migrations: migrations)
        }
        // Readers open after the writer has switched the file to WAL (a persistent setting), which a
        // read-only connection could not do itself.
        let readerCount = SQLiteConnection.isInMemory(path) ? 0 : readers
        var workers: [ConnectionWorker] = []
        for index in 0..<readerCount {
            let connection = try SQLiteConnection(path: path, mode: .readOnly, busyTimeoutMS: busyTimeoutMS)
            workers.append(ConnectionWorker(label: "herald.storage.reader.\(index)", connection: connection))
        }
        var checkpointer: Checkpointer?
        if !SQLiteConnection.isInMemory(path) {
            let connection = try SQLiteConnection(path: path, mode: .readWrite, busyTimeoutMS: busyTimeoutMS, walSizeLimitBytes: walSizeLimitBytes)
            checkpointer = Checkpointer(connection: connection, walSizeLimitBytes: walSizeLimitBytes,
                                        pageSize: try writerConnection.pageSize(), busyTimeoutMilliseconds: busyTimeoutMS)
            checkpointer?.attach(to: writerConnection)
        }
        // Set after the migrations: a job they change is due by the first claim, the bound being unknown until then.
        let claimHorizon = JobClaimHorizon(kind: DeliveryJobPayload.kind)
        writerConnection.claimHorizon = claimHorizon
        let pushAudience = PushAudienceChange()
        writerConnection.pushAudience = pushAudience
        let pushRotations = PushJobRotation.Count()
        writerConnection.pushRotations = pushRotations
        return Database(path: path,
                        writer: ConnectionWorker(label: "herald.storage.writer", connection: writerConnection),
                        claimHorizon: claimHorizon, pushAudience: pushAudience, pushRotations: pushRotations,
                        readers: workers.isEmpty ? nil : ReaderPool(workers: workers),
                        checkpointer: checkpointer,
                        appliedMigrations: applied)
    }

    /// Brings the database at `path` to the newest schema and closes it: `herald migrate`.
    /// - Returns: the versions applied now, in order.
    /// - Throws: as `open`.
    @discardableResult
    static func migrate(path: String, busyTimeoutMS: Int32 = 5000,
                               migrations: [Migration] = HeraldSchema.migrations) throws(SQLiteError) -> [Int] {
        let connection = try SQLiteConnection(path: path, mode: .readWrite, busyTimeoutMS: busyTimeoutMS)
        return try Migrator.migrate(connection, migrations: migrations)
    }

    // MARK: Completion handlers

    /// Runs `body` on the writer connection after the writes already submitted. Never blocks.
    /// - Parameters:
    ///   - body: the work; its connection must not escape it.
    ///   - completion: called once on the writer queue with `body`'s result or error
    ///     (`SQLiteError.closed` after `close()`).
    ///
    /// A write that fails for want of space asks for a truncating checkpoint (`Checkpointer`), so
    /// the WAL gives its space back as soon as the database file can take its frames.
    func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T,
                                   completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let writer = self.writer, checkpointer = self.checkpointer
        // Units submitted after this body must not run before it.
        openGroup.withLock { $0 = nil }
        writer.queue.async {
            let result = writer.run(body)
            if case .failure(let error) = result, Self.isDiskFull(error) { checkpointer?.requestTruncate() }
            completion(result)
        }
    }

    /// Runs `body` as one unit of work on the writer, after the writes already submitted: in a
    /// transaction of its own (`BEGIN IMMEDIATE … COMMIT`), or, when other units were submitted
    /// while the writer was busy, in one transaction with them, each in a savepoint (group commit,
    /// issue 17: the pages the units share are written to the WAL once, with one commit's locks
    /// and WAL-index update for all). Never blocks.
    ///
    /// A unit that throws is rolled back to its savepoint and fails alone; the others commit.
    /// When SQLite itself ends the transaction on an error (a full disk, an I/O error), the units
    /// before it in the group fail with that error too, and the units after it run in a new
    /// transaction. A failed COMMIT fails every unit of the group.
    /// - Parameters:
    ///   - body: the unit's statements, given the connection and the unit's end actions
    ///     (`StorageTransaction.whenEnded`); it must not open or end a transaction itself
    ///     other than through `transaction` (which nests as a savepoint).
    ///   - completion: called once, after the unit's transaction ended and its end actions ran
    ///     (told whether it committed), with `body`'s result or error: on the writer's completion
    ///     queue, after the units that ran before it ended, and maybe while the writer already
    ///     runs later units (their bodies must not count on this one's completion having run).
    func writeUnit<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection, UnitEndActions) throws -> T,
                                completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let unit = GroupedWrite(body: body, completion: completion)
        let group = openGroup.withLock { open -> WriteGroup? in
            if let open {
                open.units.append(unit)
                return nil
            }
            let group = WriteGroup(unit)
            open = group
            return group
        }
        guard let group else { return }
        let writer = self.writer, checkpointer = self.checkpointer, unitEnds = self.unitEnds
        writer.queue.async { [self] in
            let units = openGroup.withLock { open -> [any GroupUnit] in
                if open === group { open = nil }
                return group.units
            }
            var ended: [(unit: any GroupUnit, error: (any Error)?)] = []
            ended.reserveCapacity(units.count)
            var changedRows = false
            // Counted before the units finish, so a caller told its unit committed sees the count.
            let ran = writer.run { connection in
                let changes = connection.totalChanges
                Self.runGroup(units[...], on: connection,
                              committedTogether: { [self] in groupedUnitCount.add($0, ordering: .relaxed) },
                              ended: { ended.append(($0, $1)) })
                changedRows = connection.totalChanges != changes
            }
            if case .failure(let error) = ran {
                // The connection is closed: nothing ran.
                ended = units.map { ($0, error) }
            }
            // The transaction is over (committed or rolled back): the writer is free for the next
            // group while these end, in order, on their own queue.
            let ends = ended, stored = changedRows
            unitEnds.async { [self] in
                // Before any unit ends, so a caller told `diskFull` finds the truncating checkpoint
                // already requested and `/readyz` saying so (asked here, not on the writer: ~2k
                // instructions a notification of generic `Result` reads, issue 17).
                noteSpace(ends, storedRows: stored)
                for (unit, error) in ends { unit.finish(failing: error) }
            }
        }
    }

    /// Why writes are refused for want of space (`refusedForSpace`), nil when they are not known to be.
    var spaceRefusal: String? { refusedForSpace.withLock { $0 } }

    /// Forgets the refusal: a write that needed new space committed since.
    func noteRoomForWrites() {
        refusedForSpace.withLock { refusal in
            refusal = nil
            spaceRefused.store(false, ordering: .relaxed)
        }
    }

    /// Keeps why a group's unit failed for want of space; forgets it when a unit of the group
    /// committed rows (`storedRows`: the connection's changes moved; a group that changed nothing
    /// commits without writing a page, as the worker's empty claims do, and proves nothing).
    private func noteSpace(_ ends: [(unit: any GroupUnit, error: (any Error)?)], storedRows: Bool) {
        var refusal: (any Error)?
        var committed = false
        for (unit, error) in ends {
            guard let failure = error ?? unit.failure else {
                committed = true
                continue
            }
            if refusal == nil, Self.isDiskFull(failure) { refusal = failure }
        }
        if let refusal {
            checkpointer?.requestTruncate()
            let reason = "\(StorageError.mapped(refusal))"
            refusedForSpace.withLock { kept in
                kept = reason
                spaceRefused.store(true, ordering: .relaxed)
            }
        } else if storedRows, committed, spaceRefused.load(ordering: .relaxed) {
            noteRoomForWrites()
        }
    }

    /// `writeUnit` for start-up, the CLI and tests: blocks until the unit ran.
    /// - Important: Never on an event loop or in a Task; never inside a write body or a unit's
    ///   completion.
    func writeUnitSync<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection, UnitEndActions) throws -> T) throws -> T {
        dispatchPrecondition(condition: .notOnQueue(writer.queue))
        // Its completion runs there: it would wait for itself.
        dispatchPrecondition(condition: .notOnQueue(unitEnds))
        return try waitForCompletion { writeUnit(body, completion: $0) }
    }

    /// Units that committed together with others since open.
    var groupedUnits: Int { groupedUnitCount.load(ordering: .relaxed) }

    /// Runs `units` on the writer: one alone in its own transaction, several in one transaction
    /// with a savepoint each (see `writeUnit`), then gives each to `ended` in order, with the
    /// error that replaces its success (nil: its own result stands), to be finished once the
    /// transaction is over; `committedTogether` is told how many units committed in one
    /// transaction, before they end.
    private static func runGroup(_ units: ArraySlice<any GroupUnit>, on connection: SQLiteConnection,
                                 committedTogether: (Int) -> Void, ended: (any GroupUnit, (any Error)?) -> Void) {
        guard units.count > 1 else {
            for unit in units {
                unit.run(connection, alone: true)
                ended(unit, nil)
            }
            return
        }
        var ran = 0
        do {
            try connection.transaction(.immediate) { connection in
                for unit in units {
                    ran += 1
                    // SQLite ended the whole transaction on this unit's error: the group stops here.
                    if let error = unit.run(connection, alone: false), !connection.isInTransaction { throw error }
                }
            }
        } catch {
            // BEGIN or COMMIT failed, or SQLite ended the transaction: nothing before committed.
            let failed = ran == 0 ? units.count : ran
            for unit in units.prefix(failed) { ended(unit, error) }
            if failed < units.count {
                runGroup(units.dropFirst(failed), on: connection, committedTogether: committedTogether, ended: ended)
            }
            return
        }
        committedTogether(units.count)
        for unit in units { ended(unit, nil) }
    }

    /// Runs `body` on a free reader connection (the writer when there are none). Never blocks.
    /// - Parameters:
    ///   - body: read-only work; writing fails with `SQLITE_READONLY` (as `SQLiteError.step`).
    ///   - completion: called once on the reader's queue with `body`'s result or error.
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T,
                                  completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        guard let readers else { return write(body, completion: completion) }
        readers.submit { worker in completion(worker.run(body)) }
    }

    /// Whether a write failed for want of space: SQLite's error, or the port's a repository
    /// mapped it to inside the body.
    fileprivate static func isDiskFull(_ error: any Error) -> Bool {
        if let error = error as? SQLiteError { return error.isDiskFull }
        if case .diskFull? = error as? StorageError { return true }
        return false
    }

    // MARK: async

    /// `write(_:completion:)` for async callers: suspends (no thread blocked) until `body` ran.
    /// - Throws: `body`'s error, or `SQLiteError.closed`.
    func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            write(body) { continuation.resume(with: $0) }
        }
    }

    /// `read(_:completion:)` for async callers: suspends (no thread blocked) until `body` ran.
    /// - Throws: `body`'s error, or `SQLiteError.closed`.
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            read(body) { continuation.resume(with: $0) }
        }
    }

    // MARK: Blocking (start-up, CLI, tests)

    /// Blocks the calling thread until `body` ran on the writer.
    /// - Important: For start-up, the CLI and tests only; never on an event loop or in a Task.
    ///   Must not be called from inside a `write` body (it would wait for itself).
    func writeSync<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) throws -> T {
        dispatchPrecondition(condition: .notOnQueue(writer.queue))
        return try waitForCompletion { write(body, completion: $0) }
    }

    /// Blocks the calling thread until `body` ran on a reader.
    /// - Important: For start-up, the CLI and tests only; never on an event loop or in a Task.
    ///   Must not be called from inside a `read` body. May be called inside a `write` body.
    func readSync<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) throws -> T {
        for worker in readers?.workers ?? [writer] {
            dispatchPrecondition(condition: .notOnQueue(worker.queue))
        }
        return try waitForCompletion { read(body, completion: $0) }
    }


    // MARK: Lifecycle

    /// Waits for submitted work, then closes every connection: readers and the checkpointer
    /// first, so the writer is the last connection and checkpoints the WAL into the main file.
    /// Later work fails with `SQLiteError.closed`. Dropping the last reference without `close()`
    /// also closes the connections, without waiting.
    /// - Important: Must not be called from a `read` or `write` body.
    func close() {
        for worker in readers?.workers ?? [] { worker.close() }
        checkpointer?.close()
        writer.close()
        // The units the writer ran have ended before `close` returns, as when they ended on it.
        unitEnds.sync {}
    }

    /// WAL checkpoints run off the writer since the database opened (0 in memory).
    var checkpointCount: Int { checkpointer?.count ?? 0 }

    /// Truncating checkpoints that emptied the WAL since the database opened (0 in memory).
    var walTruncationCount: Int { checkpointer?.truncationCount ?? 0 }

    /// Blocks until the checkpoints requested so far have run (tests): a request is queued
    /// before the write that made it completes.
    func waitForCheckpoints() {
        checkpointer?.waitForRequested()
    }
}

/// Units submitted while the writer was busy, run together (`Database.writeUnit`). `units` is
/// guarded by `Database.openGroup`'s lock until its block takes them, then read on the writer
/// queue only.
private final class WriteGroup: @unchecked Sendable {
    var units: [any GroupUnit]

    init(_ first: any GroupUnit) { units = [first] }
}

/// One unit of a group, its result type erased.
private protocol GroupUnit: AnyObject, Sendable {
    /// Runs the body (in a transaction of its own when `alone`, else in a savepoint).
    /// - Returns: the body's error, nil when it succeeded.
    @discardableResult
    func run(_ connection: SQLiteConnection, alone: Bool) -> (any Error)?
    /// Ends the unit: `error` (the group's) replaces a success; runs its end actions, then its
    /// completion. Called once.
    func finish(failing error: (any Error)?)
    /// The body's own error once it ran, nil when it succeeded (or has not run).
    var failure: (any Error)? { get }
}

/// A unit of work and its completion; its state is touched on the writer queue while it runs,
/// then on the writer's completion queue when it ends (handed over by a queued block).
private final class GroupedWrite<T: Sendable>: GroupUnit, @unchecked Sendable {
    let body: @Sendable (SQLiteConnection, UnitEndActions) throws -> T
    let completion: @Sendable (Result<T, any Error>) -> Void
    let ended = UnitEndActions()
    var result: Result<T, any Error>?

    init(body: @escaping @Sendable (SQLiteConnection, UnitEndActions) throws -> T,
         completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        self.body = body
        self.completion = completion
    }

    func run(_ connection: SQLiteConnection, alone: Bool) -> (any Error)? {
        let ended = self.ended, body = self.body
        do {
            // Nested in the group's transaction, `transaction` is a savepoint.
            result = .success(try connection.transaction(alone ? .immediate : nil) { connection in try body(connection, ended) })
            return nil
        } catch {
            result = .failure(error)
            return error
        }
    }

    func finish(failing error: (any Error)?) {
        var outcome = result ?? .failure(error ?? SQLiteError.closed)
        if let error, case .success = outcome { outcome = .failure(error) }
        result = outcome
        if case .success = outcome { ended.run(committed: true) } else { ended.run(committed: false) }
        completion(outcome)
    }

    var failure: (any Error)? {
        guard case .failure(let error) = result else { return nil }
        return error
    }
}
