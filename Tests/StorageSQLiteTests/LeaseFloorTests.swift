import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

/// ADR 0017, migration 21: a job leased at insert stays out of `jobs_due` while it holds that
/// lease, and the lease floor (the lowest such job) is where every reader of leased jobs walks
/// from. The floor must never pass a job still leased at insert, whatever ends a transaction, and
/// every reader must still find those jobs.
@Suite struct LeaseFloorTests {
    private let kind = "push.deliver"

    private func migrated(_ path: String = ":memory:") throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path)
        _ = try Migrator.migrate(connection)
        return connection
    }

    private func leased(_ db: SQLiteConnection, _ n: Int, app: String = "default", payload: String = "{}", leaseUntil: Int64 = 1_000,
                        now: Int64 = 0) throws -> [JobRecord] {
        try (0..<n).map { _ throws(SQLiteError) in
            try JobStore.enqueueLeased(db, kind: kind, payloadJSON: payload, app: app, leaseUntil: leaseUntil, now: now)
        }
    }

    /// The floor's row as stored.
    private func stored(_ db: SQLiteConnection) throws -> Int64? {
        try db.queryOne("SELECT id FROM job_lease_floor")?[0]
    }

    /// The lowest job leased at insert, read the slow way.
    private func lowestLeasedAtInsert(_ db: SQLiteConnection) throws -> Int64? {
        try db.queryOne("SELECT min(id) FROM jobs WHERE state = 'leased' AND leased_at_insert = 1")?[0]
    }

    /// Rows of `jobs_due`, read through the index.
    private func indexed(_ db: SQLiteConnection, _ state: String) throws -> Int64 {
        try db.queryOne("SELECT count(*) FROM jobs INDEXED BY jobs_due WHERE state = '\(state)' AND \(JobStore.indexed)")?[0, as: Int64.self] ?? -1
    }

    @Test func theFloorRisesOnlyWhenItsOwnJobLeavesItsLease() throws {
        let db = try migrated()
        #expect(try stored(db) == nil)
        let jobs = try leased(db, 6)
        #expect(try stored(db) == jobs[0].id && LeaseFloor.committed(db) == .init(id: jobs[0].id, leaseUntil: 1_000))
        // Out of the index while leased at insert.
        #expect(try indexed(db, "leased") == 0)
        #expect(try JobStore.complete(db, jobs[2].lease))
        #expect(try stored(db) == jobs[0].id)
        #expect(try JobStore.complete(db, jobs[0].lease))
        #expect(try stored(db) == jobs[1].id, "past the done job 2 it walked over")
        #expect(try JobStore.retry(db, jobs[1].lease, runAt: 5, error: "503"))
        #expect(try stored(db) == jobs[3].id)
        #expect(try JobStore.deadLetter(db, jobs[3].lease, error: "BadDeviceToken", now: 0))
        #expect(try stored(db) == jobs[4].id)
        // The retried and the dead job are back in the index, with their flag cleared.
        #expect(try indexed(db, "queued") == 1 && indexed(db, "dead") == 1)
        #expect(try !JobStore.complete(db, jobs[1].lease), "fenced as before")
        #expect(try JobStore.complete(db, jobs[5].lease) && JobStore.complete(db, jobs[4].lease))
        #expect(try stored(db) == nil && LeaseFloor.committed(db) == .noJob)
        // None outstanding: the next job leased at insert sets it, whatever its id.
        let next = try leased(db, 1)[0]
        #expect(try stored(db) == next.id)
    }

    /// Random batches of inserts and completions, some in units rolled back alone, some whole
    /// transactions rolled back: after every transaction the stored and remembered floor is the
    /// lowest job still leased at insert, and a second connection reads the same.
    @Test func theFloorNeverPassesAJobStillLeasedAtInsert() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let db = try migrated(path)
            let reader = try SQLiteConnection(path: path, mode: .readOnly)
            var generator = SystemRandomNumberGenerator()
            var outstanding: [JobRecord] = []
            for round in 0..<60 {
                let abandon = round % 7 == 3
                var kept = outstanding
                _ = try? db.transaction { db throws in
                    for _ in 0..<Int.random(in: 0...12, using: &generator) {
                        kept.append(try JobStore.enqueueLeased(db, kind: kind, payloadJSON: "{}", app: "default", leaseUntil: 1_000, now: 0))
                    }
                    for _ in 0..<Int.random(in: 0...10, using: &generator) where !kept.isEmpty {
                        // Mostly the oldest, as sends end roughly in order.
                        let index = Bool.random(using: &generator) ? 0 : Int.random(in: 0..<kept.count, using: &generator)
                        let job = kept.remove(at: index)
                        if Int.random(in: 0..<5, using: &generator) == 0 {
                            // A unit that fails alone: its completion is undone, the job still leased.
                            _ = try? db.transaction { db throws in
                                #expect(try JobStore.complete(db, job.lease))
                                throw SQLiteError.misuse(message: "unit rolled back")
                            }
                            kept.append(job)
                        } else if Bool.random(using: &generator) {
                            #expect(try JobStore.complete(db, job.lease))
                        } else {
                            #expect(try JobStore.retry(db, job.lease, runAt: 0, error: "503"))
                        }
                    }
                    if abandon { throw SQLiteError.misuse(message: "transaction rolled back") }
                }
                if !abandon { outstanding = kept }
                let lowest = outstanding.map(\.id).min()
                #expect(try lowestLeasedAtInsert(db) == lowest)
                #expect(try stored(db) == lowest && LeaseFloor.committed(db).id == lowest)
                #expect(try LeaseFloor.walkStart(reader) == lowest)
                #expect(try indexed(db, "leased") == 0)
            }
        }
    }

    /// A job leased at insert and left in a transaction begun by a bare BEGIN (tests, tools): the
    /// floor is written with it and forgotten, so a rollback leaves no floor remembered wrongly.
    @Test func aBareTransactionRolledBackLeavesTheFloorAsCommitted() throws {
        let db = try migrated()
        let jobs = try leased(db, 3)
        try db.execute("BEGIN IMMEDIATE")
        #expect(try JobStore.complete(db, jobs[0].lease))
        #expect(try stored(db) == jobs[1].id)
        try db.execute("ROLLBACK")
        #expect(try stored(db) == jobs[0].id && LeaseFloor.committed(db).id == jobs[0].id)
    }

    /// A crash (the writer gone without a word) leaves jobs leased at insert; the next start
    /// releases them from the floor up, with the claimed ones, and claims them again.
    @Test func aCrashLeavesJobsLeasedAtInsertThatTheNextStartMakesDue() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            var ids: [Int64] = []
            do {
                let before = try migrated(path)
                // Done jobs below the floor: the walk never reads them.
                for job in try leased(before, 50) { #expect(try JobStore.complete(before, job.lease)) }
                let queued = try JobStore.enqueue(before, kind: kind, payloadJSON: "{}", runAt: 0, now: 0)
                let claimed = try JobStore.claim(before, kind: kind, limit: 1, leaseMilliseconds: 1_000, now: 0)
                #expect(claimed.map(\.id) == [queued])
                let atInsert = try leased(before, 20)
                for job in atInsert.filter({ $0.id % 3 == 0 }) { #expect(try JobStore.complete(before, job.lease)) }
                ids = [queued] + atInsert.filter { $0.id % 3 != 0 }.map(\.id)
                #expect(try stored(before) == ids[1])
            }
            let restarted = try migrated(path)
            #expect(try JobStore.depth(restarted, now: 10).counts[.leased] == ids.count)
            // The walk is a range of the primary key from the floor: the 50 done jobs below it unread.
            let plan = try restarted.query("EXPLAIN QUERY PLAN UPDATE jobs SET state = 'queued' WHERE \(JobStore.leasedAtInsert(from: 1)) AND kind = 'k'",
                                           [ids[1]]).map { try $0["detail", as: String.self] }
            #expect(plan == ["SEARCH jobs USING INTEGER PRIMARY KEY (rowid>?)"])
            #expect(try JobStore.releaseLeases(restarted, kind: kind, now: 10) == ids.count)
            #expect(try stored(restarted) == nil && indexed(restarted, "queued") == Int64(ids.count))
            let again = try JobStore.claim(restarted, kind: kind, limit: 100, leaseMilliseconds: 1_000, now: 10)
            #expect(again.map(\.id).sorted() == ids && again.allSatisfy { $0.attempts == 2 })
            #expect(try JobStore.releaseLeases(restarted, kind: kind, now: 20) == ids.count, "claimed ones: in the index")
        }
    }

    /// ADR 0007: a job leased at insert that was never sent (left past half its lease, a
    /// completion that failed) is claimed once its lease is over, and then is an indexed lease.
    @Test func aClaimTakesAJobLeasedAtInsertOnceItsLeaseIsOver() throws {
        let db = try migrated()
        let queuedEarly = try JobStore.enqueue(db, kind: kind, payloadJSON: "{}", runAt: 0, now: 0)
        let jobs = try leased(db, 3, leaseUntil: 1_000, now: 100)
        let queuedLate = try JobStore.enqueue(db, kind: kind, payloadJSON: "{}", runAt: 500, now: 0)
        #expect(try JobStore.complete(db, jobs[1].lease))
        #expect(try JobStore.claim(db, kind: kind, limit: 10, leaseMilliseconds: 1_000, now: 999).map(\.id) == [queuedEarly, queuedLate])
        #expect(try JobStore.claim(db, kind: "other", limit: 10, leaseMilliseconds: 1_000, now: 1_000).isEmpty)
        let claimed = try JobStore.claim(db, kind: kind, limit: 10, leaseMilliseconds: 1_000, now: 1_000)
        #expect(claimed.map(\.id) == [jobs[0].id, jobs[2].id])
        #expect(claimed.allSatisfy { $0.attempts == 2 && $0.leaseUntil == 2_000 && $0.firstAttemptAt == 100 })
        #expect(try stored(db) == nil && indexed(db, "leased") == 4)
        // The lease taken at insert no longer fences anything; the claim's does.
        #expect(try !JobStore.complete(db, jobs[0].lease))
        #expect(try JobStore.complete(db, claimed[0].lease))
        // The limit holds across the two reads, oldest due first.
        let more = try leased(db, 3, leaseUntil: 3_000, now: 2_000)
        // At 3,000 every lease so far is over: due order is run_at (0, 100, 500, then 2,000).
        #expect(try JobStore.claim(db, kind: kind, limit: 2, leaseMilliseconds: 1_000, now: 3_000).map(\.id) == [queuedEarly, jobs[2].id])
        #expect(try JobStore.claim(db, kind: kind, limit: 2, leaseMilliseconds: 1_000, now: 3_000).map(\.id) == [queuedLate, more[0].id])
        #expect(try stored(db) == more[1].id)
    }

    /// `/metrics`' leased count and `?state=leased`: claimed and leased-at-insert jobs together,
    /// newest first, paged, on the writer and on a reader's snapshot.
    @Test func listingsAndCountsFindJobsLeasedAtInsert() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let db = try migrated(path)
            let a = try leased(db, 2)
            let claimedID = try JobStore.enqueue(db, kind: kind, payloadJSON: "{}", runAt: 0, now: 0)
            _ = try JobStore.claim(db, kind: kind, limit: 1, leaseMilliseconds: 1_000, now: 0)
            let b = try leased(db, 2)
            let other = try leased(db, 1, app: "chat")
            let dead = try leased(db, 1)[0]
            #expect(try JobStore.deadLetter(db, dead.lease, error: "x", now: 0))
            let all = [b[1].id, b[0].id, claimedID, a[1].id, a[0].id]
            let reader = try SQLiteConnection(path: path, mode: .readOnly)
            for connection in [db, reader] {
                #expect(try JobStore.depth(connection, now: 0).counts == [.leased: 6, .dead: 1])
                #expect(try JobStore.list(connection, state: .leased, limit: 10).map(\.id) == all)
                #expect(try JobStore.list(connection, state: .leased, limit: 2).map(\.id) == Array(all[0..<2]))
                #expect(try JobStore.list(connection, state: .leased, limit: 2, beforeID: all[1]).map(\.id) == Array(all[2..<4]))
                #expect(try JobStore.list(connection, state: .leased, limit: 2, beforeID: all[3]).map(\.id) == [all[4]])
                #expect(try JobStore.list(connection, app: "chat", state: .leased, limit: 10).map(\.id) == other.map(\.id))
                #expect(try JobStore.list(connection, state: .dead, limit: 10).map(\.id) == [dead.id])
            }
            for job in a + b { #expect(try JobStore.complete(db, job.lease)) }
            #expect(try JobStore.depth(reader, now: 0).counts[.leased] == 2)
            #expect(try JobStore.list(reader, state: .leased, limit: 10).map(\.id) == [claimedID])
            #expect(try JobStore.list(reader, app: "chat", state: .leased, limit: 10).map(\.id) == [other[0].id])
        }
    }

    /// A token rotation (ADR 0014) moves a push leased at insert like any other owed push.
    @Test func aRotationMovesAJobLeasedAtInsert() throws {
        let db = try migrated()
        func payload(_ device: String, _ notification: String) -> String {
            DeliveryJobPayload(deviceID: device, apnsID: .random(), notification: PushNotification(title: "t", body: "b"),
                               origin: .init(notificationID: notification, userID: "u1", sessionID: "s1")).jsonText()
        }
        let atInsert = try leased(db, 1, payload: payload("old", "n1"))[0]
        let queued = try JobStore.enqueue(db, kind: kind, payloadJSON: payload("old", "n2"), runAt: 0, now: 0)
        let untouched = try leased(db, 1, payload: payload("else", "n3"))[0]
        #expect(try JobStore.movePushJobs(db, fromDevices: ["old"], toDevice: "new") == 2)
        for id in [atInsert.id, queued] {
            #expect(try JobStore.find(db, id: id)?.payloadJSON.contains(#""device_id":"new""#) == true)
        }
        #expect(try JobStore.find(db, id: untouched.id)?.payloadJSON.contains(#""device_id":"else""#) == true)
        // Moved in place: still leased at insert, under the same lease.
        #expect(try JobStore.complete(db, atInsert.lease))
    }

    /// An app's deletion takes its jobs leased at insert, the floor's among them.
    @Test func anAppsDeletionMovesTheFloorPastItsJobs() throws {
        let db = try migrated()
        let now: Int64 = 1_000
        try AppStore.create(db, AppRecord(id: AppID("chat")!, settings: AppSettings(), secrets: [:], serverKeys: [], createdAt: now, updatedAt: now))
        let chat = try leased(db, 3, app: "chat")
        let kept = try leased(db, 2)
        #expect(try stored(db) == chat[0].id)
        #expect(try AppStore.delete(db, AppID("chat")!))
        #expect(try stored(db) == kept[0].id && LeaseFloor.committed(db).id == kept[0].id)
    }

    /// A database migrated from 20: its leased jobs (claimed or leased at insert by an older
    /// build) stay in the index, and the start releases them as before.
    @Test func migrationTwentyOneKeepsEarlierLeasesInTheIndex() throws {
        let db = try SQLiteConnection(path: ":memory:")
        _ = try Migrator.migrate(db, migrations: Array(HeraldSchema.migrations.prefix(20)))
        try db.run("INSERT INTO jobs (kind, payload_json, state, attempts, run_at, lease_until, created_at) VALUES (?, '{}', 'leased', 1, 0, 500, 0)",
                   [kind])
        #expect(try Migrator.migrate(db) == Array(21...HeraldSchema.migrations.count))
        #expect(try indexed(db, "leased") == 1 && stored(db) == nil)
        #expect(try JobStore.claim(db, kind: kind, limit: 5, leaseMilliseconds: 100, now: 500).count == 1)
        #expect(try JobStore.releaseLeases(db, kind: kind, now: 600) == 1)
    }

    /// One process per database file (ADR 0017): a second lock is refused at once, naming the
    /// holder's pid; released (or its process gone), it can be taken again. In memory, none.
    @Test func theProcessLockIsHeldByOneHolderAtATime() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let first = try #require(try SQLiteProcessLock.acquire(databasePath: path))
            #expect(first.path == path + "-lock")
            #expect(throws: SQLiteProcessLock.Failure.held(databasePath: path, lockPath: path + "-lock", holderPID: getpid())) {
                try SQLiteProcessLock.acquire(databasePath: path)
            }
            first.release()
            let second = try #require(try SQLiteProcessLock.acquire(databasePath: path))
            second.release()
            #expect(try SQLiteProcessLock.acquire(databasePath: ":memory:") == nil)
            let missing = directory.appendingPathComponent("absent").databasePath()
            #expect(throws: SQLiteProcessLock.Failure.unusable(databasePath: missing, lockPath: missing + "-lock",
                                                                reason: "no such file or directory")) {
                try SQLiteProcessLock.acquire(databasePath: missing)
            }
        }
    }
}
