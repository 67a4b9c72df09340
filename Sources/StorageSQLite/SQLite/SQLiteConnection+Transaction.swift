/// How `BEGIN` takes its locks.
enum TransactionMode: Sendable {
    /// `BEGIN DEFERRED`: no lock until the first read or write. For readers: a consistent
    /// snapshot across several SELECTs.
    case deferred
    /// `BEGIN IMMEDIATE`: takes the write lock at once, waiting up to the busy timeout. For the
    /// writer: a deferred transaction that reads and then writes can fail at the write with
    /// `SQLITE_BUSY_SNAPSHOT` without waiting, an immediate one cannot.
    case immediate
    /// `BEGIN EXCLUSIVE`: in WAL mode the same as immediate.
    case exclusive

    var beginSQL: String {
        switch self {
        case .deferred: "BEGIN DEFERRED"
        case .immediate: "BEGIN IMMEDIATE"
        case .exclusive: "BEGIN EXCLUSIVE"
        }
    }
}

extension SQLiteConnection {
    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    ///
    /// Called inside another transaction it becomes a `SAVEPOINT`, so helpers can use
    /// `transaction` freely: an inner throw undoes only the inner work (if the outer body catches it).
    /// - Parameters:
    ///   - mode: how BEGIN locks; default `.immediate` on a read-write connection, `.deferred` on a
    ///     read-only one. Ignored for a nested call.
    ///   - body: the work; it receives this connection.
    /// - Returns: what `body` returns.
    /// - Throws: `body`'s error unchanged after rolling back, or a `SQLiteError` from BEGIN or COMMIT
    ///   (a failed COMMIT is rolled back too).
    func transaction<T>(_ mode: TransactionMode? = nil, _ body: (SQLiteConnection) throws -> T) throws -> T {
        if isInTransaction {
            return try savepoint(body)
        }
        // BEGIN, COMMIT and the savepoint statements run through the statement cache: compiling
        // them on every transaction was a measurable part of the writer's time.
        try prepare((mode ?? (self.mode == .readWrite ? .immediate : .deferred)).beginSQL).run()
        // Whatever ends the transaction, the counts pending for it end with it: written by the
        // COMMIT below, or rolled back with the rows they count.
        writesPendingCounts = true
        defer {
            writesPendingCounts = false
            pendingJobCounts = JobCounts.Pending()
            pendingLeaseFloor = LeaseFloor.Pending()
        }
        let result: T
        do {
            result = try body(self)
            // In the transaction, so that the counts commit with the rows they count, or neither;
            // the lease floor likewise, remembered only once committed.
            try pendingJobCounts.write(to: self)
            let floor = try pendingLeaseFloor.write(to: self)
            try prepare("COMMIT").run()
            if let floor { committedLeaseFloor = floor }
        } catch {
            // SQLite itself ends the transaction on some errors (SQLITE_FULL, SQLITE_IOERR…);
            // roll back only when it is still open. The body's error is the one the caller needs.
            if isInTransaction { try? execute("ROLLBACK") }
            assert(!isInTransaction, "ROLLBACK left the transaction open")
            throw error
        }
        return result
    }

    /// `SAVEPOINT herald_spN` and `RELEASE herald_spN` for depths 0 to 7 (index N).
    private static let savepointTexts = (0..<8).map { (save: "SAVEPOINT herald_sp\($0)", release: "RELEASE herald_sp\($0)") }

    private func savepoint<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        savepointDepth += 1
        defer { savepointDepth -= 1 }
        // The name is built from a counter, not from input; savepoints cannot take parameters.
        let name = "herald_sp\(savepointDepth)"
        // The usual depths' texts made once: a text built per use cost its appends and missed the
        // statement cache's lookup by address (every unit of a group commit runs in one, issue 17).
        let texts = savepointDepth < Self.savepointTexts.count
            ? Self.savepointTexts[savepointDepth] : (save: "SAVEPOINT \(name)", release: "RELEASE \(name)")
        try prepare(texts.save).run()
        // The counts pending when the savepoint began: its rollback takes back what its body added.
        let counted = pendingJobCounts, floor = pendingLeaseFloor
        let result: T
        do {
            result = try body(self)
            try prepare(texts.release).run()
        } catch {
            // ROLLBACK TO undoes the work but keeps the savepoint open; RELEASE then removes it.
            if isInTransaction {
                if (try? execute("ROLLBACK TO \(name)")) != nil { pendingJobCounts = counted; pendingLeaseFloor = floor }
                try? execute("RELEASE \(name)")
            }
            throw error
        }
        return result
    }
}

extension SQLiteConnection {
    /// Runs `body` in the transaction already open on this connection, or else in its own
    /// (`BEGIN IMMEDIATE`), with no savepoint: for a read followed by writes that must be one
    /// unit (the queue's claims), where the open transaction's owner rolls back if `body` throws.
    /// - Throws: `body`'s error (its own transaction rolled back), or BEGIN's or COMMIT's.
    func inWriteTransaction<T>(_ body: () throws(SQLiteError) -> T) throws(SQLiteError) -> T {
        if isInTransaction { return try body() }
        do {
            return try transaction(.immediate) { _ in try body() }
        } catch let error as SQLiteError {
            throw error
        } catch {
            preconditionFailure("a body typed to throw SQLiteError threw \(error)")
        }
    }
}
