import Foundation
import Synchronization
import HeraldCore
@testable import StoragePostgres
import Testing

/// ADR 0023: a plan held under a `live:` name is free for any node as soon as no session holds
/// the name's advisory lock (its process died), and held under its lease while one does; other
/// names keep the lease only; the holder takes its lock again when its connection is ended.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PlanHolderTests {
    private let hour: Int64 = 3_600_000

    /// A node on a new database, and the database's URL.
    private func node() throws -> (PostgresStorage, String) {
        let server = try #require(PostgresServer.shared)
        let url = try server.makeDatabase()
        return (try PostgresStorage.open(PostgresConfiguration(url: url), nodeID: "node-b"), url)
    }

    private func plan(_ storage: PostgresStorage, heldBy holder: String, until lease: Int64) throws -> Int64 {
        try storage.writeSync { tx in try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: 0, claimedBy: holder, leaseUntil: lease)) }
    }

    /// Node A holding its plans (`holdPlans`) beside node B, on a new database; both closed after `body`.
    private func withHolder(_ body: (_ a: PostgresStorage, _ b: PostgresStorage, _ holder: String) throws -> Void) throws {
        let (b, url) = try node()
        defer { b.close() }
        let a = try PostgresStorage.open(PostgresConfiguration(url: url), nodeID: "node-a")
        defer { a.close() }
        try body(a, b, try a.holdPlans())
    }

    @Test func aPlanWhoseHoldersSessionEndedIsFreeAtOnceAndOneWhoseHolderLivesWaitsItsLease() throws {
        try withHolder { a, b, holder in
            #expect(holder.hasPrefix(PostgresPlanRepository.livePrefix))
            #expect(try a.holdPlans() == holder, "one name a process")
            let live = try plan(a, heldBy: holder, until: hour)
            #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: live, now: 1_000) } == .held)
            #expect(try b.writeSync { tx in try tx.plans.claim(by: "node-b", limit: 10, leaseMilliseconds: 1_000, now: 1_000) }.isEmpty,
                    "a live holder's plan is left alone")
            // A's process ends: its session, and with it the lock, is gone (the server's backend ends
            // within milliseconds of reading the closed socket).
            a.close()
            #expect(eventually { (try? b.writeSync { tx in try tx.plans.holding(ofPlan: live, now: 1_000) }) == .orphaned })
            let taken = try b.writeSync { tx in try tx.plans.claim(by: "node-b", limit: 10, leaseMilliseconds: 1_000, now: 1_000) }
            #expect(taken.map(\.id) == [live] && taken.first?.claimedBy == "node-b")
            // Now B's (a name without a session lock: its lease only), and gone once planned.
            #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: live, now: 1_999) } == .held)
            #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: live, now: 2_000) } == .free)
            #expect(try b.writeSync { tx in try tx.plans.markPlanned(id: live, by: "node-b") })
            #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: live, now: 0) } == .free)
        }
    }

    @Test func everyHoldersLockIsReadAsItsOwnWhateverTheSignOfItsKey() throws {
        let (b, url) = try node()
        defer { b.close() }
        // Sixteen holders' locks on one session (a process's keys are one each; the reading of
        // `pg_locks` must find each whatever its halves).
        let session = try Connector(configuration: PostgresConfiguration(url: url)).connect()
        let names = (0..<16).map { "\(PostgresPlanRepository.livePrefix)host:\($0):\(UInt64.random(in: 1...UInt64.max))" }
        var signs: Set<Bool> = []
        for name in names {
            let row = try #require(try session.queryOne("""
                SELECT pg_try_advisory_lock(hashtextextended($1::text, \(SessionLock.seed))) AS taken,
                       hashtextextended($1::text, \(SessionLock.seed)) < 0 AS negative
                """, [name]))
            #expect(try row.value("taken", as: Bool.self))
            signs.insert(try row.value("negative", as: Bool.self))
        }
        let ids = try names.map { try plan(b, heldBy: $0, until: hour) }
        // A name of an older build (no session lock) and a released plan, beside them.
        let legacy = try plan(b, heldBy: "node-old", until: hour)
        let released = try plan(b, heldBy: "node-old", until: hour)
        try b.writeSync { tx in _ = try tx.plans.release(ids: [released], by: "node-old") }
        if signs.count < 2 { Issue.record("sixteen random keys of one sign: the test shows less than it should") }
        for id in ids { #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: id, now: 0) } == .held) }
        #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: legacy, now: 0) } == .held)
        #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: released, now: 0) } == .free)
        #expect(try b.writeSync { tx in try tx.plans.claim(by: "node-b", limit: 100, leaseMilliseconds: 1_000, now: 0) }.map(\.id) == [released])

        session.close()
        #expect(eventually { (try? b.writeSync { tx in try tx.plans.holding(ofPlan: ids[0], now: 0) }) == .orphaned })
        for id in ids { #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: id, now: 0) } == .orphaned) }
        #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: legacy, now: 0) } == .held, "a name without a lock keeps its lease")
        #expect(try b.writeSync { tx in try tx.plans.claim(by: "node-b", limit: 100, leaseMilliseconds: 1_000, now: 0) }.map(\.id) == ids)
        // Its lease over, it is taken (with B's own, whose 1 s leases ran out too).
        #expect(try b.writeSync { tx in try tx.plans.claim(by: "node-b", limit: 100, leaseMilliseconds: 1_000, now: hour) }.map(\.id)
                    == ids + [legacy, released])
    }

    @Test func aLockThatCannotBeTakenFailsTheStartWithItsReason() throws {
        // PostgreSQL unreachable: the connection's error, as the storage's own (`herald serve` exits 2).
        var unreachable = PostgresConfiguration(url: "postgres://postgres@127.0.0.1:1/none")
        unreachable.connectTimeoutSeconds = 2
        #expect(throws: PostgresError.self) { _ = try SessionLock.start(name: "live:x", connector: Connector(configuration: unreachable)) }
        // The name's key held by another session all along (a collision): busy after its tries.
        let (b, url) = try node()
        defer { b.close() }
        let other = try Connector(configuration: PostgresConfiguration(url: url)).connect()
        defer { other.close() }
        _ = try other.query("SELECT pg_advisory_lock(hashtextextended($1::text, \(SessionLock.seed)))", ["live:taken"])
        do {
            _ = try SessionLock.start(name: "live:taken", connector: Connector(configuration: PostgresConfiguration(url: url)))
            Issue.record("took a lock another session holds")
        } catch let error as PostgresError {
            guard case .server(let state, _, _) = error, state == "55P03" else { Issue.record("got \(error)"); return }
            guard case .busy = StorageError(error) else { Issue.record("not busy: \(StorageError(error))"); return }
        }
    }

    @Test func aClaimReadsTheLocksOnceWhateverTheNumberOfPlans() throws {
        let server = try #require(PostgresServer.shared)
        let connection = try server.migratedConnection()
        defer { connection.close() }
        for sql in [PostgresPlanRepository.claimSQL, PostgresPlanRepository.holdingSQL] {
            let parameters: [any PostgresBindable] = sql == PostgresPlanRepository.claimSQL ? [Int64(0), Int64(0), 10, "n", Int64(1)] : [Int64(1), Int64(0)]
            let plan = try connection.plan(of: sql, parameters)
            // The lock table is read once, into the materialized CTE, which rows then look up: a
            // `pg_locks` subquery per row would copy the whole lock table for each.
            let lines = plan.split(separator: "\n")
            let cte = try #require(lines.firstIndex { $0.contains("CTE live_locks") }, "\(plan)")
            #expect(lines[cte + 1].contains("Function Scan on pg_lock_status") && lines.count(where: { $0.contains("pg_lock_status") }) == 1,
                    "\(plan)")
        }
    }

    @Test func aHolderWhoseSessionTheServerEndedTakesItsLockAgain() throws {
        try withHolder { a, b, holder in
            let id = try plan(a, heldBy: holder, until: hour)
            let lockSQL = """
                SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                  AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1::text, \(SessionLock.seed))
                """
            let first: Int = try #require(try b.readSync { tx in
                try (tx as? PostgresTransaction)?.connection.queryOne(lockSQL, [holder])?.value("pid", as: Int.self)
            })
            #expect(a.holdsPlanLock)
            // The server ends the holder's session (an administrator, a failover): the lock goes with
            // it, and comes back on a new session while the process lives.
            try b.writeSync { tx in
                _ = try (tx as? PostgresTransaction)?.connection.query("SELECT pg_terminate_backend($1::integer)", [first])
            }
            #expect(eventually {
                let pid = try? b.readSync { tx in
                    try (tx as? PostgresTransaction)?.connection.queryOne(lockSQL, [holder])?.value("pid", as: Int.self)
                }
                return pid != nil && pid != first
            }, "the lock was not taken again")
            #expect(a.holdsPlanLock)
            #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: id, now: 0) } == .held)
        }
    }

    /// Whether, within 10 s, one session waits for a shared lock on `holder`'s key (a watcher), as
    /// `storage` reads `pg_locks`.
    private func waitedOn(_ holder: String, seenBy storage: PostgresStorage) -> Bool {
        let waiting = """
            SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND mode = 'ShareLock'
              AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1::text, \(SessionLock.seed))
            """
        return eventually {
            (try? storage.readSync { tx in try (tx as? PostgresTransaction)?.connection.queryOne(waiting, [holder])?.value("n", as: Int.self) }) == 1
        }
    }

    @Test("ADR 0027: the watched holder is the next key after one's own, the ring wrapping; alone, none")
    func theWatchedHolderIsTheNextInTheRing() {
        #expect(HolderWatch.next(after: 5, in: [1, 5, 9, 7]) == 7)
        #expect(HolderWatch.next(after: 9, in: [1, 5, 9, 7]) == 1, "the last watches the first")
        #expect(HolderWatch.next(after: -3, in: [-8, -3, 4]) == 4)
        #expect(HolderWatch.next(after: 5, in: [5]) == nil)
        #expect(HolderWatch.next(after: 5, in: []) == nil)
    }

    @Test("ADR 0027: a node watching the holders hears at once that the one it watches died, not while it lives")
    func aWatcherHearsItsNeighboursDeathAtOnce() throws {
        try withHolder { a, b, holder in
            let heard = Counter()
            try b.watchPlanHolders { heard.add() }
            let id = try plan(a, heldBy: holder, until: hour)
            // B's watcher waits on A's lock (its only neighbour) in the server: a shared request, not granted.
            #expect(waitedOn(holder, seenBy: b), "B never waited on A's lock")
            #expect(heard.value == 0, "A lives")
            #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: id, now: 0) } == .held, "the wait does not make A look dead")
            a.close()
            #expect(eventually(5) { heard.value == 1 }, "A's death not heard")
            #expect(try b.writeSync { tx in try tx.plans.holding(ofPlan: id, now: 0) } == .orphaned, "released by the watcher before it tells")
        }
    }

    @Test("ADR 0027: a holder that joins after the watcher started (alone, watching nobody) is watched from its NOTIFY on, and its death heard")
    func aHolderThatJoinsLaterIsWatched() throws {
        let (b, url) = try node()
        defer { b.close() }
        let heard = Counter()
        try b.watchPlanHolders { heard.add() }
        let a = try PostgresStorage.open(PostgresConfiguration(url: url), nodeID: "node-a")
        defer { a.close() }
        let holder = try a.holdPlans()
        #expect(waitedOn(holder, seenBy: b), "B never waited on A's lock")
        a.close()
        #expect(eventually(5) { heard.value == 1 }, "A's death not heard")
    }
}

/// A count shared with a callback on another thread.
final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
