import Foundation
@testable import HeraldCore
import RealtimeMemory
import StorageSQLite
import Synchronization
import Testing

/// A call answered 503 because its storing transaction outlived `BoundedStorage`'s wait, whose
/// transaction then commits: the Notifier plans it at that commit (not at recovery's next pass),
/// and a retry with its idempotency key replays the planned answer.
@Suite struct NotifierLateCommitTests {
    /// A storage over SQLite whose writes stall until the test lets them run (`runHeld`), and
    /// whose answers then stall until it lets them through (`answerHeld`): a database that froze
    /// before a unit ran, or after it committed and before its caller heard.
    final class StallingStorage: Storage {
        let base: any Storage
        private let stalled = Mutex(false)
        private let held = Mutex<[@Sendable (@escaping @Sendable () -> Void) -> Void]>([])
        private let answers = Mutex<[@Sendable () -> Void]>([])

        init(base: any Storage) { self.base = base }
        var pushRotations: PushJobRotation.Count { base.pushRotations }

        /// From now on, writes wait for `runHeld`.
        func stall() { stalled.withLock { $0 = true } }

        /// From now on, writes run at once again.
        func resume() { stalled.withLock { $0 = false } }

        /// Writes waiting to run.
        var heldCount: Int { held.withLock { $0.count } }

        /// Runs the held writes on the base storage; returns once each has ended there (its
        /// `whenEnded` actions ran), with its answer kept for `answerHeld`.
        func runHeld() async {
            let writes = held.withLock { held in defer { held.removeAll() }; return held }
            for write in writes {
                await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in write { ended.resume() } }
            }
        }

        /// Hands the answers of the writes that ran to their callers.
        func answerHeld() {
            for answer in answers.withLock({ answers in defer { answers.removeAll() }; return answers }) { answer() }
        }

        func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                                completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
            guard stalled.withLock({ $0 }) else { return base.write(body, completion: completion) }
            held.withLock {
                $0.append { [self] ended in
                    base.write(body) { result in
                        self.answers.withLock { $0.append { completion(result) } }
                        ended()
                    }
                }
            }
        }

        func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                               completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
            base.read(body, completion: completion)
        }

        func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
            try base.writeSync(body)
        }

        func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
            try base.readSync(body)
        }
    }

    final class Harness: Sendable {
        let clock = ManualClock()
        let storage: SQLiteStorage
        /// Faults the stalled writes meet when they run (none unless armed).
        let faults = StorageFaults()
        let stalling: StallingStorage
        let bounded: BoundedStorage
        let notifier: Notifier

        init() throws {
            storage = try SQLiteStorage.open(path: ":memory:")
            stalling = StallingStorage(base: FaultyStorage(base: storage, faults: faults))
            bounded = BoundedStorage(stalling, waitMilliseconds: 3_000, clock: clock, sweepMilliseconds: nil)
            let broker = MemoryBroker(clock: clock)
            let presence = MemoryPresenceStore(leaseSeconds: 45, clock: clock)
            notifier = Notifier(database: bounded, broker: broker, presence: presence,
                                barrier: NotifierTests.Loops(broker: broker, presence: presence),
                                providers: PushProviders(configured: [NotifierTests.Configured()]), catalog: .empty, clock: clock,
                                nodeID: "node-a")
            let now = clock.unixMilliseconds
            try storage.writeSync { tx in
                _ = try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: "phone", platform: "ios", provider: "apns",
                                                               token: String(repeating: "ab", count: 32)),
                                            sessionExpiresAt: nil, newID: "dev_u1", now: now)
            }
        }

        func call(key: String) -> NotificationCall {
            let plan = NotificationPlan(kind: "k", scope: nil, title: ["*": "T"], body: nil, arguments: [:], data: [:],
                                        collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil, priority: "normal",
                                        expiresAt: nil, badge: nil, persist: true, policy: .auto, ackWindowMilliseconds: 3_000,
                                        type: .alert, audience: "everyone", trackOpens: false, idempotencyKey: key)
            return NotificationCall(recipients: .users(["u1"]), plan: plan, live: nil, idempotencyKey: key, requestHash: "h-" + key,
                                    planJSON: plan.jsonText(), titleJSON: JSONText.object(["*": "T"]), bodyJSON: nil,
                                    argsJSON: nil, dataJSON: "{}")
        }

        /// Sends `call`; its answers arrive on the stream.
        func send(_ call: NotificationCall) -> AsyncStream<NotificationAnswer>.Iterator {
            let (stream, continuation) = AsyncStream<NotificationAnswer>.makeStream()
            notifier.send(call) { continuation.yield($0) }
            return stream.makeAsyncIterator()
        }

        /// Moves the clock past the wait and answers the overdue calls, as the deadline sweep does.
        func expire() -> Int {
            clock.advance(byMilliseconds: 3_001)
            return bounded.expireOverdue()
        }

        var jobs: Int { (try? storage.readSync { try $0.jobs.list(state: .queued, limit: 10, beforeID: nil) }.count) ?? -1 }
        /// Plans not planned yet: plan rows, and the plans one-recipient calls hold in their rows
        /// (ADR 0003's amendment).
        var plans: Int {
            (try? storage.readSync { tx in
                try tx.plans.list(after: 0, limit: 10).count
                    + tx.notifications.page(userID: "u1", unreadOnly: false, before: nil, limit: 10).count { $0.planJSON != nil }
            }) ?? -1
        }
        var stored: Int { (try? storage.readSync { try $0.notifications.page(userID: "u1", unreadOnly: false, before: nil, limit: 10) }.count) ?? -1 }
    }

    static func isStall(_ answer: NotificationAnswer?) -> Bool {
        guard case .failed(let error)? = answer, let storage = error as? StorageError, case .stalled = storage else { return false }
        return true
    }

    /// The planned answer a retry with the key replays: its `push_queued`.
    static func replayedPushQueued(_ answer: NotificationAnswer?) throws -> Int? {
        guard case .replayed(let json)? = answer else { Issue.record("not a replay: \(String(describing: answer))"); return nil }
        let body = try #require(JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(body["push_planning"] == nil, "the planned answer, not the provisional one")
        return body["push_queued"] as? Int
    }

    @Test("a write answered 503 before it ran, that commits later, is planned at its commit; a keyed retry replays it",
          .timeLimit(.minutes(1)))
    func stalledThenCommittedIsPlannedAtTheCommit() async throws {
        let h = try Harness()
        h.stalling.stall()
        let call = h.call(key: "k-late")
        var answers = h.send(call)
        #expect(h.stalling.heldCount == 1)
        #expect(h.expire() == 1)
        #expect(Self.isStall(await answers.next()), "the caller gets its 503")
        #expect(h.plans == 0 && h.stored == 0, "nothing committed yet")

        h.stalling.resume()   // the database moves again: what is held runs, what comes next goes through
        await h.stalling.runHeld()
        #expect(h.notifier.drain(deadline: 30), "the late commit is being planned (counted before runHeld returned)")
        #expect(h.jobs == 1 && h.plans == 0, "planned at the commit, not left to recovery")
        h.stalling.answerHeld()   // the late answer: dropped by BoundedStorage

        var retry = h.send(call)
        #expect(try Self.replayedPushQueued(await retry.next()) == 1)
        #expect(h.stored == 1 && h.jobs == 1, "nothing stored or planned twice")
    }

    @Test("a write that committed and was answered 503 before its answer came is planned at that answer; a keyed retry replays it",
          .timeLimit(.minutes(1)))
    func committedThenStalledIsPlannedAtTheStall() async throws {
        let h = try Harness()
        h.stalling.stall()
        let call = h.call(key: "k-commit-first")
        var answers = h.send(call)
        h.stalling.resume()   // the database moves again: what is held runs, what comes next goes through
        await h.stalling.runHeld()
        #expect(h.plans == 1 && h.jobs == 0, "committed; its caller has not heard yet, so nothing planned")
        #expect(h.expire() == 1)
        #expect(Self.isStall(await answers.next()))
        #expect(h.notifier.drain(deadline: 30))
        #expect(h.jobs == 1 && h.plans == 0)
        h.stalling.answerHeld()

        var retry = h.send(call)
        #expect(try Self.replayedPushQueued(await retry.next()) == 1)
        #expect(h.stored == 1 && h.jobs == 1)
    }

    @Test("a write answered 503 that then rolls back plans nothing; a keyed retry stores the call once", .timeLimit(.minutes(1)))
    func stalledThenRolledBackPlansNothing() async throws {
        let h = try Harness()
        h.stalling.stall()
        h.faults.fail(.storing, times: 1)
        let call = h.call(key: "k-rollback")
        var answers = h.send(call)
        #expect(h.expire() == 1)
        #expect(Self.isStall(await answers.next()))
        h.stalling.resume()   // the database moves again: what is held runs, what comes next goes through
        await h.stalling.runHeld()
        #expect(h.faults.count(.storing) == 1)
        #expect(h.notifier.drain(deadline: 30))
        #expect(h.plans == 0 && h.stored == 0 && h.jobs == 0)

        var retry = h.send(call)
        guard case .created? = await retry.next() else { Issue.record("the retry was not stored"); return }
        #expect(h.stored == 1 && h.jobs == 1)
    }

    @Test("a write answered in time is planned once, by its call")
    func answeredInTimeIsPlannedOnce() async throws {
        let h = try Harness()
        var answers = h.send(h.call(key: "k-in-time"))
        guard case .created? = await answers.next() else { Issue.record("not created"); return }
        #expect(h.expire() == 0)
        #expect(h.notifier.drain(deadline: 30))
        #expect(h.jobs == 1 && h.plans == 0)
    }
}
