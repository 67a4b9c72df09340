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

    @Test func retryDeadLetterResurrectAndComplete() throws {
        try withDatabase { db in
            let id = try JobStore.enqueue(db, kind: "k", payloadJSON: "{\"a\":1}", runAt: 0, now: 0)
            _ = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 0)
            try JobStore.retry(db, id: id, runAt: 500, error: "503 from provider")
            var job = try #require(try JobStore.find(db, id: id))
            #expect(job.state == .queued && job.runAt == 500 && job.lastError == "503 from provider" && job.leaseUntil == nil)
            _ = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 500)
            try JobStore.deadLetter(db, id: id, error: "InvalidProviderToken")
            #expect(try JobStore.list(db, state: .dead, limit: 10).map(\.id) == [id])
            #expect(try JobStore.resurrect(db, id: id, now: 900))
            #expect(!(try JobStore.resurrect(db, id: id, now: 900)), "only dead jobs come back")
            job = try #require(try JobStore.find(db, id: id))
            #expect(job.state == .queued && job.attempts == 0 && job.runAt == 900)
            _ = try JobStore.claim(db, kind: "k", limit: 1, leaseMilliseconds: 1_000, now: 900)
            try JobStore.complete(db, id: id)
            #expect(try JobStore.find(db, id: id)?.state == .done)
        }
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

    @Test func listPagesNewestFirst() throws {
        try withDatabase { db in
            var ids: [Int64] = []
            for _ in 0..<5 {
                let id = try JobStore.enqueue(db, kind: "k", payloadJSON: "{}", runAt: 0, now: 0)
                try JobStore.deadLetter(db, id: id, error: "x")
                ids.append(id)
            }
            let first = try JobStore.list(db, state: .dead, limit: 2)
            #expect(first.map(\.id) == [ids[4], ids[3]])
            let next = try JobStore.list(db, state: .dead, limit: 2, beforeID: first.last?.id)
            #expect(next.map(\.id) == [ids[2], ids[1]])
        }
    }
}
