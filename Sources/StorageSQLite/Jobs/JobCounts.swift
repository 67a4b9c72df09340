import HeraldCore
/// The count of done jobs that `job_counts` keeps (migration 20, issue 17), for `/metrics`'
/// `herald_push_jobs{state="done"}`: `jobs_due` holds no done rows, so counting them would read
/// the whole table, and done jobs are never purged on their own.
///
/// Every statement that makes jobs done, or deletes done jobs, tells the count through
/// `changingDone`. Inside a transaction that `SQLiteConnection.transaction` began (a unit of
/// work, a group commit) the change is added to the connection's `pendingJobCounts` and written
/// once, by one `UPDATE`, just before that transaction's COMMIT, so the count commits with the
/// rows it counts, or neither does (a crash, a rollback, a savepoint rolled back); a completion
/// then costs no write of its own, where a done entry in `jobs_due` cost ~5k instructions a push.
/// Anywhere else the count is written in the same transaction as the statement.
enum JobCounts {
    /// Changes to the count not yet written. A value: a savepoint keeps a copy to restore on rollback.
    struct Pending: Equatable {
        /// Jobs made done, less done jobs deleted.
        var done: Int64 = 0

        /// Writes the changes to `job_counts` in the open transaction (nothing when there are none).
        /// - Throws: `SQLiteError` from the update.
        func write(to connection: SQLiteConnection) throws(SQLiteError) {
            guard done != 0 else { return }
            try JobCounts.add(done: done, connection)
        }
    }

    /// Runs `statement`, which returns how many jobs it made done (negative: done jobs it deleted),
    /// and counts them in the same transaction. - Returns: `statement`'s value.
    /// - Throws: `statement`'s error, or the count's write's; nothing is counted then.
    static func changingDone(_ connection: SQLiteConnection, _ statement: () throws(SQLiteError) -> Int) throws(SQLiteError) -> Int {
        if connection.writesPendingCounts {
            let changed = try statement()
            connection.pendingJobCounts.done += Int64(changed)
            return changed
        }
        // A transaction begun by a bare BEGIN: its owner commits it; the count is written now.
        if connection.isInTransaction {
            let changed = try statement()
            if changed != 0 { try add(done: Int64(changed), connection) }
            return changed
        }
        // Autocommit: one transaction for the statement and its count.
        return try connection.inWriteTransaction { () throws(SQLiteError) in try changingDone(connection, statement) }
    }

    /// The count of done jobs as `connection` sees them: committed, plus what its open
    /// transaction changed and has not written yet (a reader's is always written).
    static func done(_ connection: SQLiteConnection) throws(SQLiteError) -> Int {
        let stored = try connection.queryOne("SELECT n FROM job_counts WHERE state = 'done'")?[0, as: Int64.self] ?? 0
        return Int(stored + connection.pendingJobCounts.done)
    }

    private static func add(done: Int64, _ connection: SQLiteConnection) throws(SQLiteError) {
        try connection.run("UPDATE job_counts SET n = n + ? WHERE state = 'done'", [done])
    }
}
