import HeraldCore
@testable import StorageSQLite
import Testing

/// Issue 17 (choke13): the writer's bound on when a `push.deliver` claim can find a job. It may
/// err early (one claim more), never late: every statement that makes a job due earlier lowers it.
@Suite struct JobClaimHorizonTests {
    private static let kind = DeliveryJobPayload.kind

    /// A migrated writer connection keeping a horizon, as `Database.open` makes it.
    private func writer() throws -> (SQLiteConnection, JobClaimHorizon) {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try Migrator.migrate(connection, migrations: HeraldSchema.migrations)
        let horizon = JobClaimHorizon(kind: Self.kind)
        connection.claimHorizon = horizon
        return (connection, horizon)
    }

    private func claim(_ db: SQLiteConnection, limit: Int = 10, kind: String = Self.kind, now: Int64) throws -> [JobRecord] {
        try db.transaction { db in try JobStore.claim(db, kind: kind, limit: limit, leaseMilliseconds: 60_000, now: now) }
    }

    @Test("unknown until a claim drains; a drained claim with nothing left knows no job is ever due")
    func unknownUntilAClaimDrains() throws {
        let (db, horizon) = try writer()
        #expect(!horizon.isQuiet(at: 0))
        #expect(try claim(db, now: 1_000).isEmpty)
        #expect(horizon.quietUntilMilliseconds == .max && horizon.isQuiet(at: 1_000))
    }

    @Test("a drained claim sets the bound to the earliest due time left: a queued job's run_at, a claimed job's lease end")
    func aDrainedClaimSetsTheNextDueTime() throws {
        let (db, horizon) = try writer()
        let now: Int64 = 1_000
        let due = try JobStore.enqueue(db, kind: Self.kind, payloadJSON: "{}", runAt: now, now: now)
        _ = try JobStore.enqueue(db, kind: Self.kind, payloadJSON: "{}", runAt: now + 5_000, now: now)
        #expect(try claim(db, now: now).map(\.id) == [due])
        #expect(horizon.quietUntilMilliseconds == now + 5_000)
        // With the queued one claimed too, the earliest left is the first claim's lease end.
        #expect(try claim(db, now: now + 5_000).count == 1)
        #expect(horizon.quietUntilMilliseconds == now + 60_000)
        // Another kind's claim (receipts) leaves it.
        _ = try claim(db, kind: PushReceiptJobPayload.kind, now: now + 5_000)
        #expect(horizon.quietUntilMilliseconds == now + 60_000)
    }

    @Test("a claim that takes as many as it may is no proof: the bound is forgotten")
    func aFullClaimForgets() throws {
        let (db, horizon) = try writer()
        for _ in 0..<3 { _ = try JobStore.enqueue(db, kind: Self.kind, payloadJSON: "{}", runAt: 0, now: 0) }
        #expect(try claim(db, limit: 3, now: 0).count == 3)
        #expect(!horizon.isQuiet(at: 0))
    }

    @Test("a job queued, leased at insert, retried, released or revived lowers the bound to when it is due")
    func everyWayAJobBecomesDueLowersTheBound() throws {
        let (db, horizon) = try writer()
        let now: Int64 = 10_000
        #expect(try claim(db, now: now).isEmpty)
        // Leased at insert: due when its lease ends.
        let leased = try JobStore.enqueueLeased(db, kind: Self.kind, payloadJSON: "{}", app: "default", leaseUntil: now + 30_000, now: now)
        #expect(horizon.quietUntilMilliseconds == now + 30_000)
        // Retried: due after its backoff.
        #expect(try JobStore.retry(db, leased.lease, runAt: now + 500, error: "ServiceUnavailable"))
        #expect(horizon.quietUntilMilliseconds == now + 500)
        // A drained claim before it is due puts the bound at its run_at, not later.
        #expect(try claim(db, now: now + 100).isEmpty)
        #expect(horizon.quietUntilMilliseconds == now + 500)
        // Queued due now (a scheduled one earlier than the bound lowers it as well).
        _ = try JobStore.enqueue(db, kind: Self.kind, payloadJSON: "{}", runAt: now + 200, now: now)
        #expect(horizon.quietUntilMilliseconds == now + 200)
        // Another kind's queued job does not.
        _ = try JobStore.enqueue(db, kind: PushReceiptJobPayload.kind, payloadJSON: "{}", runAt: now, now: now)
        #expect(horizon.quietUntilMilliseconds == now + 200)
        // Claimed, then released as at a start after a crash: due now.
        let taken = try claim(db, now: now + 500)
        #expect(taken.count == 2)
        #expect(try claim(db, now: now + 500).isEmpty)
        #expect(horizon.quietUntilMilliseconds == now + 500 + 60_000)
        #expect(try JobStore.releaseLeases(db, kind: Self.kind, now: now + 600) == 2)
        #expect(horizon.quietUntilMilliseconds == now + 600)
        // Dead letters revived: due now.
        let again = try claim(db, now: now + 600)
        #expect(again.count == 2)
        #expect(try claim(db, now: now + 600).isEmpty)
        #expect(horizon.isQuiet(at: now + 600))
        #expect(try JobStore.deadLetter(db, again[0].lease, error: "BadDeviceToken", now: now + 600))
        #expect(try JobStore.retryDead(db, id: again[0].id, now: now + 700))
        #expect(horizon.quietUntilMilliseconds == now + 700)
        #expect(try claim(db, now: now + 700).map(\.id) == [again[0].id])
        #expect(try JobStore.deadLetter(db, again[1].lease, error: "BadDeviceToken", now: now + 700))
        #expect(try claim(db, now: now + 700).isEmpty)
        #expect(try JobStore.retryDead(db, matching: DeadJobFilter(app: .default), now: now + 800) == 1)
        #expect(horizon.quietUntilMilliseconds == now + 800)
    }

    @Test("a job leased at insert that waits past its lease is due at its lease end: a drained claim's bound is no later (the lease floor)")
    func aJobLeasedAtInsertBoundsTheHorizonByItsLeaseEnd() throws {
        let (db, horizon) = try writer()
        let now: Int64 = 0
        let leased = try db.transaction { db in
            try JobStore.enqueueLeased(db, kind: Self.kind, payloadJSON: "{}", app: "default", leaseUntil: now + 30_000, now: now)
        }
        #expect(try claim(db, now: now + 1_000).isEmpty)
        #expect(horizon.quietUntilMilliseconds == now + 30_000)
        #expect(try claim(db, now: now + 30_000).map(\.id) == [leased.id])
    }

    @Test("SQLiteStorage hands its writer's horizon to the worker")
    func theStorageExposesItsHorizon() throws {
        let storage = try SQLiteStorage.open(path: ":memory:")
        defer { storage.close() }
        let horizon = try #require(storage.jobClaimHorizon)
        #expect(horizon.kind == Self.kind && !horizon.isQuiet(at: 0))
        _ = try storage.writeSync { tx in try tx.jobs.claim(kind: Self.kind, limit: 4, leaseMilliseconds: 1_000, now: 0) }
        #expect(horizon.isQuiet(at: 0))
        _ = try storage.writeSync { tx in try tx.jobs.enqueue(kind: Self.kind, payloadJSON: "{}", runAt: 5, now: 0) }
        #expect(horizon.quietUntilMilliseconds == 5)
    }
}
