import Dispatch

/// A connection confined to one serial dispatch queue: the only way `Database` touches one.
///
/// Why Dispatch serial queues rather than dedicated `Thread`s: a queue made with
/// `DispatchQueue(label:)` targets libdispatch's overcommit pool, so a block that blocks in
/// SQLite (disk I/O, busy timeout) gets a thread of its own and never starves other queues or
/// Swift's cooperative pool; blocks run one at a time in FIFO order, which is all a `NOMUTEX`
/// connection needs; and an idle queue holds no thread.
///
/// # Thread safety
/// `connection` is protected by `queue`: it is read and written only by blocks running on it,
/// which `run` checks with `dispatchPrecondition` (sendability proved at run time, as with
/// NIO's `NIOLoopBound`). Hence `@unchecked Sendable`.
final class ConnectionWorker: @unchecked Sendable {
    let queue: DispatchQueue
    /// Protected by `queue`. nil once closed.
    private var connection: SQLiteConnection?

    init(label: String, connection: SQLiteConnection) {
        self.queue = DispatchQueue(label: label)
        self.connection = connection
    }

    /// Runs `body` with the connection and returns its result.
    ///
    /// A body that returns with a transaction still open would keep the write lock (writer) or pin
    /// an old snapshot and block checkpoints (reader) for every later caller, so it is rolled back
    /// here and reported as `SQLiteError.misuse` (unless the body threw: then its error stands).
    /// - Important: Must be called on `queue`.
    func run<T>(_ body: (SQLiteConnection) throws -> T) -> Result<T, any Error> {
        dispatchPrecondition(condition: .onQueue(queue))
        guard let connection else { return .failure(SQLiteError.closed) }
        let result = Result { try body(connection) }
        guard connection.isInTransaction else { return result }
        try? connection.execute("ROLLBACK")
        if case .failure = result { return result }
        return .failure(SQLiteError.misuse(message: "a database body returned with its transaction open; it was rolled back (use SQLiteConnection.transaction)"))
    }

    /// Closes the connection after the blocks already queued; later `run`s fail with `.closed`.
    /// - Important: Must not be called on `queue` (it waits for it).
    func close() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        queue.sync { connection = nil }
    }
}
