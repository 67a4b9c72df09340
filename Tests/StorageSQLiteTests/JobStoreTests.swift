import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct JobStoreTests {
    private func withDatabase(_ body: (SQLiteConnection) throws -> Void) throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try Migrator.migrate(connection, migrations: HeraldSchema.migrations)
        try body(connection)
    }

    @Test func claimsOnlyDueJobsOldestFirstAndCountsAttempts() throws {
        try withDatabase { db in
            let late = try JobStore.enqueue(db, kind: "push.deliver", payloadJSON: "{}", runAt: 2_000, now: 0)
            let early = try JobStore.enqueue(db, kind: "push.deliver", payloadJSON: "{}", runAt: 1_000, now: 0)
            _ = try JobStore.enqueue(db, kind: "push.deliver", payloadJSON: "{}", runAt: 9_000, now: 0)
            _ = try JobStore.enqueue(db, kind: "other", payloadJSON: "{}", runAt: 0, now: 0)
            let claimed = try JobStore.claim(db, kind: "push.deliver", limit: 10, leaseMilliseconds: 30_000, now: 5_000)
            #expect(claimed.map(\.id) == [early, late])
            #expect(claimed.allSatisfy { $0.state == .leased && $0.attempts == 1 && $0.leaseUntil == 35_000 })
            #expect(try JobStore.claim(db, kind: "push.deliver", limit: 10, leaseMilliseconds: 30_000, now: 5_000).isEmpty)
        }
    }

    @Test func anExpiredLeaseMakesTheJobDueAgain() throws {
        try withDatabase { db in
            let id = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 0, now: 0)
            _ = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 10)
            #expect(try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 1_009).isEmpty)
            let again = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 1_010)
            #expect(again.map(\.id) == [id])
            #expect(again.first?.attempts == 2)
        }
    }

    /// Expired leases are found through the partial index of leased rows (migration 10): a claim
    /// takes them oldest due first beside queued jobs, with live leases and finished jobs left out.
    @Test func expiredLeasesAmongLiveOnesAreClaimedOldestDueFirst() throws {
        try withDatabase { db in
            let ids = try (0..<6).map { i throws(SQLiteError) in
                try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: Int64(i), now: 0)
            }
            let short = try JobStore.claim(db, kind: "k", limit: 3, leaseMilliseconds: 100, now: 10)   // ids 0–2, until 110
            let long = try JobStore.claim(db, kind: "k", limit: 2, leaseMilliseconds: 10_000, now: 10) // ids 3–4
            #expect(short.map(\.id) == Array(ids[0..<3]) && long.map(\.id) == Array(ids[3..<5]))
            #expect(try JobStore.complete(db, short[1].lease))
            let leased = try db.queryOne("SELECT COUNT(*) AS n FROM jobs INDEXED BY jobs_due WHERE state = 'leased' AND \(JobStore.indexed)")
            #expect(try leased?["n", as: Int64.self] == 4)
            #expect(try JobStore.claim(db, kind: "k", limit: 10, leaseMilliseconds: 100, now: 109).map(\.id) == [ids[5]])
            let again = try JobStore.claim(db, kind: "k", limit: 10, leaseMilliseconds: 100, now: 110)
            #expect(again.map(\.id) == [ids[0], ids[2]])
            #expect(again.map(\.attempts) == [2, 2])
        }
    }

    /// The claim reads its rows and leases them by id (issue 17); what it returns must be the
    /// rows as stored after it, every column, for queued jobs, expired leases and revived dead
    /// letters alike.
    @Test func aClaimReturnsTheJobsAsStoredAfterIt() throws {
        try withDatabase { db in
            let fresh = try JobStore.enqueue(db, kind: "k", payloadJSON: #"{"a":1}"#, app: "chat", runAt: 5, now: 1)
            let retried = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 0, now: 0)
            let first = try #require(try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 2).first)
            #expect(first.id == retried)
            #expect(try JobStore.retry(db, first.lease, runAt: 6, error: "503", attempt: .uncounted))
            let revived = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 0, now: 0)
            let dying = try #require(try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 3).first)
            #expect(dying.id == revived)
            #expect(try JobStore.deadLetter(db, dying.lease, error: "BadDeviceToken", now: 4))
            #expect(try JobStore.retryDead(db, id: revived, now: 4))
            let claimed = try JobStore.claim(db, kind: "k", limit: 10, leaseMilliseconds: 1_000, now: 10)
            #expect(claimed.map(\.id) == [revived, fresh, retried])
            for job in claimed {
                #expect(try JobStore.find(db, id: job.id) == job)
            }
            #expect(claimed.map(\.firstAttemptAt) == [10, 10, 2])
            #expect(claimed.map(\.attempts) == [1, 1, 2] && claimed.map(\.uncountedAttempts) == [0, 0, 1])
            #expect(claimed[1].app == "chat" && claimed[1].payloadJSON == #"{"a":1}"# && claimed[2].lastError == "503")
        }
    }

    /// Queued jobs and expired leases are read apart and merged: `limit` cuts the merged due
    /// order, not either list, and a job left out stays as it was.
    @Test func aClaimCutsQueuedAndExpiredJobsInOneDueOrder() throws {
        try withDatabase { db in
            let ids = try [0, 10, 20, 30].map { runAt throws(SQLiteError) in
                try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: Int64(runAt), now: 0)
            }
            // ids[0] and ids[2] leased until 100; ids[1] and ids[3] stay queued.
            #expect(try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 100, now: 0).map(\.id) == [ids[0]])
            try db.run("UPDATE jobs SET state = 'leased', lease_until = 100, attempts = 1 WHERE id = ?", [ids[2]])
            #expect(try JobStore.claim(db, kind: "k", limit: 0, leaseMilliseconds: 100, now: 200).isEmpty)
            let claimed = try JobStore.claim(db, kind: "k", limit: 3, leaseMilliseconds: 100, now: 200)
            #expect(claimed.map(\.id) == [ids[0], ids[1], ids[2]])
            #expect(claimed.map(\.attempts) == [2, 1, 2])
            #expect(try JobStore.find(db, id: ids[3])?.state == .queued && JobStore.find(db, id: ids[3])?.attempts == 0)
            #expect(try JobStore.claim(db, kind: "k", limit: 3, leaseMilliseconds: 100, now: 200).map(\.id) == [ids[3]])
        }
    }

    /// A claim that fails part-way leases nothing: outside a transaction it opens its own, and
    /// inside one the caller's rollback takes its updates back.
    @Test func aClaimThatFailsLeasesNothing() throws {
        try withDatabase { db in
            let ids = try (0..<3).map { i throws(SQLiteError) in
                try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: Int64(i), now: 0)
            }
            try db.run("CREATE TRIGGER refuse AFTER UPDATE OF state ON jobs WHEN new.id = \(ids[1]) BEGIN SELECT RAISE(ABORT, 'refused'); END")
            #expect(throws: SQLiteError.self) { try JobStore.claim(db, kind: "k", limit: 3, leaseMilliseconds: 100, now: 10) }
            #expect(!db.isInTransaction)
            #expect(throws: SQLiteError.self) {
                try db.transaction { db in try JobStore.claim(db, kind: "k", limit: 3, leaseMilliseconds: 100, now: 10) }
            }
            for id in ids {
                let job = try #require(try JobStore.find(db, id: id))
                #expect(job.state == .queued && job.attempts == 0 && job.leaseUntil == nil)
            }
            try db.run("DROP TRIGGER refuse")
            #expect(try JobStore.claim(db, kind: "k", limit: 3, leaseMilliseconds: 100, now: 10).map(\.id) == ids)
        }
    }

    @Test func retryDeadLetterResurrectAndComplete() throws {
        try withDatabase { db in
            let id = try JobStore.enqueue(db, kind: "k", payloadJSON: "{\"a\":1}", runAt: 0, now: 0)
            var claimed = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 0)
            #expect(try JobStore.retry(db, claimed[0].lease, runAt: 500, error: "503 from provider"))
            var job = try #require(try JobStore.find(db, id: id))
            #expect(job.state == .queued && job.runAt == 500 && job.lastError == "503 from provider" && job.leaseUntil == nil)
            claimed = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 500)
            #expect(try JobStore.deadLetter(db, claimed[0].lease, error: "InvalidProviderToken", now: 600))
            #expect(try JobStore.list(db, state: .dead, limit: 10).map(\.id) == [id])
            #expect(try JobStore.find(db, id: id)?.deadAt == 600)
            #expect(try JobStore.retryDead(db, id: id, now: 900))
            #expect(!(try JobStore.retryDead(db, id: id, now: 900)), "only dead jobs come back")
            job = try #require(try JobStore.find(db, id: id))
            #expect(job.state == .queued && job.attempts == 0 && job.runAt == 900 && job.deadAt == nil)
            claimed = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 900)
            #expect(try JobStore.complete(db, claimed[0].lease))
            #expect(try JobStore.find(db, id: id)?.state == .done)
        }
    }

    @Test func aStaleClaimCannotCompleteRetryOrDeadLetterAJobAnotherClaimTookOver() throws {
        try withDatabase { db in
            let clock = ManualClock(unixMilliseconds: 10_000)
            let id = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 0, now: clock.unixMilliseconds)
            let first = try #require(try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: clock.unixMilliseconds).first)
            #expect(first.lease == JobLease(jobID: id, attempt: 1))
            clock.advance(byMilliseconds: 1_000)   // the first worker's lease runs out; another claims the job
            let second = try #require(try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: clock.unixMilliseconds).first)
            #expect(second.lease == JobLease(jobID: id, attempt: 2))
            #expect(!(try JobStore.complete(db, first.lease, note: "late")))
            #expect(!(try JobStore.retry(db, first.lease, runAt: 0, error: "late")))
            #expect(!(try JobStore.deadLetter(db, first.lease, error: "late", now: clock.unixMilliseconds)))
            #expect(try JobStore.find(db, id: id)?.state == .leased && JobStore.find(db, id: id)?.lastError == nil)
            #expect(try JobStore.complete(db, second.lease, note: "sent"))
            #expect(!(try JobStore.complete(db, second.lease)), "done already")
            // A lease that ran out with nobody taking the job over still records its outcome.
            let other = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 0, now: clock.unixMilliseconds)
            let late = try #require(try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: clock.unixMilliseconds).first)
            clock.advance(byMilliseconds: 5_000)
            #expect(late.id == other)
            #expect(try JobStore.retry(db, late.lease, runAt: clock.unixMilliseconds, error: "503"))
        }
    }

    @Test func deadLettersAreRetriedInBulkByKindAndTime() throws {
        try withDatabase { db in
            let clock = ManualClock(unixMilliseconds: 0)
            func dead(_ kind: String) throws -> Int64 {
                let id = try JobStore.enqueue(db, kind: kind, payloadJSON: "{}", runAt: 0, now: clock.unixMilliseconds)
                let job = try #require(try JobStore.claim(db, kind: kind, limit: 1, leaseMilliseconds: 1_000, now: clock.unixMilliseconds).first)
                #expect(try JobStore.deadLetter(db, job.lease, error: "x", now: clock.unixMilliseconds))
                return id
            }
            clock.set(unixMilliseconds: 1_000)
            let early = try dead("push.deliver")
            clock.set(unixMilliseconds: 5_000)
            let late = try dead("push.deliver")
            let otherKind = try dead("mail")
            let alive = try JobStore.enqueue(db, kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
            // Died before schema 6: no dead_at.
            try db.run("UPDATE jobs SET dead_at = NULL WHERE id = ?", [early])

            #expect(try JobStore.retryDead(db, matching: DeadJobFilter(kind: "push.deliver", deadSince: 5_000), now: 9_000) == 1)
            #expect(try JobStore.find(db, id: late)?.state == .queued)
            #expect(try JobStore.find(db, id: late)?.runAt == 9_000 && JobStore.find(db, id: late)?.attempts == 0)
            #expect(try JobStore.find(db, id: early)?.state == .dead, "no dead_at: only a filter without a time takes it")
            #expect(try JobStore.find(db, id: otherKind)?.state == .dead)
            #expect(try JobStore.retryDead(db, matching: DeadJobFilter(kind: "push.deliver"), now: 9_000) == 1)
            #expect(try JobStore.find(db, id: early)?.state == .queued)
            #expect(try JobStore.retryDead(db, matching: DeadJobFilter(), now: 9_000) == 1)
            #expect(try JobStore.list(db, state: .dead, limit: 10).isEmpty)
            #expect(try JobStore.find(db, id: alive)?.state == .queued && JobStore.find(db, id: alive)?.runAt == 0)
        }
    }

    @Test func deadLettersAreRetriedInBulkByProviderReasonAndTimeRange() throws {
        try withDatabase { db in
            func dead(at time: Int64, provider: String?, reason: String) throws -> Int64 {
                let id = try JobStore.enqueue(db, kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
                let job = try #require(try JobStore.claim(db, kind: "push.deliver", limit: 1, leaseMilliseconds: 1_000, now: time).first)
                #expect(job.firstAttemptAt == time)
                let cause = DeadLetterCause(provider: provider, reason: reason)
                #expect(try JobStore.deadLetter(db, job.lease, error: "\(reason) (after 1 attempts)", cause: cause, now: time))
                #expect(try JobStore.find(db, id: id)?.deadCause == cause)
                return id
            }
            let apnsOutage = try dead(at: 1_000, provider: "apns", reason: "ServiceUnavailable")
            let apnsLater = try dead(at: 5_000, provider: "apns", reason: "ServiceUnavailable")
            let fcmOutage = try dead(at: 1_000, provider: "fcm", reason: "UNAVAILABLE")
            let apnsConfig = try dead(at: 1_000, provider: "apns", reason: "InvalidProviderToken")

            let outage = DeadJobFilter(deadSince: 500, deadUntil: 5_000, provider: "apns", reason: "ServiceUnavailable")
            #expect(try JobStore.retryDead(db, matching: outage, now: 9_000) == 1)
            let revived = try #require(try JobStore.find(db, id: apnsOutage))
            #expect(revived.state == .queued && revived.attempts == 0 && revived.uncountedAttempts == 0)
            #expect(revived.firstAttemptAt == nil && revived.deadAt == nil && revived.deadCause == nil, "a fresh retry budget")
            #expect(try JobStore.find(db, id: apnsLater)?.state == .dead, "dead_until is exclusive")
            #expect(try JobStore.find(db, id: fcmOutage)?.state == .dead && JobStore.find(db, id: apnsConfig)?.state == .dead)
            #expect(try JobStore.retryDead(db, matching: DeadJobFilter(provider: "fcm"), now: 9_000) == 1)
            #expect(try JobStore.retryDead(db, matching: DeadJobFilter(reason: "InvalidProviderToken"), now: 9_000) == 1)
            #expect(try JobStore.list(db, state: .dead, limit: 10).map(\.id) == [apnsLater])
        }
    }

    @Test func anUncountedRetryKeepsTheFencingNumber() throws {
        try withDatabase { db in
            _ = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 0, now: 0)
            let first = try #require(try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 10).first)
            #expect(try JobStore.retry(db, first.lease, runAt: 20, error: "provider_unreachable", attempt: .uncounted))
            let second = try #require(try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 30).first)
            #expect(second.attempts == 2 && second.uncountedAttempts == 1 && second.countedAttempts == 1)
            #expect(second.firstAttemptAt == 10, "the budget runs from the first claim")
            #expect(!(try JobStore.retry(db, first.lease, runAt: 0, error: "late", attempt: .uncounted)), "fenced by attempts")
            #expect(try JobStore.find(db, id: second.id)?.uncountedAttempts == 1)
        }
    }

    @Test func migrationSevenKeepsTheCauseOfJobsAlreadyDead() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try Migrator.migrate(connection, migrations: Array(HeraldSchema.migrations.prefix(6)))
        try connection.run("""
            INSERT INTO devices (id, user_id, platform, provider, token, created_at, last_seen_at) VALUES ('d-1', 'u', 'ios', 'apns', 'ab', 0, 0)
            """)
        for (id, device, error) in [(1, "d-1", "ServiceUnavailable (after 5 attempts)"), (2, "d-gone", "transport_error: CURLE_HTTP2 (after 5 attempts)")] {
            try connection.run("""
                INSERT INTO jobs (id, kind, payload_json, state, attempts, run_at, last_error, created_at, dead_at)
                VALUES (?, 'push.deliver', ?, 'dead', 5, 0, ?, 0, 100)
                """, [Int64(id), "{\"device_id\":\"\(device)\"}", error])
        }
        #expect(try Migrator.migrate(connection) == Array(7...HeraldSchema.migrations.count))
        #expect(try JobStore.find(connection, id: 1)?.deadCause == DeadLetterCause(provider: "apns", reason: "ServiceUnavailable"))
        #expect(try JobStore.find(connection, id: 2)?.deadCause == DeadLetterCause(provider: nil, reason: "transport_error"))
    }

    @Test func cancelOnlyTouchesJobsNotYetStarted() throws {
        try withDatabase { db in
            let waiting = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 3_000, now: 0)
            let started = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 0, now: 0)
            _ = try JobStore.claim(db, kind: "k", limit: 10, leaseMilliseconds: 1_000, now: 0)
            #expect(try JobStore.cancel(db, id: waiting, reason: "suppressed_acked"))
            #expect(!(try JobStore.cancel(db, id: started, reason: "suppressed_acked")))
            #expect(try JobStore.find(db, id: waiting)?.lastError == "suppressed_acked")
        }
    }

    @Test func depthCountsStatesAndTheOldestDueJob() throws {
        try withDatabase { db in
            _ = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 100, now: 0)
            _ = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 400, now: 0)
            _ = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 9_000, now: 0)
            let (counts, age) = try JobStore.depth(db, now: 1_000)
            #expect(counts[.queued] == 3)
            #expect(age == 900)
        }
    }

    /// The oldest due job is found kind by kind (ops11): the earliest due of every kind, whichever
    /// kind sorts first, jobs not yet due or not queued left out; none due is age 0.
    @Test func theOldestDueJobIsTheEarliestOfEveryKind() throws {
        try withDatabase { db in
            #expect(try JobStore.depth(db, now: 1_000).oldestDueAgeMilliseconds == 0)
            _ = try JobStore.enqueue(db, kind: "b", payloadJSON: "{}", runAt: 5_000, now: 0)
            #expect(try JobStore.depth(db, now: 1_000).oldestDueAgeMilliseconds == 0)
            _ = try JobStore.enqueue(db, kind: "b", payloadJSON: "{}", runAt: 700, now: 0)
            _ = try JobStore.enqueue(db, kind: "c", payloadJSON: "{}", runAt: 300, now: 0)
            _ = try JobStore.enqueue(db, kind: "a", payloadJSON: "{}", runAt: 600, now: 0)
            #expect(try JobStore.depth(db, now: 1_000).oldestDueAgeMilliseconds == 700)
            // Claimed (leased), kind c's job is no longer queued: kind a's is the oldest.
            #expect(try JobStore.claim(db, kind: "c", limit: 5, leaseMilliseconds: 1_000, now: 1_000).count == 1)
            #expect(try JobStore.depth(db, now: 1_000).oldestDueAgeMilliseconds == 400)
            #expect(try JobStore.depth(db, now: 650).oldestDueAgeMilliseconds == 50)
        }
    }

    @Test func listPagesNewestFirst() throws {
        try withDatabase { db in
            var ids: [Int64] = []
            for _ in 0..<5 {
                let id = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 0, now: 0)
                let claimed = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 0)
                #expect(try JobStore.deadLetter(db, claimed[0].lease, error: "x", now: 0))
                ids.append(id)
            }
            let first = try JobStore.list(db, state: .dead, limit: 2)
            #expect(first.map(\.id) == [ids[4], ids[3]])
            let next = try JobStore.list(db, state: .dead, limit: 2, beforeID: first.last?.id)
            #expect(next.map(\.id) == [ids[2], ids[1]])
        }
    }

    /// ADR 0006: a job is its app's. Listing, finding and retrying (one or in bulk) see only the
    /// app asked for; the depth of the queue stays every app's.
    @Test func jobsAreListedFoundAndRetriedWithinTheirAppOnly() throws {
        try withDatabase { db in
            func dead(app: String) throws -> Int64 {
                let id = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", app: app, runAt: 0, now: 0)
                let claimed = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 0)
                #expect(claimed.map(\.id) == [id])
                #expect(try JobStore.deadLetter(db, claimed[0].lease, error: "ServiceUnavailable", now: 10))
                return id
            }
            let a1 = try dead(app: "default"), b1 = try dead(app: "chat"), a2 = try dead(app: "default"), b2 = try dead(app: "chat")
            #expect(try JobStore.find(db, id: b1)?.app == "chat")
            #expect(try JobStore.list(db, app: "default", state: .dead, limit: 10).map(\.id) == [a2, a1])
            #expect(try JobStore.list(db, app: "chat", state: .dead, limit: 10).map(\.id) == [b2, b1])
            #expect(try JobStore.list(db, app: "chat", state: .dead, limit: 1, beforeID: b2).map(\.id) == [b1])
            #expect(try JobStore.list(db, app: "other", state: .dead, limit: 10).isEmpty)
            #expect(try JobStore.find(db, id: b1, app: "default") == nil)
            #expect(try JobStore.find(db, id: b1, app: "chat")?.id == b1)
            #expect(!(try JobStore.retryDead(db, id: b1, app: "default", now: 20)), "another app's job is not retried")
            #expect(try JobStore.find(db, id: b1)?.state == .dead)
            #expect(try JobStore.retryDead(db, id: b1, app: "chat", now: 20))
            #expect(try JobStore.retryDead(db, matching: DeadJobFilter(app: .default), now: 30) == 2)
            #expect(try JobStore.find(db, id: b2)?.state == .dead, "a bulk retry is one app's")
            #expect(try JobStore.retryDead(db, matching: DeadJobFilter(app: try #require(AppID("chat"))), now: 30) == 1)
            #expect(try [a1, a2, b1, b2].map { id in try JobStore.find(db, id: id)?.state } == [.queued, .queued, .queued, .queued])
            #expect(try JobStore.depth(db, now: 30).counts[.queued] == 4)
        }
    }

    /// Migration 13: jobs already queued take their device's app while the device exists; jobs of
    /// a device that is gone, other kinds and unreadable payloads stay `default`.
    @Test func migrationThirteenGivesExistingJobsTheirDevicesApp() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try Migrator.migrate(connection, migrations: Array(HeraldSchema.migrations.prefix(12)))
        try connection.run("""
            INSERT INTO devices (id, app, user_id, platform, provider, token, created_at, last_seen_at)
            VALUES ('d-chat', 'chat', 'u', 'ios', 'apns', 'ab', 0, 0), ('d-default', 'default', 'u', 'ios', 'apns', 'cd', 0, 0)
            """)
        let rows: [(Int64, String, String)] = [(1, "push.deliver", #"{"apns_id":"x","device_id":"d-chat"}"#),
                                               (2, "push.deliver", #"{"apns_id":"x","device_id":"d-default"}"#),
                                               (3, "push.deliver", #"{"apns_id":"x","device_id":"d-gone"}"#),
                                               (4, "push.deliver", "not json"),
                                               (5, "push.receipt", #"{"device_id":"d-chat"}"#)]
        for (id, kind, payload) in rows {
            try connection.run("INSERT INTO jobs (id, kind, payload_json, state, run_at, created_at) VALUES (?, ?, ?, 'queued', 0, 0)",
                               [id, kind, payload])
        }
        #expect(try Migrator.migrate(connection) == Array(13...HeraldSchema.migrations.count))
        #expect(try (1...5).map { id in try JobStore.find(connection, id: Int64(id))?.app } == ["chat", "default", "default", "default", "default"])
    }

    /// Migration 16 (issue 17): one index for due jobs and expired leases. Jobs stored under 15
    /// are claimed as before (a lapsed lease rescued, queued ones in due order, a live lease
    /// kept), a stray lease end on a job that is not leased is cleared, and the claim's reads
    /// are index range scans without a sort of the queued ones.
    @Test func migrationSixteenKeepsClaimsAsTheyWere() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try Migrator.migrate(connection, migrations: Array(HeraldSchema.migrations.prefix(15)))
        let rows: [(Int64, String, Int64, Int64?)] = [(1, "queued", 30, nil), (2, "leased", 5, 50), (3, "leased", 1, 500),
                                                      (4, "queued", 10, nil), (5, "done", 0, 7), (6, "queued", 200, nil)]
        for (id, state, runAt, leaseUntil) in rows {
            try connection.run("INSERT INTO jobs (id, kind, payload_json, state, attempts, run_at, lease_until, created_at) VALUES (?, 'k', '{}', ?, 1, ?, ?, 0)",
                               [id, state, runAt, leaseUntil])
        }
        #expect(try Migrator.migrate(connection) == Array(16...HeraldSchema.migrations.count))
        #expect(try JobStore.find(connection, id: 5)?.leaseUntil == nil)
        let claimed = try JobStore.claim(connection, kind: "k", limit: 10, leaseMilliseconds: 100, now: 100)
        #expect(claimed.map(\.id) == [2, 4, 1])     // by run_at: 5, 10, 30; job 3 holds its lease, job 6 is not due
        #expect(claimed.allSatisfy { $0.leaseUntil == 200 })
        #expect(try JobStore.claim(connection, kind: "k", limit: 10, leaseMilliseconds: 100, now: 199).isEmpty)
        #expect(try JobStore.claim(connection, kind: "k", limit: 10, leaseMilliseconds: 100, now: 200).map(\.id) == [2, 4, 1, 6])
        let depth = try JobStore.depth(connection, now: 600)
        #expect(depth.counts[.leased] == 5 && depth.oldestDueAgeMilliseconds == 0)
        let plan = try connection.query("EXPLAIN QUERY PLAN SELECT id FROM jobs INDEXED BY jobs_due WHERE state = 'queued' AND \(JobStore.indexed) AND kind = 'k' AND \(JobStore.dueAt) <= 1 ORDER BY \(JobStore.dueAt), id LIMIT 5")
        #expect(try !plan.contains { try $0["detail", as: String.self].contains("TEMP B-TREE") })
    }
}
