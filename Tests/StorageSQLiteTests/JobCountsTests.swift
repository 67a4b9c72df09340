import CSQLite
import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

/// Migration 20 (issue 17): `jobs_due` holds no done rows and `job_counts` keeps their count,
/// written once per transaction. The count must equal the done rows whatever ends a
/// transaction: a commit, a rollback, a savepoint rolled back, a crash before the commit.
@Suite struct JobCountsTests {
    private func migrated(_ path: String = ":memory:") throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path)
        _ = try Migrator.migrate(connection)
        return connection
    }

    /// The done rows as the table has them, and as `job_counts` and `depth` say.
    private func counts(_ connection: SQLiteConnection) throws -> (rows: Int, counted: Int, depth: Int) {
        let rows = try connection.queryOne("SELECT count(*) FROM jobs WHERE state = 'done'")?[0, as: Int64.self] ?? -1
        return (Int(rows), try JobCounts.done(connection), try JobStore.depth(connection, now: 0).counts[.done] ?? 0)
    }

    private func leased(_ connection: SQLiteConnection, _ n: Int, app: String = "default") throws -> [JobRecord] {
        try (0..<n).map { _ throws(SQLiteError) in
            try JobStore.enqueueLeased(connection, kind: "push.deliver", payloadJSON: "{}", app: app, leaseUntil: 1_000, now: 0)
        }
    }

    @Test func everyWayAJobBecomesDoneOrADoneJobGoesIsCounted() throws {
        let db = try migrated()
        let jobs = try leased(db, 6)
        // Autocommit: the statement and its count in one transaction of their own.
        #expect(try JobStore.complete(db, jobs[0].lease, note: "delivered: x"))
        #expect(try !JobStore.complete(db, jobs[0].lease), "fenced: counted once")
        #expect(try counts(db) == (1, 1, 1))
        // A managed transaction: counted at its COMMIT, not before.
        try db.transaction { db throws in
            #expect(try JobStore.complete(db, jobs[1].lease))
            #expect(try JobStore.complete(db, jobs[2].lease))
            // Written at the COMMIT, and seen by this transaction's own reads meanwhile.
            #expect(try db.queryOne("SELECT n FROM job_counts")?[0, as: Int64.self] == 1 && db.pendingJobCounts.done == 2)
            #expect(try JobCounts.done(db) == 3 && JobStore.depth(db, now: 0).counts[.done] == 3)
        }
        #expect(try counts(db) == (3, 3, 3) && db.pendingJobCounts == .init())
        // Rolled back: neither the rows nor the count.
        #expect(throws: SQLiteError.self) {
            try db.transaction { db in
                #expect(try JobStore.complete(db, jobs[3].lease))
                throw SQLiteError.misuse(message: "abandoned")
            }
        }
        #expect(try counts(db) == (3, 3, 3) && db.pendingJobCounts == .init())
        // A savepoint rolled back inside a transaction that commits: its completion only is undone.
        try db.transaction { db throws in
            #expect(try JobStore.complete(db, jobs[3].lease))
            #expect(throws: SQLiteError.self) {
                try db.transaction { db in
                    #expect(try JobStore.complete(db, jobs[4].lease))
                    throw SQLiteError.misuse(message: "this unit fails alone")
                }
            }
            #expect(db.pendingJobCounts.done == 1)
        }
        #expect(try counts(db) == (4, 4, 4))
        // A transaction begun by a bare BEGIN: counted in it, with each statement.
        try db.execute("BEGIN IMMEDIATE")
        #expect(try JobStore.complete(db, jobs[4].lease))
        try db.execute("ROLLBACK")
        #expect(try counts(db) == (4, 4, 4))
        // A cancelled queued job is done too.
        let queued = try JobStore.enqueue(db, kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
        #expect(try JobStore.cancel(db, id: queued, reason: "acked"))
        #expect(try counts(db) == (5, 5, 5))
        // Retried and dead jobs are not done; a dead letter retried comes back queued.
        #expect(try JobStore.retry(db, jobs[4].lease, runAt: 0, error: "503"))
        #expect(try JobStore.deadLetter(db, jobs[5].lease, error: "BadDeviceToken", now: 0))
        #expect(try JobStore.retryDead(db, id: jobs[5].id, now: 0))
        #expect(try counts(db) == (5, 5, 5))
        // The purge, by creation time.
        try db.run("UPDATE jobs SET created_at = 50 WHERE id IN (?, ?)", [jobs[0].id, jobs[1].id])
        #expect(try JobStore.purgeDone(db, createdBefore: 10, limit: 1_000) == 3)
        #expect(try counts(db) == (2, 2, 2))
        #expect(try JobStore.purgeDone(db, createdBefore: 100, limit: 1_000) == 2)
        #expect(try counts(db) == (0, 0, 0))
    }

    /// The retention purge deletes in batches of `limit`, lowest id first, up to the first job
    /// created at or after the cutoff (done jobs are in no index: found by bisecting the ids).
    @Test func thePurgeDeletesInBatchesUpToTheFirstJobCreatedAtTheCutoff() throws {
        let db = try migrated()
        let jobs = try leased(db, 8)
        for job in jobs { #expect(try JobStore.complete(db, job.lease)) }
        // Created at 0, 1, 2, 6, 4, 5, 6, 1 ms: job 3 later than its neighbours, job 7 earlier.
        let created: [Int64] = [0, 1, 2, 6, 4, 5, 6, 1]
        for (job, time) in zip(jobs, created) { try db.run("UPDATE jobs SET created_at = ? WHERE id = ?", [time, job.id]) }
        #expect(try JobStore.firstID(db, createdAtOrAfter: 5) == jobs[5].id)
        #expect(try JobStore.firstID(db, createdAtOrAfter: 0) == jobs[0].id)
        #expect(try JobStore.firstID(db, createdAtOrAfter: 100) == jobs[7].id + 1)
        #expect(try JobStore.purgeDone(db, createdBefore: 5, limit: 3) == 3)
        #expect(try JobStore.find(db, id: jobs[2].id) == nil && JobStore.find(db, id: jobs[3].id) != nil)
        #expect(try counts(db) == (5, 5, 5))
        #expect(try JobStore.purgeDone(db, createdBefore: 5, limit: 3) == 1)
        // Job 7 was created before the cutoff but lies past the bound: a later purge takes it.
        #expect(try JobStore.purgeDone(db, createdBefore: 5, limit: 3) == 0)
        #expect(try JobStore.find(db, id: jobs[7].id) != nil && counts(db) == (4, 4, 4))
        #expect(try JobStore.purgeDone(db, createdBefore: 8, limit: 3) == 3)
        #expect(try JobStore.purgeDone(db, createdBefore: 8, limit: 3) == 1)
        // Jobs not done stay whatever their age; an empty table has nothing to bound.
        let queued = try JobStore.enqueue(db, kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
        #expect(try JobStore.purgeDone(db, createdBefore: Int64.max, limit: 3) == 0)
        #expect(try JobStore.find(db, id: queued) != nil && counts(db) == (0, 0, 0))
        try db.run("DELETE FROM jobs")
        #expect(try JobStore.firstID(db, createdAtOrAfter: 0) == 0)
    }

    @Test func anAppsDeletionTakesItsDoneJobsOutOfTheCount() throws {
        let db = try migrated()
        let now: Int64 = 1_000
        try AppStore.create(db, AppRecord(id: AppID("chat")!, settings: AppSettings(), secrets: [:], serverKeys: [], createdAt: now, updatedAt: now))
        try db.run("""
            INSERT INTO devices (id, app, user_id, platform, provider, token, created_at, last_seen_at)
            VALUES ('d-chat', 'chat', 'u', 'ios', 'apns', 'ab', 0, 0)
            """)
        let chat = try leased(db, 3, app: "chat")
        let other = try leased(db, 2)
        // A job of the chat app's device under the default app's name (queued before schema 13).
        let old = try JobStore.enqueueLeased(db, kind: "push.deliver", payloadJSON: #"{"device_id":"d-chat"}"#, app: "default",
                                             leaseUntil: 1_000, now: 0)
        for job in chat.prefix(2) + other.prefix(1) + [old] { #expect(try JobStore.complete(db, job.lease)) }
        #expect(try counts(db) == (4, 4, 4))
        #expect(try AppStore.delete(db, AppID("chat")!))
        #expect(try counts(db) == (1, 1, 1))
        #expect(try db.queryOne("SELECT count(*) FROM jobs")?[0, as: Int64.self] == 2)
    }

    /// A process that dies mid-transaction leaves neither its completions nor their count: a
    /// connection opened on the file meanwhile (what a restart reads) sees the count of the
    /// committed rows only, before and after the commit, through group commits of several units.
    @Test func theCountCommitsWithTheRowsOrNotAtAll() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let writer = try migrated(path)
            let jobs = try leased(writer, 40)
            let reopened = try SQLiteConnection(path: path, mode: .readOnly)
            for round in 0..<4 {
                try writer.transaction { conn throws in
                    for (index, job) in jobs[(round * 10)..<(round * 10 + 10)].enumerated() {
                        // Every third completion in a unit that fails and rolls back alone.
                        if index % 3 == 2 {
                            _ = try? conn.transaction { conn throws in
                                #expect(try JobStore.complete(conn, job.lease))
                                throw SQLiteError.misuse(message: "unit rolled back")
                            }
                        } else {
                            #expect(try JobStore.complete(conn, job.lease))
                        }
                    }
                    // Mid-way: what a restart would find.
                    let seen = try counts(reopened)
                    #expect(seen.rows == round * 7 && seen.counted == seen.rows)
                }
                let seen = try counts(reopened)
                #expect(seen.rows == (round + 1) * 7 && seen.counted == seen.rows && seen.depth == seen.rows)
            }
            // Group commits through the writer's units, one of them failing after its completion.
            let left = jobs.filter { job in (try? JobStore.find(reopened, id: job.id)?.state) == .leased }
            #expect(left.count == 12)
            let db = try Database.open(path: path)
            let done = DispatchGroup()
            for (index, job) in left.enumerated() {
                done.enter()
                db.writeUnit({ conn, _ in
                    _ = try JobStore.complete(conn, job.lease)
                    if index == 5 { throw SQLiteError.misuse(message: "this unit fails alone") }
                }) { _ in done.leave() }
            }
            done.wait()
            let seen = try counts(reopened)
            #expect(seen.rows == 28 + 11 && seen.counted == seen.rows && seen.depth == seen.rows)
            db.close()
            let restarted = try migrated(path)
            #expect(try counts(restarted) == (39, 39, 39))
        }
    }

    /// Every read of the queue but the done listing and the purge keeps an index range of
    /// `jobs_due`; `depth` reads that range (and its rows), `job_counts` and the walk from the lease floor.
    @Test func theQueuesReadsUseTheIndexWithoutTheDoneRows() throws {
        let db = try migrated()
        func plan(_ sql: String) throws -> String {
            try db.query("EXPLAIN QUERY PLAN " + sql).map { try $0["detail", as: String.self] }.joined(separator: "; ")
        }
        for state in ["queued", "leased", "dead"] {
            #expect(try plan("SELECT * FROM jobs WHERE state = '\(state)' AND \(JobStore.indexed) AND app = 'a' AND id < 9 ORDER BY id DESC LIMIT 5")
                .contains("USING INDEX jobs_due (state=?)"))
        }
        #expect(try plan("SELECT * FROM jobs WHERE state = 'done' AND app = 'a' AND id < 9 ORDER BY id DESC LIMIT 5")
            .contains("USING INTEGER PRIMARY KEY (rowid<?)"))
        // Not "covering" to SQLite 3.40, which counts leased_at_insert as a column the statement
        // needs; it reads no row all the same (`theDepthReadsTheIndexAlone`).
        #expect(try plan(JobStore.depthCountsSQL) == "SEARCH jobs USING INDEX jobs_due (state=?)")
        #expect(try plan("UPDATE jobs SET state = 'queued', lease_until = NULL WHERE kind = 'k' AND state = 'leased' AND \(JobStore.indexed)")
            .contains("jobs_due"))
        // The oldest due job: a skip scan of the kinds, then one seek of each kind's range.
        let oldest = try plan(JobStore.oldestDueSQL.replacingOccurrences(of: "?1", with: "5"))
        #expect(oldest.contains("SEARCH jobs USING INDEX jobs_due (state=?)")
                && oldest.contains("SEARCH jobs USING INDEX jobs_due (state=? AND kind>?)")
                && oldest.contains("SEARCH jobs USING INDEX jobs_due (state=? AND kind=? AND <expr><?)"), "\(oldest)")
        #expect(!oldest.contains("SCAN jobs"), "\(oldest)")
        #expect(try plan("UPDATE jobs SET run_at = 0 WHERE state = 'dead' AND \(JobStore.indexed) AND app = 'a'").contains("jobs_due (state=?)"))
        // Jobs leased at insert (ADR 0017): a range of the primary key from the lease floor.
        #expect(try plan("SELECT count(*) FROM jobs WHERE \(JobStore.leasedAtInsert(from: 1))".replacingOccurrences(of: "?1", with: "5"))
            == "SEARCH jobs USING INTEGER PRIMARY KEY (rowid>?)")
    }

    /// ops11: `depth` on a backlog reads `jobs_due`'s pages and no job's row, though SQLite 3.40's
    /// plan says `USING INDEX`, not `COVERING` (the partial index's `leased_at_insert = 0` is
    /// taken as a column the statement needs, but its term is the index's own and never read, and
    /// a count needs no other column: the row's seek is deferred and never made). Each job here
    /// fills a page of its own, so a read of the rows would be a page per job; and the oldest due
    /// job is a few seeks (`oldestDueSQL`), not a walk of every queued job's entry.
    @Test func theDepthReadsTheIndexAlone() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let jobs = 2_000
            do {
                let db = try migrated(path)
                let payload = String(repeating: "x", count: 3_000)
                try db.run("""
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
                    INSERT INTO jobs (kind, payload_json, state, attempts, run_at, created_at)
                    SELECT CASE i % 3 WHEN 0 THEN 'push.receipt' ELSE 'push.deliver' END, ?2,
                           CASE WHEN i % 4 = 0 THEN 'dead' ELSE 'queued' END, 1, 1000 + i, 0 FROM n
                    """, [Int64(jobs), payload])
            }
            /// Pages the statement read on a connection of its own (SQLite's cache cold).
            func pagesRead(_ sql: String, _ parameters: [Int64] = []) throws -> Int32 {
                let connection = try SQLiteConnection(path: path, mode: .readOnly)
                var current: Int32 = 0, highest: Int32 = 0
                _ = sqlite3_db_status(connection.handle, SQLITE_DBSTATUS_CACHE_MISS, &current, &highest, 1)
                _ = try connection.query(sql, parameters)
                _ = sqlite3_db_status(connection.handle, SQLITE_DBSTATUS_CACHE_MISS, &current, &highest, 0)
                return current
            }
            let counts = try pagesRead(JobStore.depthCountsSQL)
            #expect(counts > 0 && counts < 60, "read \(counts) pages for \(jobs) jobs")
            // The check can fail: a count that needs a row's column reads a page per job.
            let rows = try pagesRead("SELECT state, COUNT(*) AS n FROM jobs WHERE \(JobStore.inDueIndex) AND length(payload_json) > 0 GROUP BY state")
            #expect(rows > Int32(jobs), "read \(rows) pages")
            let oldest = try pagesRead(JobStore.oldestDueSQL, [1_000_000])
            #expect(oldest < 20, "read \(oldest) pages")
            // The same answers as before: every queued and dead job counted, the oldest due one found.
            let db = try SQLiteConnection(path: path)
            let depth = try JobStore.depth(db, now: 1_100)
            #expect(depth.counts == [.queued: 1_500, .dead: 500] && depth.oldestDueAgeMilliseconds == 99)
        }
    }

    /// An upgraded database: the done rows stored before migration 20 are counted once, and the
    /// other rows stay in `jobs_due`, so claims, listings and the depth read go on as before.
    @Test func migrationTwentyCountsTheDoneRowsStoredBeforeIt() throws {
        let db = try SQLiteConnection(path: ":memory:")
        _ = try Migrator.migrate(db, migrations: Array(HeraldSchema.migrations.prefix(19)))
        let rows: [(Int64, String, Int64?)] = [(1, "done", nil), (2, "queued", nil), (3, "done", nil), (4, "leased", 5), (5, "dead", nil),
                                               (6, "done", nil)]
        for (id, state, leaseUntil) in rows {
            try db.run("INSERT INTO jobs (id, kind, payload_json, state, attempts, run_at, lease_until, created_at) VALUES (?, 'k', '{}', ?, 1, 0, ?, 0)",
                       [id, state, leaseUntil])
        }
        #expect(try Migrator.migrate(db) == Array(20...HeraldSchema.migrations.count))
        #expect(try counts(db) == (3, 3, 3))
        let depth = try JobStore.depth(db, now: 10)
        #expect(depth.counts == [.done: 3, .queued: 1, .leased: 1, .dead: 1])
        #expect(try db.queryOne("SELECT count(*) FROM jobs INDEXED BY jobs_due WHERE \(JobStore.inDueIndex)")?[0, as: Int64.self] == 3)
        #expect(try JobStore.list(db, state: .done, limit: 2).map(\.id) == [6, 3])
        #expect(try JobStore.list(db, state: .done, limit: 5, beforeID: 3).map(\.id) == [1])
        #expect(try JobStore.list(db, state: .dead, limit: 5).map(\.id) == [5])
        let claimed = try JobStore.claim(db, kind: "k", limit: 5, leaseMilliseconds: 100, now: 10)
        #expect(claimed.map(\.id) == [2, 4])
        for job in claimed { #expect(try JobStore.complete(db, job.lease)) }
        #expect(try counts(db) == (5, 5, 5))
    }
}
