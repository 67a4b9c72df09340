import CSQLite
import Glibc
import HeraldCore

/// One SQLite connection (`sqlite3*`) with Herald's settings and a prepared-statement cache.
///
/// Opening sets, in this order: extended result codes, `busy_timeout`, then for a read-write file
/// `PRAGMA journal_mode=WAL` (checked: the open fails if WAL cannot be enabled) and
/// `synchronous=NORMAL` (in WAL, durable at each checkpoint and safe against corruption; a power
/// cut may lose the last commits, never a `kill -9`) and `journal_size_limit`, and for every
/// connection `foreign_keys=ON`.
///
/// # Thread safety
/// Not Sendable. Opened with `SQLITE_OPEN_NOMUTEX`, so SQLite takes no locks of its own: the
/// connection must be used by one thread at a time. In Herald a `Database` owns every connection:
/// the writer is used only on the writer queue, each reader only on its own reader queue.
/// A connection may be created on one thread and handed to another before first use.
final class SQLiteConnection {
    /// How a connection is opened.
    enum Mode: Sendable {
        /// `SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE`, WAL enabled: the writer.
        case readWrite
        /// `SQLITE_OPEN_READONLY`: a reader. Writes fail with `SQLITE_READONLY`.
        case readOnly
    }

    /// The file path given to `init` (`":memory:"` for a private in-memory database).
    let path: String
    /// Read-write (the writer) or read-only (a reader).
    let mode: Mode
    /// The `sqlite3*`; valid until `deinit`.
    let handle: OpaquePointer
    let statementCache: StatementCache
    /// Where one-call executions (`Statement.run`, `query`, `queryOne`) copy their text parameters.
    let textArena = TextArena()
    /// Depth of nested `transaction` calls running as savepoints (see `transaction`).
    var savepointDepth = 0
    /// Whether `transaction` began the open transaction: its COMMIT then writes `pendingJobCounts`
    /// first. False in autocommit and in a transaction begun by a bare `BEGIN`.
    var writesPendingCounts = false
    /// What this transaction's statements changed in the counts `job_counts` keeps, written once
    /// before its COMMIT (`JobCounts`, issue 17); empty outside a transaction `transaction` began.
    var pendingJobCounts = JobCounts.Pending()
    /// What this transaction's statements did to the lease floor, written once before its COMMIT
    /// (`LeaseFloor`, ADR 0017); empty outside a transaction `transaction` began.
    var pendingLeaseFloor = LeaseFloor.Pending()
    /// The lease floor as last committed by this connection, or read; nil until first needed.
    var committedLeaseFloor: LeaseFloor.Committed?
    /// The writer's bound on when a `push.deliver` claim can find a job (`JobStore` keeps it as it
    /// queues, leases and claims); nil on readers and connections of their own (migrations).
    var claimHorizon: JobClaimHorizon?
    /// The storage's count of writes that may take a device out of pushes (`Storage.pushAudience`),
    /// counted by the writer's device, session and preference statements inside their unit; nil
    /// on readers and connections of their own (migrations, the stores' tests): nothing counts.
    var pushAudience: PushAudienceChange?
    /// The storage's count of token rotations that moved push jobs (`Storage.pushRotations`),
    /// counted by the writer's rotation inside its unit; nil where `pushAudience` is.
    var pushRotations: PushJobRotation.Count?
    /// The handler `onCommit` installed; kept here so it lives as long as the hook can call it.
    private var commitHook: CommitHook?

    /// Opens (and for `.readWrite`, creates) the database at `path` and configures it.
    /// - Parameters:
    ///   - path: a file path, or `":memory:"` for a private in-memory database (no WAL there).
    ///   - mode: `.readWrite` for the writer, `.readOnly` for readers.
    ///   - busyTimeoutMS: how long, in milliseconds, a statement waits for another connection's
    ///     lock before failing with `SQLiteError.busy`. Default 5000.
    ///   - statementCacheCapacity: how many distinct prepared statements to keep. Default 64.
    ///   - walSizeLimitBytes: for `.readWrite`, `PRAGMA journal_size_limit`: each time the WAL
    ///     starts over, a `-wal` file larger than this is truncated to it, so a burst does not
    ///     keep its space for good. Default `defaultWALSizeLimitBytes`.
    /// - Throws: `SQLiteError.open` with SQLite's code and message.
    init(path: String, mode: Mode = .readWrite, busyTimeoutMS: Int32 = 5000,
                statementCacheCapacity: Int = 64, walSizeLimitBytes: Int64 = SQLiteConnection.defaultWALSizeLimitBytes) throws(SQLiteError) {
        precondition(busyTimeoutMS >= 0, "busy timeout must not be negative")
        precondition(walSizeLimitBytes >= 0, "the WAL size limit must not be negative")
        self.handle = try Self.open(path: path, mode: mode, busyTimeoutMS: busyTimeoutMS, walSizeLimitBytes: walSizeLimitBytes)
        self.path = path
        self.mode = mode
        self.statementCache = StatementCache(capacity: statementCacheCapacity)
    }

    deinit {
        // No Statement is alive here (each holds a strong reference to its connection), so once
        // the idle ones are finalized the close succeeds; a WAL writer that closes last also
        // checkpoints and removes the -wal file.
        statementCache.finalizeAll()
        sqlite3_close_v2(handle)
    }

    /// The WAL's default bound in bytes (`SQLiteStorage.defaultWALSizeLimitBytes`).
    static let defaultWALSizeLimitBytes = SQLiteStorage.defaultWALSizeLimitBytes

    /// Process-wide SQLite settings, made once before the first open (`sqlite3_config` works only
    /// before SQLite initializes; if something else initialized it first, they are skipped).
    /// No page-cache slab per connection: Debian's SQLite preallocates 20 pages (~87 KB, all of it
    /// touched) for each of the four connections, which the idle readers and the checkpointer never
    /// fill; pages are now taken one at a time as a cache grows (issue 17, idle footprint).
    /// No memory statistics: with them every allocation and free SQLite makes (Debian's build has
    /// no lookaside, so each one is a `malloc`, ~40 a push) took and released a process-wide
    /// mutex, ~3k instructions a push (issue 17); nothing in Herald reads them.
    private static let configured: Void = {
        _ = herald_sqlite3_config_no_initial_page_cache()
        _ = herald_sqlite3_config_no_memory_statistics()
    }()

    private static func open(path: String, mode: Mode, busyTimeoutMS: Int32, walSizeLimitBytes: Int64) throws(SQLiteError) -> OpaquePointer {
        _ = configured
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        flags |= mode == .readWrite ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY
        var opened: OpaquePointer?
        let rc = sqlite3_open_v2(path, &opened, flags, nil)
        guard rc == SQLITE_OK, let db = opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            var systemErrno = opened.map(sqlite3_system_errno) ?? 0
            if unwritableAdvice(systemErrno: systemErrno).isEmpty, mode == .readWrite, SQLiteResultCode(rc).primary == .cantOpen,
               !isInMemory(path) {
                // A file SQLite could not create keeps the errno of its last try (a read-only
                // open: ENOENT), not why the create failed: ask the directory.
                let slash = path.lastIndex(of: "/")
                let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
                if access(directory, W_OK) != 0 { systemErrno = errno }
            }
            let (code, full) = SQLiteResultCode(rc).forVolumeFull(systemErrno: systemErrno, message: message)
            sqlite3_close_v2(opened)
            throw .open(path: path, code: code, message: full + unwritableAdvice(systemErrno: systemErrno))
        }
        do throws(SQLiteError) {
            sqlite3_extended_result_codes(db, 1)
            sqlite3_busy_timeout(db, busyTimeoutMS)
            if mode == .readWrite {
                // SQLite falls back to a read-only open when the file cannot be written (a
                // read-only volume or file); said plainly here rather than as WAL's "unable to
                // open database file" further on.
                if !isInMemory(path), sqlite3_db_readonly(db, "main") == 1 {
                    throw .open(path: path, code: .readOnly, message: "the database file can only be opened read-only"
                                + unwritableAdvice(systemErrno: EROFS))
                }
                let journal = try pragma(db, path: path, "PRAGMA journal_mode=WAL")
                if !isInMemory(path), journal?.lowercased() != "wal" {
                    throw .open(path: path, code: .error, message: "journal_mode is \(journal ?? "unknown"), WAL could not be enabled")
                }
                _ = try pragma(db, path: path, "PRAGMA synchronous=NORMAL")
                _ = try pragma(db, path: path, "PRAGMA journal_size_limit=\(walSizeLimitBytes)")
            }
            _ = try pragma(db, path: path, "PRAGMA foreign_keys=ON")
        } catch {
            sqlite3_close_v2(db)
            throw error
        }
        return db
    }

    /// Runs a set-up pragma on a raw handle (before `self` exists) and returns its first value.
    private static func pragma(_ db: OpaquePointer, path: String, _ sql: String) throws(SQLiteError) -> String? {
        var statement: OpaquePointer?
        var rc = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        defer { sqlite3_finalize(statement) }
        if rc == SQLITE_OK {
            rc = sqlite3_step(statement)
            if rc == SQLITE_ROW { return sqlite3_column_text(statement, 0).map { String(cString: $0) } }
            if rc == SQLITE_DONE { return nil }
        }
        let systemErrno = sqlite3_system_errno(db)
        let (code, message) = SQLiteResultCode(rc).forVolumeFull(systemErrno: systemErrno,
                                                                  message: "\(sql): \(String(cString: sqlite3_errmsg(db)))")
        throw .open(path: path, code: code, message: message + unwritableAdvice(systemErrno: systemErrno))
    }

    /// What to do when the OS refused a write (`EROFS` read-only volume, `EACCES`/`EPERM`
    /// permissions): Herald writes the database and creates `-wal` and `-shm` files beside it, so
    /// both the file and its directory must be writable. Empty for any other errno.
    static func unwritableAdvice(systemErrno: Int32) -> String {
        switch systemErrno {
        case EROFS:
            return " (the file or its directory is on a read-only file system: Herald writes the database and its -wal and -shm files beside it;"
                + " remount the volume read-write or set HERALD_DATABASE to a path on a writable one)"
        case EACCES, EPERM:
            return " (permission denied: the database file and its directory must be writable by Herald's user, which creates the -wal and -shm files beside it;"
                + " fix the owner or mode, or set HERALD_DATABASE to a writable path)"
        default:
            return ""
        }
    }

    static func isInMemory(_ path: String) -> Bool { path == ":memory:" || path.isEmpty }

    // MARK: State

    /// How long, in milliseconds, a statement waits for another connection's lock (`sqlite3_busy_timeout`).
    func setBusyTimeout(milliseconds: Int32) {
        sqlite3_busy_timeout(handle, max(milliseconds, 0))
    }

    /// The database's page size in bytes (`PRAGMA page_size`), to turn WAL frames into bytes.
    func pageSize() throws(SQLiteError) -> Int64 {
        guard let row = try queryOne("PRAGMA page_size") else { return 4096 }
        return try row[0, as: Int64.self]
    }

    /// Rowid of the last row inserted through this connection (0 before any insert).
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the most recent INSERT, UPDATE or DELETE on this connection.
    var changes: Int { Int(sqlite3_changes64(handle)) }

    /// Rows changed since the connection opened.
    var totalChanges: Int { Int(sqlite3_total_changes64(handle)) }

    /// True while a transaction is open (SQLite is out of autocommit mode).
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Number of idle statements in the cache (for tests and stats).
    var cachedStatementCount: Int { statementCache.count }
    /// Statements compiled for the cache since the connection opened; stays flat while SQL is reused.
    var compiledStatementCount: Int { statementCache.compiledCount }

    // MARK: WAL

    /// Calls `handler` after every commit with the number of pages in the WAL, on the thread that
    /// committed (SQLite's `sqlite3_wal_hook`). This replaces SQLite's auto-checkpoint: when the
    /// handler returns true, this connection checkpoints (PASSIVE) there and then, as the
    /// auto-checkpoint would. nil removes the hook (and leaves no auto-checkpoint).
    /// - Important: Not for in-memory databases, which have no WAL; the handler must be quick.
    func onCommit(_ handler: (@Sendable (Int32) -> Bool)?) {
        commitHook = handler.map(CommitHook.init)
        guard let hook = commitHook else {
            sqlite3_wal_hook(handle, nil, nil)
            return
        }
        // Unretained: `commitHook` keeps it alive as long as this connection, the only caller.
        sqlite3_wal_hook(handle, { context, db, _, pages in
            guard let context else { return SQLITE_OK }
            if Unmanaged<CommitHook>.fromOpaque(context).takeUnretainedValue().handler(pages) {
                // What SQLite's own hook does; a busy or failed checkpoint is not the commit's error.
                sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(hook).toOpaque())
    }

    /// How a checkpoint treats the WAL (sqlite.org/c3ref/wal_checkpoint_v2.html).
    enum CheckpointMode: Sendable {
        /// Copies what no reader still needs, without waiting for any lock.
        case passive
        /// Copies everything, waits (up to the busy timeout) for the writer and the readers to
        /// be done with the WAL, then truncates the `-wal` file to zero bytes, giving its space
        /// back to the volume.
        case truncate

        var rawValue: Int32 {
            switch self {
            case .passive: SQLITE_CHECKPOINT_PASSIVE
            case .truncate: SQLITE_CHECKPOINT_TRUNCATE
            }
        }
    }

    /// Copies the WAL into the database file (`sqlite3_wal_checkpoint_v2`).
    /// - Parameter mode: `.passive` (default) never waits; `.truncate` also empties the WAL file.
    /// - Returns: frames in the WAL, and how many of them are in the database file now (both 0
    ///   after a truncating checkpoint).
    /// - Throws: `SQLiteError.step` (`SQLITE_FULL` when the database file cannot grow to take the
    ///   frames), or `.busy` while another connection checkpoints or, truncating, the writer or a
    ///   reader held on past the busy timeout.
    @discardableResult
    func checkpoint(_ mode: CheckpointMode = .passive) throws(SQLiteError) -> (walFrames: Int, checkpointed: Int) {
        var frames: Int32 = 0, done: Int32 = 0
        let rc = sqlite3_wal_checkpoint_v2(handle, nil, mode.rawValue, &frames, &done)
        guard rc == SQLITE_OK else { throw failure(rc) { .step(code: $0, message: $1) } }
        return (Int(frames), Int(done))
    }

    // MARK: Statements

    /// Returns a prepared statement for `sql`, from the cache when this SQL ran before.
    ///
    /// `sql` must be exactly one statement with `?`, `?NNN`, `:name`, `@name` or `$name`
    /// parameters for every value: values are bound, never spliced into SQL text.
    /// - Parameters:
    ///   - sql: one SQL statement; trailing whitespace, `;` and comments are allowed.
    ///   - cached: false for SQL that runs once, so it does not take a cache slot.
    /// - Throws: `SQLiteError.prepare` for a compile error, empty SQL or a second statement.
    func prepare(_ sql: String, cached: Bool = true) throws(SQLiteError) -> Statement {
        if cached, let entry = statementCache.checkOut(sql) {
            return Statement(sql: sql, handle: entry.handle, connection: self, entry: entry)
        }
        var failure: SQLiteError?
        var compiled: OpaquePointer?
        // PERSISTENT tells SQLite the statement will be reused many times (allocates it outside
        // the lookaside pool), which is what the cache does with it.
        let flags = cached ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        sql.withCString { start in
            var tail: UnsafePointer<CChar>?
            let rc = sqlite3_prepare_v3(handle, start, -1, flags, &compiled, &tail)
            guard rc == SQLITE_OK else {
                failure = self.failure(rc) { .prepare(sql: sql, code: $0, message: $1) }
                return
            }
            guard compiled != nil else {
                failure = .prepare(sql: sql, code: .misuse, message: "no SQL statement (empty or only comments)")
                return
            }
            // prepare compiles only the first statement; silently ignoring the rest would drop
            // work, so a tail that compiles to anything is an error.
            if let tail, tail.pointee != 0 {
                var extra: OpaquePointer?
                sqlite3_prepare_v2(handle, tail, -1, &extra, nil)
                if extra != nil {
                    sqlite3_finalize(extra)
                    failure = .prepare(sql: sql, code: .misuse, message: "more than one statement; use execute(_:) for scripts")
                }
            }
        }
        if let failure {
            sqlite3_finalize(compiled)
            throw failure
        }
        guard let compiled else { preconditionFailure("sqlite3_prepare_v3 returned OK without a statement") }
        guard cached else { return Statement(sql: sql, handle: compiled, connection: self, entry: nil) }
        statementCache.noteCompiled()
        return Statement(sql: sql, handle: compiled, connection: self, entry: statementCache.keep(sql, compiled))
    }

    /// Runs a script of one or more statements with no parameters: DDL, migrations, pragmas.
    /// Rows a statement returns are discarded. Not cached.
    /// - Throws: `.prepare` naming the statement that did not compile, or `.step`/`.constraint`/
    ///   `.busy` for the one that failed; statements before it have run.
    func execute(_ sql: String) throws(SQLiteError) {
        var failure: SQLiteError?
        sql.withCString { start in
            var cursor: UnsafePointer<CChar>? = start
            while let current = cursor, current.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let rc = sqlite3_prepare_v2(handle, current, -1, &statement, &tail)
                guard rc == SQLITE_OK else {
                    let text = String(String(cString: current).prefix(200))
                    failure = self.failure(rc) { .prepare(sql: text, code: $0, message: $1) }
                    return
                }
                cursor = tail
                guard let statement else { continue }  // only whitespace or a comment was left
                var stepped: Int32
                repeat { stepped = sqlite3_step(statement) } while stepped == SQLITE_ROW
                if stepped != SQLITE_DONE {
                    failure = self.failure(stepped) { .step(code: $0, message: $1) }
                }
                sqlite3_finalize(statement)
                if failure != nil { return }
            }
        }
        if let failure { throw failure }
    }

    // MARK: One-call helpers

    /// `prepare(sql).run(values)`: runs a statement with positional values.
    func run(_ sql: String, _ values: [any SQLiteBindable] = []) throws(SQLiteError) {
        try prepare(sql).run(values)
    }

    /// `prepare(sql).run(values)`: runs a statement with named values.
    func run(_ sql: String, _ values: [String: any SQLiteBindable]) throws(SQLiteError) {
        try prepare(sql).run(values)
    }

    /// `prepare(sql).query(values)`: every row, positional values.
    func query(_ sql: String, _ values: [any SQLiteBindable] = []) throws(SQLiteError) -> [Row] {
        try prepare(sql).query(values)
    }

    /// `prepare(sql).query(values)`: every row, named values.
    func query(_ sql: String, _ values: [String: any SQLiteBindable]) throws(SQLiteError) -> [Row] {
        try prepare(sql).query(values)
    }

    /// `prepare(sql).queryOne(values)`: the first row or nil, positional values.
    func queryOne(_ sql: String, _ values: [any SQLiteBindable] = []) throws(SQLiteError) -> Row? {
        try prepare(sql).queryOne(values)
    }

    /// `prepare(sql).queryOne(values)`: the first row or nil, named values.
    func queryOne(_ sql: String, _ values: [String: any SQLiteBindable]) throws(SQLiteError) -> Row? {
        try prepare(sql).queryOne(values)
    }

    // MARK: Errors

    /// SQLite's message for the last failure on this connection.
    var errorMessage: String { String(cString: sqlite3_errmsg(handle)) }

    /// Turns a failed result code into a `SQLiteError`: constraint and busy codes get their own
    /// cases, anything else `fallback(code, message)`. An I/O error the OS gave for a full volume
    /// becomes `SQLITE_FULL` (see `SQLiteResultCode.forVolumeFull`).
    func failure(_ rc: Int32, _ fallback: (SQLiteResultCode, String) -> SQLiteError) -> SQLiteError {
        let (code, message) = SQLiteResultCode(rc).forVolumeFull(systemErrno: sqlite3_system_errno(handle), message: errorMessage)
        return SQLiteError.classify(code, message: message) { fallback($0, message) }
    }
}

/// A commit handler, boxed so SQLite can hold a pointer to it.
private final class CommitHook {
    let handler: @Sendable (Int32) -> Bool
    init(_ handler: @escaping @Sendable (Int32) -> Bool) { self.handler = handler }
}

@available(*, unavailable, message: "a connection is used by one thread at a time; share a Database instead")
extension SQLiteConnection: Sendable {}
