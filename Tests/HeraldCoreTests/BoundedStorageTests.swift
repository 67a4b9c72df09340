import HeraldCore
import Synchronization
import Testing

/// A storage that never answers until the test says so: a stalled database (a PostgreSQL server
/// stopped, a SQLite writer stuck in `write()` on a frozen volume).
private final class StalledStorage: Storage {
    let pushRotations = PushJobRotation.Count()
    private let held = Mutex<[@Sendable (Bool) -> Void]>([])

    /// Calls submitted and not answered yet.
    var heldCount: Int { held.withLock { $0.count } }

    /// Answers every held call: success (`true`) or `.diskFull`.
    func release(succeeding: Bool = true) {
        let calls = held.withLock { calls -> [@Sendable (Bool) -> Void] in
            defer { calls.removeAll() }
            return calls
        }
        for call in calls { call(succeeding) }
    }

    private func hold<T: Sendable>(_ value: @escaping @Sendable () -> T?, _ completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        held.withLock {
            $0.append { succeeding in
                if succeeding, let value = value() {
                    completion(.success(value))
                } else {
                    completion(.failure(StorageError.diskFull(message: "full")))
                }
            }
        }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        hold({ "stored" as? T }, completion)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                           completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        hold({ "read" as? T }, completion)
    }

    func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        throw StorageError.misuse(message: "not used")
    }

    func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        throw StorageError.misuse(message: "not used")
    }

    func probeWrite(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        hold({ () }, completion)
    }
}

/// What completions a test saw, in order.
private final class Answers<T: Sendable>: Sendable {
    private let results = Mutex<[Result<T, any Error>]>([])
    var all: [Result<T, any Error>] { results.withLock { $0 } }
    var count: Int { all.count }
    func record(_ result: Result<T, any Error>) { results.withLock { $0.append(result) } }

    /// The text of the only answer when it is `.stalled`, nil otherwise.
    var stalledMessage: String? {
        guard all.count == 1, case .failure(let error) = all[0], let error = error as? StorageError, case .stalled = error else { return nil }
        return "\(error)"
    }
}

struct BoundedStorageTests {
    @Test func aStalledWriteIsAnsweredUnavailableAtItsDeadlineAndItsLateResultIsDropped() {
        let base = StalledStorage(), clock = ManualClock()
        let storage = BoundedStorage(base, waitMilliseconds: 15_000, clock: clock, sweepMilliseconds: nil)
        let answers = Answers<String>()
        storage.write({ _ in "stored" }, completion: answers.record)

        clock.advance(byMilliseconds: 14_999)
        #expect(storage.expireOverdue() == 0)
        #expect(answers.count == 0)

        clock.advance(byMilliseconds: 1)
        #expect(storage.expireOverdue() == 1)
        let message = answers.stalledMessage
        #expect(message?.contains("15000 ms") == true)
        #expect(message?.contains("idempotency key") == true)
        #expect(answers.all.first.flatMap { if case .failure(let e) = $0 { e as? StorageError } else { nil } } == .stalled(waitMilliseconds: 15_000))
        #expect(storage.pendingCount == 0)

        // The storage moves again: the unit's own result reaches nobody (answered once).
        base.release()
        #expect(answers.count == 1)
        #expect(storage.expireOverdue() == 0)
    }

    @Test func anAnswerInTimeGoesThroughOnceAndIsNotExpiredLater() throws {
        let base = StalledStorage(), clock = ManualClock()
        let storage = BoundedStorage(base, waitMilliseconds: 1_000, clock: clock, sweepMilliseconds: nil)
        let written = Answers<String>(), read = Answers<String>()
        storage.write({ _ in "stored" }, completion: written.record)
        storage.read({ _ in "read" }, completion: read.record)
        #expect(storage.pendingCount == 2)
        base.release()
        clock.advance(byMilliseconds: 5_000)
        #expect(storage.expireOverdue() == 0)
        #expect(try written.all.map { try $0.get() } == ["stored"])
        #expect(try read.all.map { try $0.get() } == ["read"])
        #expect(storage.pendingCount == 0)
    }

    @Test func aFailureInTimeKeepsItsOwnMeaning() {
        let base = StalledStorage(), clock = ManualClock()
        let storage = BoundedStorage(base, waitMilliseconds: 1_000, clock: clock, sweepMilliseconds: nil)
        let answers = Answers<String>()
        storage.write({ _ in "stored" }, completion: answers.record)
        base.release(succeeding: false)
        guard case .failure(let error) = answers.all.first, case .diskFull? = error as? StorageError else {
            Issue.record("expected diskFull, got \(answers.all)")
            return
        }
        #expect(answers.count == 1)
    }

    @Test func theReadinessProbeHasItsOwnShorterBound() {
        let base = StalledStorage(), clock = ManualClock()
        let storage = BoundedStorage(base, waitMilliseconds: 15_000, probeWaitMilliseconds: 2_000, clock: clock, sweepMilliseconds: nil)
        let probe = Answers<Void>(), write = Answers<String>()
        storage.probeWrite(completion: probe.record)
        storage.write({ _ in "stored" }, completion: write.record)
        clock.advance(byMilliseconds: 2_000)
        #expect(storage.expireOverdue() == 1)
        #expect(probe.stalledMessage?.contains("2000 ms") == true)
        #expect(write.count == 0)
        #expect(storage.pendingCount == 1)
        #expect(base.heldCount == 2)
    }

    @Test func readsAndWritesExpireTogetherWhenTheDatabaseStalls() {
        let base = StalledStorage(), clock = ManualClock()
        let storage = BoundedStorage(base, waitMilliseconds: 500, clock: clock, sweepMilliseconds: nil)
        let answers = Answers<String>()
        for _ in 0..<3 { storage.write({ _ in "stored" }, completion: answers.record) }
        clock.advance(byMilliseconds: 100)
        for _ in 0..<2 { storage.read({ _ in "read" }, completion: answers.record) }
        clock.advance(byMilliseconds: 400)
        #expect(storage.expireOverdue() == 3)
        clock.advance(byMilliseconds: 100)
        #expect(storage.expireOverdue() == 2)
        #expect(answers.count == 5)
        base.release()
        #expect(answers.count == 5)
    }
}

extension BoundedStorageTests {
    @Test func atShutdownCallsWaitingLongerThanTheGivenTimeAreAnsweredAtOnce() throws {
        let base = StalledStorage(), clock = ManualClock()
        let storage = BoundedStorage(base, waitMilliseconds: 15_000, clock: clock, sweepMilliseconds: nil)
        let old = Answers<String>(), fresh = Answers<String>()
        storage.write({ _ in "stored" }, completion: old.record)
        clock.advance(byMilliseconds: 1_500)
        storage.write({ _ in "stored" }, completion: fresh.record)
        #expect(storage.expireCalls(waitingAtLeastMilliseconds: 1_000) == 1)
        #expect(old.stalledMessage?.contains("idempotency key") == true)
        #expect(fresh.count == 0)
        base.release()
        #expect(try fresh.all.map { try $0.get() } == ["stored"])
        #expect(old.count == 1)
    }
}

struct ShutdownWatchdogTests {
    @Test func aStepPastItsDeadlineIsNamedOnce() {
        let clock = ManualClock()
        let expired = Mutex<[String]>([])
        let watchdog = ShutdownWatchdog(clock: clock) { step in expired.withLock { $0.append(step) } }
        watchdog.arm("planning", seconds: 7)
        clock.advance(byMilliseconds: 6_999)
        #expect(!watchdog.check())
        watchdog.arm("closing the database", seconds: 3)
        clock.advance(byMilliseconds: 2_999)
        #expect(!watchdog.check())
        clock.advance(byMilliseconds: 1)
        #expect(watchdog.check())
        #expect(watchdog.check())
        #expect(expired.withLock { $0 } == ["closing the database"])
    }

    @Test func aDisarmedWatchdogNeverFires() {
        let clock = ManualClock()
        let expired = Mutex(0)
        let watchdog = ShutdownWatchdog(clock: clock) { _ in expired.withLock { $0 += 1 } }
        #expect(!watchdog.check())
        watchdog.arm("pushes", seconds: 1)
        watchdog.disarm()
        clock.advance(byMilliseconds: 60_000)
        #expect(!watchdog.check())
        #expect(expired.withLock { $0 } == 0)
    }
}
