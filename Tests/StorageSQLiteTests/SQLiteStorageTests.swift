import Foundation
import HeraldCore
@testable import StorageSQLite
import Synchronization
import Testing

/// The `Storage` port as its callers see it: units of work, the port's errors, the job queue and
/// plan leases, on a real SQLite file (WAL, one writer, readers).
@Suite struct SQLiteStorageTests {
    private struct Refused: Error {}

    private func withStorage(_ body: (SQLiteStorage) throws -> Void) throws {
        try withTemporaryDirectory { directory in
            let storage = try SQLiteStorage.open(path: directory.databasePath())
            defer { storage.close() }
            try body(storage)
        }
    }

    private func notification(_ id: String, user: String = "u1", plan: Int64? = nil) -> NotificationRecord {
        NotificationRecord(id: id, userID: user, kind: "k", planID: plan, createdAt: 1_000)
    }

    @Test func aWriteUnitCommitsAllItsRepositoriesTogether() throws {
        try withStorage { storage in
            let (plan, job) = try storage.writeSync { tx in
                let plan = try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: 1_000, claimedBy: "n", leaseUntil: 9_000))
                _ = try tx.notifications.insert(notification("n1", plan: plan))
                let job = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
                return (plan, job)
            }
            let (rows, state) = try storage.readSync { tx in
                (try tx.plans.notifications(ofPlan: plan).map(\.id), try tx.jobs.find(id: job)?.state)
            }
            #expect(rows == ["n1"] && state == .queued)
        }
    }

    @Test func aThrowingWriteUnitLeavesNothingBehind() throws {
        try withStorage { storage in
            #expect(throws: Refused.self) {
                try storage.writeSync { tx in
                    let plan = try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: 1_000))
                    _ = try tx.notifications.insert(notification("n1", plan: plan))
                    _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 0, now: 0)
                    try tx.members.put(ScopeMember(scope: "s", userID: "u1", permissions: [], updatedAt: 0))
                    throw Refused()
                }
            }
            let left = try storage.readSync { tx in
                (try tx.notifications.find(id: "n1"), try tx.plans.list(after: 0, limit: 10), try tx.jobs.depth(now: 0),
                 try tx.members.find(scope: "s", userID: "u1"))
            }
            #expect(left.0 == nil && left.1.isEmpty && left.2.counts.isEmpty && left.3 == nil)
        }
    }

    @Test("issue 17: units submitted while the writer is busy commit together; one that throws fails alone and is told it did not commit")
    func unitsSubmittedMeanwhileAreGroupCommitted() throws {
        try withStorage { storage in
            let gate = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0), done = DispatchGroup()
            let log = Mutex<[String]>([])
            // Holds the writer until the other units are queued behind it.
            done.enter()
            storage.write({ tx in
                started.signal()
                gate.wait()
                _ = try tx.notifications.insert(notification("n0"))
            }) { _ in done.leave() }
            started.wait()
            for index in 1...4 {
                done.enter()
                storage.write({ tx in
                    _ = tx.whenEnded { committed in log.withLock { $0.append("ended \(index) \(committed)") } }
                    _ = try tx.notifications.insert(notification("n\(index)"))
                    // A later unit of the group sees the earlier ones' rows, as in submission order.
                    if index == 4, try tx.notifications.find(id: "n2") != nil { log.withLock { $0.append("4 saw n2") } }
                    if index == 3 { throw Refused() }
                }) { result in
                    let succeeded = if case .success = result { true } else { false }
                    log.withLock { $0.append("done \(index) \(succeeded)") }
                    done.leave()
                }
            }
            #expect(storage.database.groupedUnits == 0)
            gate.signal()
            done.wait()
            #expect(storage.database.groupedUnits == 4, "the four units waiting went in one transaction")
            // Each unit's end actions, then its completion, in submission order, once the group ended.
            #expect(log.withLock { $0 } == ["4 saw n2", "ended 1 true", "done 1 true", "ended 2 true", "done 2 true", "ended 3 false",
                                            "done 3 false", "ended 4 true", "done 4 true"])
            let found = try storage.readSync { tx in try (0...4).map { try tx.notifications.find(id: "n\($0)") != nil } }
            #expect(found == [true, true, true, false, true])
        }
    }

    @Test("issue 17: a unit ends off the writer: the next unit runs while the last one's completion does, and completions keep the order the units ran in")
    func unitsEndOffTheWriterInOrder() throws {
        try withStorage { storage in
            let secondRan = DispatchSemaphore(value: 0), done = DispatchGroup()
            let log = Mutex<[String]>([])
            done.enter()
            storage.write({ tx in
                _ = tx.whenEnded { committed in log.withLock { $0.append("ended 1 \(committed)") } }
                _ = try tx.notifications.insert(notification("n1"))
            }) { _ in
                // Committed before it is told: a reader sees the row.
                let seen = (try? storage.readSync { tx in try tx.notifications.find(id: "n1") }) != nil
                log.withLock { $0.append("done 1, row seen \(seen)") }
                storage.write({ tx in
                    _ = tx.whenEnded { committed in log.withLock { $0.append("ended 2 \(committed)") } }
                    _ = try tx.notifications.insert(notification("n2"))
                    secondRan.signal()
                }) { _ in
                    log.withLock { $0.append("done 2") }
                    done.leave()
                }
                // On the writer, this completion would hold the unit it just submitted: the bound
                // only turns that hang into a failure.
                let ran = secondRan.wait(timeout: .now() + 30) == .success
                log.withLock { $0.append("2 ran while 1 ended: \(ran)") }
            }
            done.wait()
            #expect(log.withLock { $0 } == ["ended 1 true", "done 1, row seen true", "2 ran while 1 ended: true", "ended 2 true", "done 2"])
        }
    }

    @Test func failuresCrossThePortAsStorageErrorsByMeaning() async throws {
        try await withTemporaryDirectory { directory in
            let storage = try SQLiteStorage.open(path: directory.databasePath())
            try await storage.write { tx in _ = try tx.notifications.insert(notification("n1")) }
            let duplicate = await #expect(throws: StorageError.self) {
                try await storage.write { tx in _ = try tx.notifications.insert(notification("n1")) }
            }
            #expect(duplicate?.isUniqueViolation == true)
            let readOnly = await #expect(throws: StorageError.self) {
                try await storage.read { tx in _ = try tx.notifications.insert(notification("n2")) }
            }
            guard case .readOnly? = readOnly else { Issue.record("got \(String(describing: readOnly))"); return }
            // A body's own error is passed on unchanged.
            await #expect(throws: Refused.self) { try await storage.read { _ in throw Refused() } }
            storage.close()
            let closed = await #expect(throws: StorageError.self) { try await storage.read { tx in try tx.notifications.find(id: "n1") } }
            #expect(closed == .closed)
        }
    }

    @Test func theCompletionFormGetsTheResultOnTheStoragesThread() throws {
        try withStorage { storage in
            let done = DispatchSemaphore(value: 0)
            let got = Shared<Result<Int, any Error>?>(nil)
            storage.write({ tx in try tx.jobs.enqueue(kind: "k", payloadJSON: "{}", runAt: 0, now: 0) }) { result in
                got.update { $0 = result.map { Int($0) } }
                done.signal()
            }
            done.wait()
            let value = try got.value?.get()
            #expect(value == 1)
        }
    }

    @Test func theJobQueueLeasesFencesRetriesAndDeadLettersThroughThePort() throws {
        try withStorage { storage in
            let clock = ManualClock(unixMilliseconds: 50_000)
            let lease: Int64 = 60_000
            func claim() throws -> [JobRecord] {
                let now = clock.unixMilliseconds
                return try storage.writeSync { tx in try tx.jobs.claim(kind: "push.deliver", limit: 10, leaseMilliseconds: lease, now: now) }
            }
            let id = try storage.writeSync { [now = clock.unixMilliseconds] tx in
                try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: #"{"d":1}"#, runAt: now, now: now)
            }
            let first = try #require(try claim().first)
            #expect(first.id == id && first.state == .leased && first.leaseUntil == clock.unixMilliseconds + lease)
            #expect(try claim().isEmpty, "leased")

            // The first worker stalls past its lease; a second claim takes the job over.
            clock.advance(byMilliseconds: lease)
            let second = try #require(try claim().first)
            #expect(second.lease.attempt == first.lease.attempt + 1)
            #expect(try storage.writeSync { tx in try tx.jobs.complete(first.lease, note: "late") } == false)
            let retryAt = clock.unixMilliseconds + 1_000
            #expect(try storage.writeSync { tx in try tx.jobs.retry(second.lease, runAt: retryAt, error: "503") })
            #expect(try claim().isEmpty, "not due yet")
            clock.advance(byMilliseconds: 1_000)
            let third = try #require(try claim().first)
            #expect(third.attempts == 3 && third.lastError == "503")
            let diedAt = clock.unixMilliseconds
            #expect(try storage.writeSync { tx in try tx.jobs.deadLetter(third.lease, error: "gone", now: diedAt) })
            #expect(try storage.writeSync { tx in try tx.jobs.deadLetter(third.lease, error: "again", now: diedAt) } == false)

            let (dead, depth) = try storage.readSync { tx in
                (try tx.jobs.list(state: .dead, limit: 10, beforeID: nil), try tx.jobs.depth(now: diedAt))
            }
            #expect(dead.map(\.id) == [id] && dead.first?.deadAt == diedAt && dead.first?.lastError == "gone")
            #expect(depth == JobQueueDepth(counts: [.dead: 1], oldestDueAgeMilliseconds: 0))
            // Bulk retry: by kind and since the outage began.
            #expect(try storage.writeSync { tx in try tx.jobs.retryDead(matching: DeadJobFilter(kind: "mail"), now: diedAt) } == 0)
            #expect(try storage.writeSync { tx in
                try tx.jobs.retryDead(matching: DeadJobFilter(kind: "push.deliver", deadSince: diedAt), now: diedAt)
            } == 1)
            let revived = try #require(try claim().first)
            #expect(revived.id == id && revived.attempts == 1)
            #expect(try storage.writeSync { tx in try tx.jobs.complete(revived.lease) })
            #expect(try storage.writeSync { tx in try tx.jobs.purgeDone(createdBefore: Int64.max) } == 1)
        }
    }

    @Test func leasedJobsOfADeadProcessAreReleasedAtStart() throws {
        try withStorage { storage in
            try storage.writeSync { tx in
                _ = try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: "{}", runAt: 100, now: 0)
                _ = try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 60_000, now: 100)
            }
            #expect(try storage.writeSync { tx in try tx.jobs.releaseLeases(kind: "push.deliver", now: 200) } == 1)
            #expect(try storage.writeSync { tx in try tx.jobs.claim(kind: "push.deliver", limit: 1, leaseMilliseconds: 60_000, now: 200) }.count == 1)
        }
    }

    @Test func plansAreHeldAsLeasesThroughThePort() throws {
        try withStorage { storage in
            let clock = ManualClock()
            let lease: Int64 = 60_000
            // A live call on node a: its plan is stored claimed, in the same unit as its rows.
            let live = try storage.writeSync { [now = clock.unixMilliseconds] tx in
                let plan = try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: now, claimedBy: "a", leaseUntil: now + lease))
                _ = try tx.notifications.insert(notification("n1", plan: plan))
                return plan
            }
            func claim(_ node: String) throws -> [Int64] {
                let now = clock.unixMilliseconds
                return try storage.writeSync { tx in try tx.plans.claim(by: node, limit: 10, leaseMilliseconds: lease, now: now).map(\.id) }
            }
            #expect(try claim("b").isEmpty, "recovery leaves a live call's plan alone")
            func planned() throws -> Bool? {
                try storage.readSync { tx in try tx.notifications.find(id: "n1").map { try tx.notifications.isPlanned($0) } }
            }
            #expect(try planned() == false)
            // a stalls past its lease: b takes the plan, renews it while planning, and a's late
            // planning is fenced out.
            clock.advance(byMilliseconds: lease)
            #expect(try claim("b") == [live])
            clock.advance(byMilliseconds: lease - 1)
            let until = clock.unixMilliseconds + lease
            let renewed = try storage.writeSync { tx in try tx.plans.renew(ids: [live], by: "b", until: until) }
            #expect(renewed == 1)
            clock.advance(byMilliseconds: 1)
            #expect(try claim("c").isEmpty, "renewed")
            #expect(try storage.writeSync { tx in try tx.plans.markPlanned(id: live, by: "a") } == false)
            #expect(try storage.writeSync { tx in try tx.plans.markPlanned(id: live, by: "b") })
            #expect(try planned() == true)
            #expect(try storage.readSync { tx in try tx.plans.list(after: 0, limit: 10) }.isEmpty)
        }
    }
}
