import CPostgres
import CPostgresShim
import Foundation

/// One blocking libpq connection, owned by one thread (the queue of a `ConnectionWorker`, or the
/// listener's thread): libpq connections are not safe to share.
///
/// Statements with parameters are prepared once per connection and reused by their SQL text
/// (PostgreSQL keeps prepared statements per session, so a new connection after a reconnect
/// prepares them again). Values travel in text format.
///
/// Every wait is bounded: the connect by `connect_timeout`, a statement by the session's
/// `statement_timeout` and `lock_timeout`, a silent peer by TCP keepalives and `tcp_user_timeout`
/// (see `PostgresConfiguration.connectionString`), and every statement also by a deadline kept
/// here, on the client: a server that is stopped or frozen (SIGSTOP, a VM paused, a stuck disk)
/// never fires its own `statement_timeout`, and its kernel still acknowledges keepalives. Each
/// statement is sent without blocking (`PQsendQuery…`) and its answer awaited with `poll` on the
/// socket until `statementDeadlineMilliseconds`; past it the connection is closed (nothing of an
/// open transaction is kept by the server once it notices) and the call fails with `.timedOut`.
final class PostgresConnection {
    private var handle: OpaquePointer?
    /// How long one statement may wait for its whole answer, in milliseconds (client side).
    private let statementDeadlineMilliseconds: Int
    /// SQL text → prepared statement name on this connection.
    private var prepared: [String: String] = [:]
    /// The SQLSTATE of the last statement, when it failed on the server; nil after a success.
    private(set) var lastSQLState: String?

    /// Whether the last statement failed with a serialization failure (40001) or a deadlock
    /// (40P01): its transaction was rolled back, and running the unit again may succeed.
    var lastErrorWasRetryableConflict: Bool { lastSQLState == "40001" || lastSQLState == "40P01" }

    /// Connects and sets the session up.
    /// - Parameters:
    ///   - conninfo: a libpq connection string or `postgres://` URI.
    ///   - sessionSetup: statements run first on the new connection.
    ///   - statementDeadlineMilliseconds: the client-side bound on one statement.
    /// - Throws: `PostgresError.connect` with libpq's reason.
    init(conninfo: String, sessionSetup: String, statementDeadlineMilliseconds: Int = 32_000) throws {
        self.statementDeadlineMilliseconds = statementDeadlineMilliseconds
        // libpq is opened on first use, not linked (CDynamicLoad): a missing libpq5 fails the connect.
        if let reason = herald_pq_load() {
            handle = nil
            throw PostgresError.connect(message: "libpq could not be loaded: \(String(cString: reason))")
        }
        handle = PQconnectdb(conninfo)
        guard let handle, PQstatus(handle) == CONNECTION_OK else {
            let message = handle.map { Self.trimmed(PQerrorMessage($0)) } ?? "out of memory"
            if let handle { PQfinish(handle) }
            self.handle = nil
            throw PostgresError.connect(message: message)
        }
        // Notices (e.g. "relation already exists, skipping") would go to stderr: drop them.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        // Sends never block on a peer that stopped reading (and neither does PQfinish's Terminate).
        if PQsetnonblocking(handle, 1) != 0 {
            let message = Self.trimmed(PQerrorMessage(handle))
            PQfinish(handle)
            self.handle = nil
            throw PostgresError.connect(message: "non-blocking mode refused: \(message)")
        }
        do {
            try execute(sessionSetup)
        } catch {
            close()
            throw PostgresError.connect(message: "session setup failed: \(error)")
        }
    }

    deinit { close() }

    /// Whether the connection is known to be broken (a reconnect is needed).
    var isBroken: Bool { handle.map { PQstatus($0) != CONNECTION_OK } ?? true }

    /// The socket, for `poll` (the listener).
    var socket: Int32 { handle.map { PQsocket($0) } ?? -1 }

    /// Closes the connection; later calls fail with `.connectionLost`.
    func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        prepared = [:]
    }

    /// Runs one or more statements without parameters (simple query protocol).
    /// - Returns: the last statement's command tag (`"COMMIT"`, `"ROLLBACK"`, …).
    @discardableResult
    func execute(_ sql: String) throws -> String {
        let handle = try live()
        let result = try exchange(handle) { PQsendQuery($0, sql) }
        return try consume(result, handle) { result in String(cString: PQcmdStatus(result)) }
    }

    /// Runs a statement with parameters, prepared on first use. - Returns: its rows.
    func query(_ sql: String, _ parameters: [any PostgresBindable] = []) throws -> [PostgresRow] {
        try runPrepared(sql, parameters) { result in Self.rows(of: result) }
    }

    /// `query`, the first row or nil.
    func queryOne(_ sql: String, _ parameters: [any PostgresBindable] = []) throws -> PostgresRow? {
        try query(sql, parameters).first
    }

    /// Runs a statement with parameters, prepared on first use. - Returns: rows it changed.
    @discardableResult
    func run(_ sql: String, _ parameters: [any PostgresBindable] = []) throws -> Int {
        try runPrepared(sql, parameters) { result in Int(String(cString: PQcmdTuples(result))) ?? 0 }
    }

    /// Waits up to `milliseconds` for input, then returns the channel names of the `NOTIFY`s that
    /// arrived (the listener). - Throws: `.connectionLost` when the connection broke.
    func notifications(waitingUpTo milliseconds: Int32) throws -> [String] {
        let handle = try live()
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, milliseconds)
        if PQconsumeInput(handle) == 0 {
            throw PostgresError.connectionLost(message: Self.trimmed(PQerrorMessage(handle)))
        }
        var channels: [String] = []
        while let notify = PQnotifies(handle) {
            channels.append(String(cString: notify.pointee.relname))
            PQfreemem(notify)
        }
        return channels
    }

    // MARK: Internals

    private func live() throws -> OpaquePointer {
        guard let handle else { throw PostgresError.connectionLost(message: "the connection is closed") }
        return handle
    }

    private func runPrepared<T>(_ sql: String, _ parameters: [any PostgresBindable], _ read: (OpaquePointer) throws -> T) throws -> T {
        let handle = try live()
        let name: String
        if let known = prepared[sql] {
            name = known
        } else {
            name = "herald_\(prepared.count + 1)"
            try consume(try exchange(handle) { PQsendPrepare($0, name, sql, 0, nil) }, handle) { _ in }
            prepared[sql] = name
        }
        let texts = parameters.map { $0.postgresText }
        var pointers: [UnsafeMutablePointer<CChar>?] = texts.map { text in text.flatMap { strdup($0) } }
        defer { for pointer in pointers { free(pointer) } }
        let result = try exchange(handle) { handle in
            pointers.withUnsafeMutableBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(buffer.count, 1)) { values in
                    PQsendQueryPrepared(handle, name, Int32(texts.count), texts.isEmpty ? nil : values, nil, nil, 0)
                }
            }
        }
        return try consume(result, handle, read)
    }

    /// Sends one command with `send` (a `PQsend…` call) and waits for all its results, within
    /// the statement deadline: what `PQexec` does, without its unbounded waits.
    /// - Returns: the last result (an error result wins over a later one, as with `PQexec`), or
    ///   nil when the command could not be sent (`consume` reads the connection's error).
    /// - Throws: `.timedOut` when the deadline passed; the connection is then closed.
    private func exchange(_ handle: OpaquePointer, _ send: (OpaquePointer) -> Int32) throws -> OpaquePointer? {
        guard send(handle) == 1 else { return nil }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(statementDeadlineMilliseconds, 1)) * 1_000_000
        // Non-blocking mode: the command may still sit in libpq's buffer.
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { break }
            if flushed < 0 { return PQgetResult(handle) }
            try waitForSocket(handle, events: Int16(POLLIN | POLLOUT), until: deadline)
            if PQconsumeInput(handle) == 0 { break }
        }
        return try results(handle, until: deadline)
    }

    /// Reads every result of the command sent on `handle`, waiting for input until `deadline`.
    /// - Returns: the last result (an error result wins over a later one, as with `PQexec`).
    private func results(_ handle: OpaquePointer, until deadline: UInt64) throws -> OpaquePointer? {
        var last: OpaquePointer?
        while true {
            while PQisBusy(handle) == 1 {
                try waitForSocket(handle, events: Int16(POLLIN), until: deadline)
                // A broken connection: PQgetResult now returns the error.
                if PQconsumeInput(handle) == 0 { break }
            }
            guard let result = PQgetResult(handle) else { break }
            if let previous = last, PQresultStatus(previous) == PGRES_FATAL_ERROR {
                PQclear(result)
            } else {
                if let previous = last { PQclear(previous) }
                last = result
            }
            if PQstatus(handle) != CONNECTION_OK { break }
        }
        return last
    }

    // MARK: A statement left waiting in the server (`HolderWatch`)

    /// Sends `sql` (no parameters) and returns once it is sent, without waiting for its answer:
    /// for a statement that waits in the server for as long as it must (a lock request, on a
    /// session with no `lock_timeout` or `statement_timeout`). `pendingRows(waitingUpTo:)` reads
    /// its answer; no other statement may be sent before. - Throws: `.connectionLost`, `.timedOut`.
    func start(_ sql: String) throws {
        let handle = try live()
        guard PQsendQuery(handle, sql) == 1 else { throw lostOrFailed(handle, message: Self.trimmed(PQerrorMessage(handle))) }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(statementDeadlineMilliseconds, 1)) * 1_000_000
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { return }
            if flushed < 0 { throw lostOrFailed(handle, message: Self.trimmed(PQerrorMessage(handle))) }
            try waitForSocket(handle, events: Int16(POLLIN | POLLOUT), until: deadline)
            if PQconsumeInput(handle) == 0 { throw lostOrFailed(handle, message: Self.trimmed(PQerrorMessage(handle))) }
        }
    }

    /// The answer of the statement `start` sent: its rows once it finished, nil while it is still
    /// running after waiting up to `milliseconds` for input.
    /// - Throws: its error, as `query` throws it; `.connectionLost` when the connection broke.
    func pendingRows(waitingUpTo milliseconds: Int32) throws -> [PostgresRow]? {
        let handle = try live()
        if PQisBusy(handle) == 1 {
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, milliseconds)
            if PQconsumeInput(handle) == 0 { throw PostgresError.connectionLost(message: Self.trimmed(PQerrorMessage(handle))) }
            if PQisBusy(handle) == 1 { return nil }
        }
        // The rest of the answer (its end) follows the first result at once.
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(statementDeadlineMilliseconds, 1)) * 1_000_000
        return try consume(try results(handle, until: deadline), handle) { Self.rows(of: $0) }
    }

    /// Waits until the socket is ready for `events` or `deadline` (monotonic ns) passes.
    /// - Throws: `.timedOut` at the deadline, after closing the connection: its answer, if it
    ///   ever comes, belongs to a call that has already failed.
    private func waitForSocket(_ handle: OpaquePointer, events: Int16, until deadline: UInt64) throws {
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline {
                close()
                throw PostgresError.timedOut(milliseconds: statementDeadlineMilliseconds)
            }
            var descriptor = pollfd(fd: PQsocket(handle), events: events, revents: 0)
            let remaining = Int32(min((deadline - now) / 1_000_000 + 1, 1_000))
            let ready = poll(&descriptor, 1, remaining)
            if ready > 0 { return }
            if ready < 0, errno != EINTR { return }
        }
    }

    /// Checks a result, reads it and frees it.
    private func consume<T>(_ result: OpaquePointer?, _ handle: OpaquePointer, _ read: (OpaquePointer) throws -> T) throws -> T {
        lastSQLState = nil
        guard let result else {
            throw lostOrFailed(handle, message: Self.trimmed(PQerrorMessage(handle)))
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return try read(result)
        default:
            if let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))) {
                let sqlState = String(cString: state)
                lastSQLState = sqlState
                let message = Self.trimmed(PQresultErrorField(result, Int32(UInt8(ascii: "M"))))
                let constraint = PQresultErrorField(result, Int32(UInt8(ascii: "n"))).map { String(cString: $0) }
                // A FATAL from a server that is shutting down comes with a state (57P01) and breaks the connection.
                if PQstatus(handle) != CONNECTION_OK {
                    throw PostgresError.connectionLost(message: "\(message) [\(sqlState)]")
                }
                throw PostgresError.server(sqlState: sqlState, message: message, constraint: constraint)
            }
            throw lostOrFailed(handle, message: Self.trimmed(PQresultErrorMessage(result)))
        }
    }

    private func lostOrFailed(_ handle: OpaquePointer, message: String) -> PostgresError {
        PQstatus(handle) != CONNECTION_OK ? .connectionLost(message: message) : .server(sqlState: "XX000", message: message, constraint: nil)
    }

    private static func rows(of result: OpaquePointer) -> [PostgresRow] {
        let columnCount = PQnfields(result)
        var columns: [String: Int] = [:]
        for column in 0..<columnCount {
            columns[String(cString: PQfname(result, column))] = Int(column)
        }
        let rowCount = PQntuples(result)
        var rows: [PostgresRow] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [String?] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                values.append(PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column)))
            }
            rows.append(PostgresRow(columns: columns, values: values))
        }
        return rows
    }

    private static func trimmed(_ message: UnsafePointer<CChar>?) -> String {
        guard let message else { return "unknown error" }
        return String(cString: message).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
