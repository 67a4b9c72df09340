import HeraldCore
import Synchronization

/// Faults a test arms on a `FaultyStorage`: the next `times` calls at a point throw `error`
/// (a full disk by default), which rolls the whole unit of work back, as the real failure would.
final class StorageFaults: Sendable {
    /// Where a fault fires.
    enum Point: Hashable, Sendable {
        /// Storing a call: `plans.insert` (the first write of the notifier's storing transaction).
        case storing
        /// Planning a call: `plans.markPlanned` (the first write of its planning transaction).
        case planning
        /// A push job's outcome: `jobs.complete`, `jobs.retry`, `jobs.deadLetter`.
        case pushOutcome
        /// Just after a job claim ran: the rest of its unit of work fails (as a failed commit would).
        case claimed
        /// A batch of the notification retention purge: `notifications.purge`.
        case purging
        /// The commit of a write unit that wrote a push outcome (`jobs.complete`, `retry`,
        /// `deadLetter`): its body ran to the end, then the unit fails, as a full volume refuses
        /// the WAL frames at `COMMIT` after every statement succeeded.
        case committingOutcome
    }

    private let armed = Mutex<[Point: (times: Int, error: StorageError)]>([:])
    private let fired = Mutex<[Point: Int]>([:])
    private let writeCount = Mutex(0)
    private let readCount = Mutex(0)
    private let claimLimits = Mutex<[Int]>([])
    private let readHook = Mutex<(@Sendable () -> Void)?>(nil)
    private let jobFinds = Mutex(0)
    private let goneHolders = Mutex<Set<String>>([])

    /// Makes the storage know `holders` are gone (their processes died), as PostgreSQL does when
    /// their session locks are (ADR 0023): their plans under a running lease are `.orphaned`, and
    /// a claim takes them.
    func holdersGone(_ holders: Set<String>) { goneHolders.withLock { $0.formUnion(holders) } }

    /// The holders `holdersGone` named.
    var gone: Set<String> { goneHolders.withLock { $0 } }

    /// Jobs read by id so far (`jobs.find`): the worker reads a job row again only after a
    /// token rotation may have moved it (ADR 0014).
    var jobReads: Int { jobFinds.withLock { $0 } }

    func noteJobRead() { jobFinds.withLock { $0 += 1 } }

    /// Runs `action` once, just before the next read unit of work starts, outside any
    /// transaction: a way into the gap between a claim's commit and the read of its devices.
    func beforeNextRead(_ action: @escaping @Sendable () -> Void) { readHook.withLock { $0 = action } }

    /// The action `beforeNextRead` armed, disarmed.
    func takeReadHook() -> (@Sendable () -> Void)? { readHook.withLock { hook in defer { hook = nil }; return hook } }

    /// Write transactions submitted so far (group commit shows as fewer writes than outcomes).
    var writes: Int { writeCount.withLock { $0 } }

    func noteWrite() { writeCount.withLock { $0 += 1 } }

    /// Read transactions submitted so far (`read`, not `readSync`: the worker's own).
    var reads: Int { readCount.withLock { $0 } }

    func noteRead() { readCount.withLock { $0 += 1 } }

    /// The `limit` of every job claim so far, in order.
    var claims: [Int] { claimLimits.withLock { $0 } }

    func noteClaim(limit: Int) { claimLimits.withLock { $0.append(limit) } }

    /// Makes the next `times` calls at `point` throw `error`.
    func fail(_ point: Point, times: Int, with error: StorageError = .diskFull(message: "database or disk is full")) {
        armed.withLock { $0[point] = (times, error) }
    }

    /// Faults still armed at `point`.
    func remaining(_ point: Point) -> Int { armed.withLock { $0[point]?.times ?? 0 } }

    /// Faults that fired at `point` so far.
    func count(_ point: Point) -> Int { fired.withLock { $0[point] ?? 0 } }

    /// Throws when a fault is armed at `point`.
    func check(_ point: Point) throws(StorageError) {
        let error = armed.withLock { armed -> StorageError? in
            guard let fault = armed[point], fault.times > 0 else { return nil }
            armed[point] = (fault.times - 1, fault.error)
            return fault.error
        }
        guard let error else { return }
        fired.withLock { $0[point, default: 0] += 1 }
        throw error
    }
}

/// A `Storage` over a real one (SQLite in memory) whose units of work meet the faults armed in
/// `faults`; everything else goes through unchanged.
struct FaultyStorage: Storage {
    let base: any Storage
    let faults: StorageFaults

    var pushAudience: PushAudienceChange? { base.pushAudience }
    var jobClaimHorizon: JobClaimHorizon? { base.jobClaimHorizon }
    var pushRotations: PushJobRotation.Count { base.pushRotations }

    func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let faults = self.faults
        faults.noteWrite()
        base.write({ tx in
            let wrote = WroteOutcome()
            let result = try body(FaultyTransaction(base: tx, faults: faults, wrote: wrote))
            if wrote.value.load(ordering: .relaxed) { try faults.check(.committingOutcome) }
            return result
        }, completion: completion)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                           completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let faults = self.faults
        faults.takeReadHook()?()
        faults.noteRead()
        base.read({ tx in try body(FaultyTransaction(base: tx, faults: faults)) }, completion: completion)
    }

    func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        let faults = self.faults
        return try base.writeSync { tx in try body(FaultyTransaction(base: tx, faults: faults)) }
    }

    func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T {
        let faults = self.faults
        return try base.readSync { tx in try body(FaultyTransaction(base: tx, faults: faults)) }
    }
}

/// Whether a unit wrote a push outcome (`StorageFaults.Point.committingOutcome`).
private final class WroteOutcome: Sendable {
    let value = Atomic(false)
}

private struct FaultyTransaction: StorageTransaction {
    let base: any StorageTransaction
    let faults: StorageFaults
    var wrote = WroteOutcome()

    var notifications: any NotificationRepository { FaultyNotifications(base: base.notifications, faults: faults) }
    var plans: any PlanRepository { FaultyPlans(base: base.plans, faults: faults) }
    var deliveries: any DeliveryRepository { base.deliveries }
    var devices: any DeviceRepository { base.devices }
    var sessions: any SessionRepository { base.sessions }
    var preferences: any PreferenceRepository { base.preferences }
    var members: any MemberRepository { base.members }
    var users: any UserRepository { base.users }
    var idempotency: any IdempotencyRepository { base.idempotency }
    var jobs: any JobQueue { FaultyJobs(base: base.jobs, faults: faults, wrote: wrote) }

    func whenEnded(_ action: @escaping (Bool) -> Void) -> Bool { base.whenEnded(action) }
}

private struct FaultyPlans: PlanRepository {
    let base: any PlanRepository
    let faults: StorageFaults

    func insert(_ plan: PendingPlan) throws(StorageError) -> Int64 {
        try faults.check(.storing)
        return try base.insert(plan)
    }
    func markPlanned(id: Int64, by node: String) throws(StorageError) -> Bool {
        try faults.check(.planning)
        return try base.markPlanned(id: id, by: node)
    }
    func markPlanned(row sequence: Int64, cursor: String?, by node: String) throws(StorageError) -> Bool {
        try faults.check(.planning)
        return try base.markPlanned(row: sequence, cursor: cursor, by: node)
    }
    func release(rows sequences: [Int64], by node: String) throws(StorageError) -> Int { try base.release(rows: sequences, by: node) }
    func delete(id: Int64) throws(StorageError) { try base.delete(id: id) }
    func claim(by node: String, after: Int64, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(StorageError) -> [PendingPlan] {
        // A gone holder's plans are free to the claim: released first, then claimed as free ones.
        for holder in faults.gone {
            let held = try base.list(after: after, limit: Int(Int32.max)).filter { $0.claimedBy == holder }.map(\.id)
            _ = try base.release(ids: held, by: holder)
        }
        return try base.claim(by: node, after: after, limit: limit, leaseMilliseconds: leaseMilliseconds, now: now)
    }
    func holding(ofPlan id: Int64, now: Int64) throws(StorageError) -> PlanHolding {
        let holding = try base.holding(ofPlan: id, now: now)
        guard holding == .held, let holder = try base.list(after: id - 1, limit: 1).first?.claimedBy, faults.gone.contains(holder) else {
            return holding
        }
        return .orphaned
    }
    func renew(ids: [Int64], by node: String, until: Int64) throws(StorageError) -> Int { try base.renew(ids: ids, by: node, until: until) }
    func release(ids: [Int64], by node: String) throws(StorageError) -> Int { try base.release(ids: ids, by: node) }
    func releaseLeases(heldByOtherThan node: String) throws(StorageError) -> Int { try base.releaseLeases(heldByOtherThan: node) }
    func list(after: Int64, limit: Int) throws(StorageError) -> [PendingPlan] { try base.list(after: after, limit: limit) }
    func notifications(ofPlan id: Int64) throws(StorageError) -> [NotificationRecord] { try base.notifications(ofPlan: id) }
    func adoptLegacyPlans(now: Int64) throws(StorageError) -> Int { try base.adoptLegacyPlans(now: now) }
}

/// The notifications as stored, with the storing fault where a one-recipient call's plan is
/// stored (in its row, ADR 0003's amendment) as `FaultyPlans.insert` has it for a plan row.
private struct FaultyNotifications: NotificationRepository {
    let base: any NotificationRepository
    let faults: StorageFaults

    func insert(_ record: NotificationRecord) throws(StorageError) -> NotificationRecord { try base.insert(record) }
    func insert(_ record: NotificationRecord, carrying plan: PendingPlan) throws(StorageError) -> NotificationRecord? {
        try faults.check(.storing)
        return try base.insert(record, carrying: plan)
    }
    func find(id: String) throws(StorageError) -> NotificationRecord? { try base.find(id: id) }
    func setCursor(sequence: Int64, cursor: String) throws(StorageError) { try base.setCursor(sequence: sequence, cursor: cursor) }
    func page(app: String, userID: String, unreadOnly: Bool, before: Int64?, limit: Int) throws(StorageError) -> [NotificationRecord] {
        try base.page(app: app, userID: userID, unreadOnly: unreadOnly, before: before, limit: limit)
    }
    func unreadCount(app: String, userID: String) throws(StorageError) -> Int { try base.unreadCount(app: app, userID: userID) }
    func markRead(app: String, userID: String, id: String, now: Int64) throws(StorageError) -> MarkReadResult {
        try base.markRead(app: app, userID: userID, id: id, now: now)
    }
    func markAllRead(app: String, userID: String, now: Int64) throws(StorageError) -> Int { try base.markAllRead(app: app, userID: userID, now: now) }
    func purge(createdBefore cutoff: Int64, limit: Int) throws(StorageError) -> Int {
        try faults.check(.purging)
        return try base.purge(createdBefore: cutoff, limit: limit)
    }
    func isPlanned(_ record: NotificationRecord) throws(StorageError) -> Bool { try base.isPlanned(record) }
}

private struct FaultyJobs: JobQueue {
    let base: any JobQueue
    let faults: StorageFaults
    let wrote: WroteOutcome

    func enqueue(kind: String, payloadJSON: String, app: String, runAt: Int64, now: Int64) throws(StorageError) -> Int64 {
        try base.enqueue(kind: kind, payloadJSON: payloadJSON, app: app, runAt: runAt, now: now)
    }
    func enqueue(kind: String, payloadJSON: String, app: String, runAt: Int64, now: Int64, awaiting ack: AwaitedAck) throws(StorageError) -> Int64 {
        try base.enqueue(kind: kind, payloadJSON: payloadJSON, app: app, runAt: runAt, now: now, awaiting: ack)
    }
    func awaitsAck(app: String, userID: String, sessionID: String, eventIDs: [String]) throws(StorageError) -> Bool {
        try base.awaitsAck(app: app, userID: userID, sessionID: sessionID, eventIDs: eventIDs)
    }
    func cancelAcknowledged(app: String, userID: String, sessionID: String, eventIDs: [String], note: String) throws(StorageError) -> [JobRecord] {
        try base.cancelAcknowledged(app: app, userID: userID, sessionID: sessionID, eventIDs: eventIDs, note: note)
    }
    func enqueueLeased(kind: String, payloadJSON: String, app: String, leaseUntil: Int64, now: Int64) throws(StorageError) -> JobRecord {
        try base.enqueueLeased(kind: kind, payloadJSON: payloadJSON, app: app, leaseUntil: leaseUntil, now: now)
    }
    func claim(kind: String, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(StorageError) -> [JobRecord] {
        faults.noteClaim(limit: limit)
        let claimed = try base.claim(kind: kind, limit: limit, leaseMilliseconds: leaseMilliseconds, now: now)
        try faults.check(.claimed)
        return claimed
    }
    func complete(_ lease: JobLease, note: String?) throws(StorageError) -> Bool {
        try faults.check(.pushOutcome)
        wrote.value.store(true, ordering: .relaxed)
        return try base.complete(lease, note: note)
    }
    func retry(_ lease: JobLease, runAt: Int64, error: String, attempt: JobAttempt) throws(StorageError) -> Bool {
        try faults.check(.pushOutcome)
        wrote.value.store(true, ordering: .relaxed)
        return try base.retry(lease, runAt: runAt, error: error, attempt: attempt)
    }
    func deadLetter(_ lease: JobLease, error: String, cause: DeadLetterCause, now: Int64) throws(StorageError) -> Bool {
        try faults.check(.pushOutcome)
        wrote.value.store(true, ordering: .relaxed)
        return try base.deadLetter(lease, error: error, cause: cause, now: now)
    }
    func movePushJobs(fromDevices: [String], toDevice: String) throws(StorageError) -> Int {
        try base.movePushJobs(fromDevices: fromDevices, toDevice: toDevice)
    }
    func releaseLeases(kind: String, now: Int64) throws(StorageError) -> Int { try base.releaseLeases(kind: kind, now: now) }
    func find(id: Int64, app: String) throws(StorageError) -> JobRecord? {
        faults.noteJobRead()
        return try base.find(id: id, app: app)
    }
    func list(app: String, state: JobState, limit: Int, beforeID: Int64?) throws(StorageError) -> [JobRecord] {
        try base.list(app: app, state: state, limit: limit, beforeID: beforeID)
    }
    func retryDead(id: Int64, app: String, now: Int64) throws(StorageError) -> Bool { try base.retryDead(id: id, app: app, now: now) }
    func retryDead(matching filter: DeadJobFilter, now: Int64) throws(StorageError) -> Int { try base.retryDead(matching: filter, now: now) }
    func depth(now: Int64) throws(StorageError) -> JobQueueDepth { try base.depth(now: now) }
    func purgeDone(createdBefore cutoff: Int64, limit: Int) throws(StorageError) -> Int { try base.purgeDone(createdBefore: cutoff, limit: limit) }
}
