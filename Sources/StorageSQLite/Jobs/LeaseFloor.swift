/// The lease floor (ADR 0017, migration 21): the id of the lowest job still leased at insert
/// (`leased_at_insert = 1`, out of `jobs_due`), or none. No such job has a lower id, so every
/// reader of leased jobs finds those out of the index by walking the primary key up from it
/// (`walkStart`), where it would otherwise read every job.
///
/// The floor is `job_lease_floor`'s one row, written by the writer only in a transaction that
/// changed it, once, just before its COMMIT: a statement that leases a job at insert or frees one
/// tells it here (`leased(_:id:)`, `left(_:id:)`, `leftAny(_:)`), and inside a transaction that
/// `SQLiteConnection.transaction` began that is kept in the connection's `pendingLeaseFloor` and
/// written by `Pending.write(to:)` (a savepoint rolled back takes its part back). A completion
/// batch that does not free the floor's own job writes nothing. The writer keeps the committed
/// floor and its job's lease end (`committed(_:)`), set after each COMMIT that moved it.
enum LeaseFloor {
    /// The floor as committed: its job's id and lease end (unix ms), or none.
    struct Committed: Equatable {
        /// The lowest job still leased at insert; nil when there is none.
        var id: Int64?
        /// That job's `lease_until`; `Int64.max` when there is none.
        var leaseUntil: Int64

        /// No job leased at insert.
        static let noJob = Committed(id: nil, leaseUntil: .max)
    }

    /// What the open transaction did to the floor, not written yet. A value: a savepoint keeps a
    /// copy to restore on rollback.
    struct Pending: Equatable {
        /// A job that may be the floor's left its lease at insert: the floor is walked up again.
        var freed = false
        /// The lowest id this transaction leased at insert below the committed floor (or with no
        /// floor), if any: the floor comes down to it.
        var lowestLeased: Int64?

        /// Walks the floor up or down as the transaction's statements require and writes it, in
        /// the open transaction (nothing when they changed nothing).
        /// - Returns: the floor to remember once the transaction commits; nil when unchanged.
        /// - Throws: `SQLiteError` from the walk or the update.
        func write(to connection: SQLiteConnection) throws(SQLiteError) -> Committed? {
            guard freed || lowestLeased != nil else { return nil }
            let committed = try LeaseFloor.committed(connection)
            let from = min(committed.id ?? .max, lowestLeased ?? .max)
            let next = from == .max ? Committed.noJob : try LeaseFloor.first(connection, from: from)
            if next.id != committed.id {
                try connection.run("UPDATE job_lease_floor SET id = ? WHERE slot = 0", [next.id])
            }
            return next
        }
    }

    /// The committed floor, as the writer remembers it: read from the database once (and again
    /// after a transaction that `SQLiteConnection.transaction` did not begin changed it). The row
    /// changes only just before a COMMIT, so what it holds is committed; its job's lease end is
    /// read from the job's row.
    /// - Throws: `SQLiteError` from that read.
    static func committed(_ connection: SQLiteConnection) throws(SQLiteError) -> Committed {
        if let known = connection.committedLeaseFloor { return known }
        var floor = Committed.noJob
        if let row = try connection.queryOne("SELECT id FROM job_lease_floor WHERE slot = 0"), let id: Int64 = try row[0] {
            let leaseUntil: Int64? = try connection.queryOne("SELECT lease_until FROM jobs WHERE id = ?", [id])?[0]
            floor = Committed(id: id, leaseUntil: leaseUntil ?? .max)
        }
        // Inside a bare BEGIN the row may be one its owner still rolls back: not remembered then.
        if !connection.isInTransaction || connection.writesPendingCounts { connection.committedLeaseFloor = floor }
        return floor
    }

    /// Where a walk for jobs leased at insert starts, as this connection sees the table: the
    /// committed floor, or lower when the open transaction leased a lower id at insert. A reader
    /// reads the row its snapshot holds. - Returns: nil when no job is leased at insert.
    static func walkStart(_ connection: SQLiteConnection) throws(SQLiteError) -> Int64? {
        guard connection.mode == .readWrite else {
            return try connection.queryOne("SELECT id FROM job_lease_floor WHERE slot = 0")?[0]
        }
        let start = min(try committed(connection).id ?? .max, connection.pendingLeaseFloor.lowestLeased ?? .max)
        return start == .max ? nil : start
    }

    /// The lowest job leased at insert with an id of `from` or more, and its lease end: a walk of
    /// the primary key, over the jobs since finished.
    static func first(_ connection: SQLiteConnection, from: Int64) throws(SQLiteError) -> Committed {
        guard let row = try connection.queryOne(firstSQL, [from]) else { return .noJob }
        return Committed(id: try row[0], leaseUntil: try row[1, as: Int64?.self] ?? .max)
    }

    private static let firstSQL = """
        SELECT id, lease_until FROM jobs WHERE id >= ? AND state = 'leased' AND leased_at_insert = 1 ORDER BY id LIMIT 1
        """

    /// Tells the floor that job `id` was just leased at insert. Costs a comparison unless the id
    /// is below the floor (or there is none).
    static func leased(_ connection: SQLiteConnection, id: Int64) throws(SQLiteError) {
        guard id < (try committed(connection).id ?? .max) else { return }
        if connection.writesPendingCounts, let lowest = connection.pendingLeaseFloor.lowestLeased, lowest <= id { return }
        try change(connection) { $0.lowestLeased = min($0.lowestLeased ?? .max, id) }
    }

    /// Tells the floor that job `id` left its lease (completed, retried, dead-lettered, claimed
    /// again): only the floor's own job moves it.
    static func left(_ connection: SQLiteConnection, id: Int64) throws(SQLiteError) {
        if id == (try committed(connection).id) || id == connection.pendingLeaseFloor.lowestLeased {
            try change(connection) { $0.freed = true }
        }
    }

    /// Tells the floor that any number of jobs leased at insert may have left it (released at
    /// start, claimed after their lease, deleted with their app).
    static func leftAny(_ connection: SQLiteConnection) throws(SQLiteError) {
        try change(connection) { $0.freed = true }
    }

    /// Applies `edit` to the open transaction's pending floor; in a transaction begun by a bare
    /// BEGIN, writes it now (the remembered floor is dropped: the owner may still roll back); in
    /// autocommit, in a transaction of its own.
    private static func change(_ connection: SQLiteConnection, _ edit: (inout Pending) -> Void) throws(SQLiteError) {
        if connection.writesPendingCounts {
            edit(&connection.pendingLeaseFloor)
        } else if connection.isInTransaction {
            var pending = Pending()
            edit(&pending)
            _ = try pending.write(to: connection)
            connection.committedLeaseFloor = nil
        } else {
            try connection.inWriteTransaction { () throws(SQLiteError) in try change(connection, edit) }
        }
    }
}
