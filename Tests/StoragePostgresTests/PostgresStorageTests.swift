import Dispatch
import Foundation
import HeraldCore
@testable import StoragePostgres
import Testing

/// What only several nodes on one PostgreSQL show: two `PostgresStorage`s (two nodes) on one
/// database sharing the queue, plan leases and idempotency keys; migrations racing; the NOTIFY
/// wake-up; a server restart.
@Suite(.enabled(if: PostgresServer.isAvailable, Comment(rawValue: PostgresServer.unavailableReason ?? "")))
struct PostgresStorageTests {
    /// Two nodes on one new database.
    private func withTwoNodes(_ body: (PostgresStorage, PostgresStorage) throws -> Void) throws {
        let server = try #require(PostgresServer.shared)
        let url = try server.makeDatabase()
        let a = try PostgresStorage.open(PostgresConfiguration(url: url), nodeID: "node-a")
        defer { a.close() }
        let b = try PostgresStorage.open(PostgresConfiguration(url: url), nodeID: "node-b")
        defer { b.close() }
        try body(a, b)
    }

    /// RL-2 (audience14): a write refused for want of space (53100 `disk_full`) latches, as on
    /// SQLite: the probe then proves room for new pages in a table of its own, rolled back, instead
    /// of its one-row rewrite, and forgets the refusal once they fit. Class 53's other states
    /// (53300 too many connections) are `.unavailable` and do not latch.
    @Test func aWriteRefusedForSpaceLatchesUntilTheProbeFindsRoom() throws {
        let server = try #require(PostgresServer.shared)
        let storage = try PostgresStorage.open(PostgresConfiguration(url: try server.makeDatabase()))
        defer { storage.close() }
        func refuse(_ state: String) -> StorageError? {
            do {
                try storage.writeSync { tx in
                    let tx = try #require(tx as? PostgresTransaction)
                    try tx.connection.run("DO $$ BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = '\(state)'; END $$")
                }
                return nil
            } catch {
                return error as? StorageError
            }
        }
        func probe() -> Result<Void, any Error>? {
            let probed = Shared<Result<Void, any Error>?>(nil)
            let done = DispatchSemaphore(value: 0)
            storage.probeWrite { result in probed.update { $0 = result }; done.signal() }
            done.wait()
            return probed.value
        }
        func probeWrittenAt() throws -> Int64? {
            try storage.readSync { tx in
                try (tx as? PostgresTransaction)?.connection.queryOne("SELECT written_at FROM storage_probe WHERE id = 1")?.value("written_at")
            }
        }
        #expect({ if case .unavailable? = refuse("53300") { true } else { false } }())
        #expect(storage.spaceRefusal == nil)
        #expect({ if case .diskFull? = refuse("53100") { true } else { false } }())
        #expect(storage.spaceRefusal != nil)
        try storage.writeSync { tx in _ = try (tx as? PostgresTransaction)?.connection.run("INSERT INTO storage_probe (id, written_at) VALUES (1, 0) ON CONFLICT (id) DO UPDATE SET written_at = 0") }
        // Latched: the room probe, which writes nothing that stays (the row is not rewritten).
        #expect((try? probe()?.get()) != nil)
        #expect(storage.spaceRefusal == nil)
        #expect(try probeWrittenAt() == 0)
        let tables: Int64? = try storage.readSync { tx in
            try (tx as? PostgresTransaction)?.connection.queryOne("SELECT count(*) AS n FROM pg_class WHERE relname LIKE 'storage_probe_room%'")?.value("n")
        }
        #expect(tables == 0, "the probe's table was rolled back")
        // Forgotten: the one-row rewrite again.
        #expect((try? probe()?.get()) != nil)
        #expect(try probeWrittenAt() ?? 0 > 0)
    }

    @Test func twoNodesClaimingAtOnceNeverGetTheSameJob() throws {
        try withTwoNodes { a, b in
            let count = 300
            try a.writeSync { tx in
                for n in 0..<count { _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{\"n\":\(n)}", runAt: 0, now: 0) }
            }
            let claimed = Shared<[String: [Int64]]>([:])
            DispatchQueue.concurrentPerform(iterations: 4) { worker in
                let node = worker % 2 == 0 ? a : b
                while true {
                    let batch = (try? node.writeSync { tx in
                        try tx.jobs.claim(kind: "push.deliver", limit: 7, leaseMilliseconds: 60_000, now: 10)
                    }) ?? []
                    if batch.isEmpty { break }
                    claimed.update { $0[node.nodeID, default: []] += batch.map(\.id) }
                }
            }
            let all = claimed.value.values.flatMap { $0 }
            #expect(all.count == count)
            #expect(Set(all).count == count)
            let leasedBy = try a.readSync { tx in
                try tx.jobs.list(state: .leased, limit: 1_000, beforeID: nil).count
            }
            #expect(leasedBy == count)
        }
    }

    @Test func aClaimSkipsTheRowsAnotherNodesOpenClaimHoldsInsteadOfWaiting() throws {
        try withTwoNodes { a, b in
            try a.writeSync { tx in
                for _ in 0..<4 { _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
            }
            let claimedOnA = DispatchSemaphore(value: 0)
            let finishA = DispatchSemaphore(value: 0)
            let aDone = DispatchSemaphore(value: 0)
            let onA = Shared<[Int64]>([])
            a.write({ tx in
                let jobs = try tx.jobs.claim(kind: "push.deliver", limit: 2, leaseMilliseconds: 60_000, now: 0)
                onA.update { $0 = jobs.map(\.id) }
                claimedOnA.signal()
                finishA.wait()  // A's transaction stays open, its rows locked
            }) { _ in aDone.signal() }
            claimedOnA.wait()
            // B neither waits for A's locked rows nor gets them.
            let onB = try b.writeSync { tx in try tx.jobs.claim(kind: "push.deliver", limit: 4, leaseMilliseconds: 60_000, now: 0) }.map(\.id)
            finishA.signal()
            aDone.wait()
            #expect(onA.value.count == 2 && onB.count == 2)
            #expect(Set(onA.value).isDisjoint(with: onB))
        }
    }

    @Test func anExpiredLeaseIsRescuedByAnotherNodeAndTheFirstOutcomeIsFenced() throws {
        try withTwoNodes { a, b in
            let id = try a.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
            let first = try #require(try a.writeSync { tx in try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 100, now: 0) }.first)
            // Still leased: the other node finds nothing.
            #expect(try b.writeSync { tx in try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 100, now: 99) }.isEmpty)
            let second = try #require(try b.writeSync { tx in try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 100, now: 100) }.first)
            #expect(second.id == id && second.attempts == 2)
            #expect(try !a.writeSync { tx in try tx.jobs.complete(first.lease) })
            #expect(try !a.writeSync { tx in try tx.jobs.retry(first.lease, runAt: 0, error: "late") })
            // The same attempt number from another node is fenced by locked_by as well.
            #expect(try !a.writeSync { tx in try tx.jobs.complete(second.lease) })
            #expect(try b.writeSync { tx in try tx.jobs.complete(second.lease) })
            #expect(try a.readSync { tx in try tx.jobs.find(id: id)?.state } == .done)
            // Starting releases only this node's own leases, never another's.
            _ = try b.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
            _ = try b.writeSync { tx in try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 60_000, now: 0) }
            #expect(try a.writeSync { tx in try tx.jobs.releaseLeases(kind: "push.deliver", now: 0) } == 0)
            #expect(try b.writeSync { tx in try tx.jobs.releaseLeases(kind: "push.deliver", now: 0) } == 1)
        }
    }

    @Test func planLeasesHoldAcrossNodes() throws {
        try withTwoNodes { a, b in
            let plan = try a.writeSync { tx in
                try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: 0, claimedBy: a.nodeID, leaseUntil: 1_000))
            }
            // Recovery on B at start leaves A's live hold alone.
            #expect(try b.writeSync { tx in try tx.plans.releaseLeases(heldByOtherThan: b.nodeID) } == 0)
            #expect(try b.writeSync { tx in try tx.plans.claim(by: b.nodeID, limit: 10, leaseMilliseconds: 1_000, now: 500) }.isEmpty)
            #expect(try !b.writeSync { tx in try tx.plans.markPlanned(id: plan, by: b.nodeID) })
            // A dies; its lease runs out; B takes the plan over and A's late planning is refused.
            #expect(try b.writeSync { tx in try tx.plans.claim(by: b.nodeID, limit: 10, leaseMilliseconds: 1_000, now: 1_000) }.map(\.id) == [plan])
            #expect(try !a.writeSync { tx in try tx.plans.markPlanned(id: plan, by: a.nodeID) })
            #expect(try b.writeSync { tx in try tx.plans.markPlanned(id: plan, by: b.nodeID) })
        }
    }

    @Test func anIdempotencyKeyRacingOnTwoNodesRunsOnce() throws {
        try withTwoNodes { a, b in
            let reservedOnA = DispatchSemaphore(value: 0)
            let releaseA = DispatchSemaphore(value: 0)
            let record = IdempotencyRecord(key: "order-1", requestHash: "h", responseJSON: "", complete: false, createdAt: 1)
            let aDone = DispatchSemaphore(value: 0)
            a.write({ tx in
                #expect(try tx.idempotency.find(key: "order-1", notBefore: 0) == nil)
                try tx.idempotency.reserve(record)
                reservedOnA.signal()
                releaseA.wait()
            }) { _ in aDone.signal() }
            reservedOnA.wait()
            let seenOnB = Shared<IdempotencyRecord??>(nil)
            let bDone = DispatchSemaphore(value: 0)
            b.write({ tx in
                let found = try tx.idempotency.find(key: "order-1", notBefore: 0)
                seenOnB.update { $0 = .some(found) }
                if found == nil { try tx.idempotency.reserve(record) }
            }) { _ in bDone.signal() }
            // B's find waits on A's lock (seen in pg_locks) until A commits; then it sees A's key.
            let server = try #require(PostgresServer.shared)
            let observer = try PostgresConnection(conninfo: server.url(database: "postgres"), sessionSetup: "SELECT 1")
            defer { observer.close() }
            #expect(try eventually {
                try observer.queryOne("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")?.value("n", as: Int.self) == 1
            })
            #expect(seenOnB.value == nil, "B went ahead while A held the key")
            releaseA.signal()
            aDone.wait()
            bDone.wait()
            #expect(seenOnB.value??.requestHash == "h")
        }
    }

    @Test func nodesStartingAtOnceMigrateOnce() throws {
        let server = try #require(PostgresServer.shared)
        let url = try server.makeDatabase()
        let applied = Shared<[[Int]]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { _ in
            if let storage = try? PostgresStorage.open(PostgresConfiguration(url: url)) {
                applied.update { $0.append(storage.appliedMigrations) }
                storage.close()
            }
        }
        let latest = PostgresSchema.migrations.last!.version
        #expect(applied.value.count == 3)
        // Each step takes the lock on its own, so the nodes may share the steps between them; what
        // matters is that every step ran exactly once, on some node, in order on that node.
        let all = applied.value.flatMap { $0 }
        #expect(all.sorted() == PostgresSchema.migrations.map(\.version))
        #expect(applied.value.allSatisfy { $0 == $0.sorted() })
        // A database newer than this build is refused.
        let connection = try PostgresConnection(conninfo: url, sessionSetup: "SELECT 1")
        defer { connection.close() }
        try connection.run("INSERT INTO herald_schema_migrations (version, name) VALUES ($1::integer, 'from the future')", [latest + 1])
        do {
            _ = try PostgresStorage.open(PostgresConfiguration(url: url))
            Issue.record("a newer schema was opened")
        } catch {
            guard case .migration(let version, _) = error else { Issue.record("got \(error)"); return }
            #expect(version == latest + 1)
        }
    }

    @Test func aDeadlockBetweenTwoNodesIsRunAgainAndBothCommit() throws {
        try withTwoNodes { a, b in
            let aLocked = DispatchSemaphore(value: 0), bLocked = DispatchSemaphore(value: 0)
            let runs = Shared(0)
            let results = Shared<[Bool]>([])
            let ends = Shared<[Bool]>([])
            let done = DispatchGroup()
            let member: @Sendable (String) -> ScopeMember = { ScopeMember(scope: "s", userID: $0, permissions: [], updatedAt: 1) }
            // Each takes its first row, waits (first run only) until the other holds its own, then
            // wants the other's: the server aborts one of them, which runs again and commits.
            for (storage, first, second, mine, theirs) in [(a, "x", "y", aLocked, bLocked), (b, "y", "x", bLocked, aLocked)] {
                done.enter()
                storage.write({ tx in
                    var run = 0
                    runs.update { $0 += 1; run = $0 }
                    _ = tx.whenEnded { committed in ends.update { $0.append(committed) } }
                    try tx.members.put(member(first))
                    if run <= 2 {
                        mine.signal()
                        _ = theirs.wait(timeout: .now() + 5)
                    }
                    try tx.members.put(member(second))
                }) { result in
                    results.update { $0.append((try? result.get()) != nil) }
                    done.leave()
                }
            }
            done.wait()
            // Without the re-run the victim would fail with .busy.
            #expect(results.value == [true, true])
            #expect(runs.value >= 3, "no unit was run again")
            // ADR 0007: each run's end actions are told its own end, the aborted runs' false.
            #expect(ends.value.count == runs.value)
            #expect(ends.value.filter { $0 }.count == 2)
        }
    }

    @Test func aFailureTheBodyCaughtStillFailsItsUnit() throws {
        try withTwoNodes { a, _ in
            try a.writeSync { tx in _ = try tx.notifications.insert(NotificationRecord(id: "n1", userID: "u", kind: "k", createdAt: 1)) }
            // PostgreSQL aborts the whole transaction on a failed statement (SQLite undoes the
            // statement only): a body that swallows the error must not look committed.
            let ends = Shared<[Bool]>([])
            do {
                try a.writeSync { tx in
                    _ = tx.whenEnded { committed in ends.update { $0.append(committed) } }
                    try tx.members.put(ScopeMember(scope: "s", userID: "u", permissions: [], updatedAt: 1))
                    _ = try? tx.notifications.insert(NotificationRecord(id: "n1", userID: "u", kind: "k", createdAt: 1))
                }
                Issue.record("the unit committed")
            } catch let error as StorageError {
                guard case .failed = error else { Issue.record("got \(error)"); return }
            }
            // COMMIT answered ROLLBACK: the end actions are told so (ADR 0007).
            #expect(ends.value == [false])
            #expect(try a.readSync { tx in try tx.members.find(scope: "s", userID: "u") } == nil)
            // The connection is usable again afterwards.
            #expect(try a.writeSync { tx in try tx.members.put(ScopeMember(scope: "s", userID: "u", permissions: [], updatedAt: 1)) })
        }
    }

    /// Three steps of a migration list, 10 the one merged after 11 was applied somewhere.
    static let steps = (PostgresMigration(version: 9, name: "nine", sql: "CREATE TABLE nine (id INTEGER)"),
                        PostgresMigration(version: 10, name: "ten, merged later", sql: "CREATE TABLE ten (id INTEGER)"),
                        PostgresMigration(version: 11, name: "eleven", sql: "CREATE TABLE eleven (id INTEGER)"))

    /// A connection to a fresh, empty database of the shared server.
    static func migrationDatabase() throws -> PostgresConnection {
        let server = try #require(PostgresServer.shared)
        return try PostgresConnection(conninfo: try server.makeDatabase(), sessionSetup: "SELECT 1")
    }

    /// ops11: a command beside running nodes (`herald jobs retry`) checks the applied versions
    /// and changes nothing: a database never migrated, one missing a step of this build's (even
    /// below one applied), and one with a step this build does not know are each refused.
    @Test func requireCurrentRefusesAnyOtherSetOfStepsAndChangesNothing() throws {
        let connection = try Self.migrationDatabase()
        defer { connection.close() }
        let (nine, ten, eleven) = Self.steps
        func refusal(_ migrations: [PostgresMigration]) -> PostgresError? {
            do {
                try PostgresMigrator.requireCurrent(connection, migrations: migrations)
                return nil
            } catch {
                return error as? PostgresError
            }
        }
        #expect(refusal([nine, ten, eleven]) == .schemaMismatch(found: 0, expected: 11))
        #expect(try connection.queryOne("SELECT to_regclass('herald_schema_migrations') IS NULL AS gone")?.value("gone", as: Bool.self) == true)
        #expect(try PostgresMigrator.migrate(connection, migrations: [nine, eleven]) == [9, 11])
        #expect(refusal([nine, ten, eleven]) == .schemaMismatch(found: 9, expected: 11))
        #expect(refusal([nine]) == .schemaMismatch(found: 11, expected: 9))
        #expect(refusal([nine, eleven]) == nil)
        #expect(try PostgresMigrator.appliedVersions(of: connection) == [9, 11])
        #expect(StorageError(PostgresError.schemaMismatch(found: 9, expected: 11)) == .schemaMismatch(found: 9, expected: 11))
    }

    @Test func aStepWithALowerNumberThanOneAppliedStillRuns() throws {
        let connection = try Self.migrationDatabase()
        defer { connection.close() }
        let (nine, ten, eleven) = Self.steps
        #expect(try PostgresMigrator.migrate(connection, migrations: [nine, eleven]) == [9, 11])
        #expect(try PostgresMigrator.migrate(connection, migrations: [nine, ten, eleven]) == [10])
        #expect(try PostgresMigrator.migrate(connection, migrations: [nine, ten, eleven]) == [])
        // A failing step keeps nothing of itself and says which it was.
        let broken = PostgresMigration(version: 12, name: "broken", sql: "CREATE TABLE twelve (id INTEGER); SELECT * FROM nowhere")
        do {
            _ = try PostgresMigrator.migrate(connection, migrations: [nine, ten, eleven, broken])
            Issue.record("a broken step was applied")
        } catch let error as PostgresError {
            guard case .migration(let version, _) = error else { Issue.record("got \(error)"); return }
            #expect(version == 12)
        }
        #expect(try connection.queryOne("SELECT to_regclass('twelve') IS NULL AS gone")?.value("gone", as: Bool.self) == true)
        #expect(try PostgresMigrator.appliedVersions(of: connection) == [9, 10, 11])
    }

    /// Migration 12 (SQLite's 13): queued push jobs take their device's app while it exists;
    /// a device that is gone, another kind and a malformed payload leave `default`.
    @Test func migrationTwelveGivesExistingJobsTheirDevicesApp() throws {
        let server = try #require(PostgresServer.shared)
        let connection = try PostgresConnection(conninfo: try server.makeDatabase(), sessionSetup: "SELECT 1")
        defer { connection.close() }
        let before = PostgresSchema.migrations.filter { $0.version < 12 }
        #expect(try PostgresMigrator.migrate(connection, migrations: before) == before.map(\.version))
        try connection.execute("""
            INSERT INTO devices (id, app, user_id, platform, provider, token, created_at, last_seen_at)
            VALUES ('d-chat', 'chat', 'u', 'ios', 'apns', 'ab', 0, 0), ('d-default', 'default', 'u', 'ios', 'apns', 'cd', 0, 0);
            INSERT INTO jobs (id, kind, payload_json, state, run_at, created_at) VALUES
                (1, 'push.deliver', '{"apns_id":"x","device_id":"d-chat","notification":{}}', 'queued', 0, 0),
                (2, 'push.deliver', '{"apns_id":"x","device_id":"d-default"}', 'queued', 0, 0),
                (3, 'push.deliver', '{"apns_id":"x","device_id":"d-gone"}', 'queued', 0, 0),
                (4, 'push.deliver', '{"device_id": oops', 'queued', 0, 0),
                (5, 'push.receipt', '{"device_id":"d-chat"}', 'queued', 0, 0)
            """)
        #expect(try PostgresMigrator.migrate(connection).contains(12))
        let apps = try connection.query("SELECT app FROM jobs ORDER BY id").map { try $0.value("app", as: String.self) }
        #expect(apps == ["chat", "default", "default", "default", "default"])
    }

    /// Migration 14 (SQLite's 22, ADR 0019) from a database at 13 with rows: every session and
    /// device is kept; a device stored under another app's session gets a live session of its own
    /// app; the keys, the reference and the indexes are the new ones, and the joins seek them.
    @Test(.enabled(if: PostgresServer.isAvailable)) func migrationFourteenKeysSessionsByAppAndKeepsEveryRow() throws {
        let server = try #require(PostgresServer.shared)
        let connection = try PostgresConnection(conninfo: try server.makeDatabase(), sessionSetup: "SELECT 1")
        defer { connection.close() }
        let before = PostgresSchema.migrations.filter { $0.version < 14 }
        #expect(try PostgresMigrator.migrate(connection, migrations: before) == before.map(\.version))
        try connection.execute("""
            INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at, expires_at, ended_at, expiry_source) VALUES
                ('s1', 'default', 'u1', 10, 20, 900, NULL, 'server'),
                ('s2', 'chat', 'u2', 11, 21, NULL, 30, NULL);
            INSERT INTO devices (id, app, user_id, sid, platform, provider, token, locale, created_at, last_seen_at) VALUES
                ('d1', 'default', 'u1', 's1', 'ios', 'apns', 't1', 'pt-BR', 40, 41),
                ('d2', 'chat', 'u4', 's1', 'android', 'fcm', 't2', NULL, 42, 43),
                ('d3', 'chat', 'u4', 's1', 'web', 'webpush', 't3', NULL, 44, 45),
                ('d4', 'default', 'u3', NULL, 'android', 'fcm', 't4', NULL, 46, 47);
            """)
        #expect(try PostgresMigrator.migrate(connection) == PostgresSchema.migrations.filter { $0.version >= 14 }.map(\.version))
        let sessions = try connection.query("""
            SELECT app, sid, user_id, created_at, last_seen_at, expires_at, ended_at, expiry_source FROM sessions ORDER BY app, sid
            """).map { row in
            [try row.value("app", as: String.self), try row.value("sid", as: String.self), try row.value("user_id", as: String.self),
             String(try row.value("created_at", as: Int64.self)), String(try row.value("last_seen_at", as: Int64.self)),
             try row.nullable("expires_at", as: Int64.self).map(String.init) ?? "-", try row.nullable("ended_at", as: Int64.self).map(String.init) ?? "-",
             try row.nullable("expiry_source", as: String.self) ?? "-"]
        }
        #expect(sessions == [["chat", "s1", "u4", "42", "45", "-", "-", "-"],
                             ["chat", "s2", "u2", "11", "21", "-", "30", "-"],
                             ["default", "s1", "u1", "10", "20", "900", "-", "server"]])
        let devices = try connection.query("SELECT id, app, sid, locale FROM devices ORDER BY id").map { row in
            "\(try row.value("id", as: String.self)) \(try row.value("app", as: String.self)) \(try row.nullable("sid", as: String.self) ?? "-") \(try row.nullable("locale", as: String.self) ?? "-")"
        }
        #expect(devices == ["d1 default s1 pt-BR", "d2 chat s1 -", "d3 chat s1 -", "d4 default - -"])
        let repository = PostgresDeviceRepository(connection: connection, rotations: PushJobRotation.Count())
        #expect(try repository.find(id: "d1", now: 1_000)?.sessionActive == false)
        #expect(try repository.find(id: "d2", now: 1_000)?.sessionActive == true, "its own app's session, not default's expired one")
        let indexes = try connection.query("""
            SELECT indexname FROM pg_indexes WHERE tablename IN ('sessions', 'devices') ORDER BY indexname
            """).map { try $0.value("indexname", as: String.self) }
        #expect(indexes == ["devices_app_platform_token_key", "devices_app_provider_token", "devices_app_sid", "devices_last_seen_at",
                            "devices_pkey", "devices_user_id", "sessions_pkey"])
        // Another app may use s1's name; a device may not name a session its app lacks, nor may a
        // session with devices be deleted.
        try connection.execute("INSERT INTO sessions (sid, app, user_id, created_at, last_seen_at) VALUES ('s2', 'default', 'u9', 1, 1)")
        #expect(throws: PostgresError.self) {
            try connection.execute("""
                INSERT INTO devices (id, app, user_id, sid, platform, provider, token, created_at, last_seen_at)
                VALUES ('d9', 'other', 'u1', 's1', 'ios', 'apns', 't9', 0, 0)
                """)
        }
        #expect(throws: PostgresError.self) { try connection.execute("DELETE FROM sessions WHERE app = 'chat' AND sid = 's1'") }
        // The joins and a session's devices seek the new keys.
        try connection.execute("SET enable_seqscan = off")
        let join = try connection.plan(of: "SELECT d.id, s.ended_at FROM devices d LEFT JOIN sessions s ON s.app = d.app AND s.sid = d.sid WHERE d.id = $1::text", ["d1"])
        #expect(join.contains("Index Scan using sessions_pkey") && !join.contains("Seq Scan"), "\(join)")
        let mine = try connection.plan(of: "DELETE FROM devices WHERE app = $1::text AND sid = $2::text", ["chat", "s1"])
        #expect(mine.contains("devices_app_sid"), "\(mine)")
    }

    @Test func anUnreachableServerIsUnavailable() throws {
        var configuration = PostgresConfiguration(url: "postgres://postgres@127.0.0.1:1/none")
        configuration.connectTimeoutSeconds = 2
        do {
            _ = try PostgresStorage.open(configuration)
            Issue.record("opened a storage on a closed port")
        } catch {
            guard case .unavailable = error else { Issue.record("got \(error)"); return }
        }
    }

    @Test func anEnqueueOnOneNodeWakesTheListenerOfAnother() throws {
        try withTwoNodes { a, b in
            let woken = DispatchSemaphore(value: 0)
            b.listenForJobs { woken.signal() }
            // The listener connects on its own thread: enqueue until a wake-up arrives, proving the
            // LISTEN is in place, then count on a fresh one.
            #expect(try eventually {
                _ = try a.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
                return woken.wait(timeout: .now() + .milliseconds(200)) == .success
            })
            while woken.wait(timeout: .now()) == .success {}
            _ = try a.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
            #expect(woken.wait(timeout: .now() + 5) == .success)
            // A rolled-back enqueue notifies nobody.
            while woken.wait(timeout: .now()) == .success {}
            struct Refused: Error {}
            _ = try? a.writeSync { tx in
                _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
                throw Refused()
            }
            #expect(woken.wait(timeout: .now() + .milliseconds(500)) == .timedOut)
        }
    }

    @Test func aStoppedBackendFailsItsUnitAtTheClientDeadlineAndTheNextUnitGetsANewConnection() throws {
        // A server whose process is stopped (SIGSTOP, a frozen VM) never fires its own
        // statement_timeout, and its kernel still acknowledges keepalives: only a deadline kept
        // by the client ends the wait. The writer's own backend is stopped, nothing else.
        let server = try #require(PostgresServer.shared)
        var configuration = PostgresConfiguration(url: try server.makeDatabase())
        configuration.clientDeadlineMilliseconds = 300
        let storage = try PostgresStorage.open(configuration)
        defer { storage.close() }
        let backend = try storage.writeSync { tx -> Int in
            guard let connection = (tx as? PostgresTransaction)?.connection,
                  let pid = try connection.queryOne("SELECT pg_backend_pid() AS pid")?.value("pid", as: Int.self) else {
                throw StorageError.misuse(message: "no backend pid")
            }
            return pid
        }
        #expect(kill(pid_t(backend), SIGSTOP) == 0)
        defer { kill(pid_t(backend), SIGCONT) }
        do {
            _ = try storage.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
            Issue.record("a write succeeded on a stopped backend")
        } catch let error as StorageError {
            guard case .unavailable(let message) = error else { Issue.record("got \(error)"); return }
            #expect(message.contains("did not answer within 300 ms"))
        }
        // Readers have connections of their own; the writer's next unit connects again.
        #expect(try storage.readSync { tx in try tx.jobs.depth(now: 0).counts[.queued] ?? 0 } == 0)
        _ = try storage.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
        #expect(try storage.readSync { tx in try tx.jobs.depth(now: 0).counts[.queued] ?? 0 } == 1)
    }

    @Test func aStatementLongerThanTheClientDeadlineIsCutAndNothingOfItsUnitIsKept() throws {
        let server = try #require(PostgresServer.shared)
        var configuration = PostgresConfiguration(url: try server.makeDatabase())
        configuration.clientDeadlineMilliseconds = 300
        let storage = try PostgresStorage.open(configuration)
        defer { storage.close() }
        do {
            _ = try storage.writeSync { tx in
                _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
                guard let connection = (tx as? PostgresTransaction)?.connection else { throw StorageError.misuse(message: "not PostgreSQL") }
                _ = try connection.query("SELECT pg_sleep(5)")
            }
            Issue.record("a unit outlived its client deadline")
        } catch let error as StorageError {
            guard case .unavailable = error else { Issue.record("got \(error)"); return }
        }
        // The closed connection ended its transaction on the server: the enqueue is gone.
        #expect(try storage.readSync { tx in try tx.jobs.depth(now: 0).counts[.queued] ?? 0 } == 0)
        _ = try storage.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
        #expect(try storage.readSync { tx in try tx.jobs.depth(now: 0).counts[.queued] ?? 0 } == 1)
    }

    @Test func aServerRestartIsUnavailableThenRecoversWithoutReopening() throws {
        // A server of its own: the others' tests must not see the restart.
        let server = try PostgresServer()
        defer { server.destroy() }
        let storage = try PostgresStorage.open(PostgresConfiguration(url: try server.makeDatabase()))
        defer { storage.close() }
        let woken = Shared(0)
        storage.listenForJobs { woken.update { $0 += 1 } }
        // The listener connects on its own thread: enqueue until it has heard one.
        #expect(try eventually {
            _ = try storage.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
            return eventually(0.2) { woken.value >= 1 }
        })
        let queuedBefore = try #require(try storage.readSync { tx in try tx.jobs.depth(now: 0).counts[.queued] })
        server.stop()
        for unit in 0..<2 {
            do {
                _ = try storage.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }
                Issue.record("write \(unit) succeeded with the server down")
            } catch let error as StorageError {
                guard case .unavailable = error else { Issue.record("got \(error)"); continue }
            }
        }
        do {
            _ = try storage.readSync { tx in try tx.jobs.depth(now: 0) }
            Issue.record("a read succeeded with the server down")
        } catch let error as StorageError {
            guard case .unavailable = error else { Issue.record("got \(error)"); return }
        }
        let probed = Shared<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        storage.probeWrite { result in probed.update { $0 = result }; done.signal() }
        done.wait()
        #expect((try? probed.value?.get()) == nil, "the probe passed with the server down")
        try server.start()
        let before = woken.value
        #expect(eventually {
            (try? storage.writeSync { tx in try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0) }) != nil
        })
        #expect(try storage.readSync { tx in try tx.jobs.depth(now: 0).counts[.queued] } == queuedBefore + 1)
        // The listener reconnected and wakes again (once for the reconnect, then per enqueue).
        #expect(eventually { woken.value > before })
    }
}
