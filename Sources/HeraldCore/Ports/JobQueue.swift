/// What a planned `unless_acked` push waits for (NO-2, ADR 0025): session `sessionID`'s ack of
/// the live event `eventID` (1-64 bytes, the id `POST /v1/me/acks` names).
public struct AwaitedAck: Sendable, Equatable {
    public let sessionID: String
    public let eventID: String

    public init(sessionID: String, eventID: String) {
        self.sessionID = sessionID
        self.eventID = eventID
    }

    /// Whether a waiting job's payload is user `userID`'s push (its `origin.user_id`): adapters
    /// check the few rows the index found here, not in SQL, where a malformed payload elsewhere
    /// in the table could fail the statement.
    public static func isUsers(_ userID: String, payloadJSON: String) -> Bool {
        (try? DeliveryJobPayload.decode(payloadJSON))?.origin?.userID == userID
    }
}

/// The durable job queue (PU-5), e.g. one `push.deliver` job per device. Part of a unit of work,
/// so jobs commit with what made them (a plan's jobs with its planning). Times are unix ms.
///
/// A job is claimed with a lease: a worker that dies holding it leaves it due again once the
/// lease passes, so a `kill -9` loses nothing. Each claim counts an attempt, and the record's
/// `lease` (id + attempt) is the fencing token: `complete`, `retry` and `deadLetter` succeed only
/// while the job is still leased under it, so a worker whose lease ran out cannot record an
/// outcome for a job another claim took over. Those three return false instead; the caller then
/// records nothing (throwing rolls back its unit of work).
public protocol JobQueue {
    /// Adds a job of app `app` (the device's, ADR 0006: its server key lists and retries it),
    /// due at `runAt`. - Returns: its id.
    @discardableResult
    func enqueue(kind: String, payloadJSON: String, app: String, runAt: Int64, now: Int64) throws(StorageError) -> Int64

    /// `enqueue(kind:payloadJSON:app:runAt:now:)` for a job that waits for `ack` (NO-2
    /// `unless_acked`, ADR 0025): found by `awaitsAck` and cancelled by `cancelAcknowledged`
    /// while it is queued. - Returns: its id.
    @discardableResult
    func enqueue(kind: String, payloadJSON: String, app: String, runAt: Int64, now: Int64, awaiting ack: AwaitedAck) throws(StorageError) -> Int64

    /// Whether a queued job of app `app` waits for user `userID`'s session `sessionID`'s ack of
    /// one of `eventIDs` (ADR 0025): a read through an index holding only such jobs. The user is
    /// the payload's `origin.user_id`: event ids are per user channel, and a sid is the app's to give.
    func awaitsAck(app: String, userID: String, sessionID: String, eventIDs: [String]) throws(StorageError) -> Bool

    /// Marks done, with `note`, every queued job of app `app` waiting for user `userID`'s session
    /// `sessionID`'s ack of one of `eventIDs` (ADR 0025); a job already claimed is left to its worker.
    /// - Returns: the jobs as they were before (their payloads name the delivery record).
    func cancelAcknowledged(app: String, userID: String, sessionID: String, eventIDs: [String], note: String) throws(StorageError) -> [JobRecord]

    /// Adds a job of app `app` already leased to the caller's worker (ADR 0007): the row a claim
    /// at `now` would leave (`leased`, attempt 1, first attempt and due at `now`), leased until
    /// `leaseUntil` (unix ms). The caller sends it itself after the commit; nobody claims it
    /// unless its lease runs out.
    /// - Returns: the job as stored; its `lease` fences the outcome.
    func enqueueLeased(kind: String, payloadJSON: String, app: String, leaseUntil: Int64, now: Int64) throws(StorageError) -> JobRecord

    /// Leases up to `limit` due jobs of `kind` (queued and due, or leased with a lease over),
    /// oldest due first, until `now + leaseMilliseconds`, counting an attempt for each (and
    /// setting `firstAttemptAt` to `now` on a job's first claim).
    func claim(kind: String, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(StorageError) -> [JobRecord]

    /// Marks the job done, with an optional note of how it ended. Fenced by `lease`.
    /// - Returns: false when the job is no longer leased under `lease`.
    func complete(_ lease: JobLease, note: String?) throws(StorageError) -> Bool

    /// Puts the job back in the queue, due at `runAt`, remembering why. Fenced by `lease`.
    /// - Parameter attempt: how the attempt counts: `.uncounted` (it never reached its
    ///   destination: no connection, no auth token) adds it to `uncountedAttempts`; `.turnedAway`
    ///   (not sent for its turn) to `uncountedAttempts` and `turnedAwayAttempts`. `attempts`, the
    ///   fencing number, still grows with every claim.
    /// - Returns: false when the job is no longer leased under `lease`.
    func retry(_ lease: JobLease, runAt: Int64, error: String, attempt: JobAttempt) throws(StorageError) -> Bool

    /// Gives the job up (a dead letter) at `now`, with its error text and cause. Fenced by `lease`.
    /// - Parameter cause: kept for bulk retry by provider and reason (`DeadJobFilter`).
    /// - Returns: false when the job is no longer leased under `lease`.
    func deadLetter(_ lease: JobLease, error: String, cause: DeadLetterCause, now: Int64) throws(StorageError) -> Bool

    /// Moves the pushes still owed to devices that a token rotation replaced to the device that
    /// replaced them (DV-1: the same app, user, session and platform; the registration's unit of
    /// work calls it). Every `push.deliver` job queued or leased (not done, not dead) whose
    /// payload names one of `fromDevices` names `toDevice` instead, and nothing else changes: its
    /// push id (PU-5b), attempts, retry budget, due time and lease stay. A leased job may be in
    /// flight to the old token: its send ends as it ends, fenced by its lease as before, and only
    /// a retry is sent to `toDevice`; one whose send has not started goes to `toDevice` (the
    /// delivery worker reads its row again, ADR 0014). A job is one row, so it is never sent to
    /// both, nor twice.
    /// `push.receipt` jobs (PU-8a) whose push names one of `fromDevices` move the same way: their
    /// push's `device_id` names `toDevice`, and `sent_device_id` keeps the device it went to.
    /// A rotation that moves jobs counts in its storage's `Storage.pushRotations` before its commit.
    /// One job per notification reaches `toDevice`: a job whose notification already has one
    /// queued or leased for it, or one moved by this call (the oldest moves), is left as it is
    /// (moved, that notification would reach the device twice; left, it ends `device_gone`).
    /// Dead letters stay: each is the record of a send that failed for its device, and a retry
    /// of one is the operator's act (docs/operations.md). A payload this version cannot read is
    /// left too.
    /// - Parameters:
    ///   - fromDevices: the replaced devices' ids (`devices.id`).
    ///   - toDevice: the id of the device that replaced them.
    /// - Returns: how many jobs now name `toDevice`.
    @discardableResult
    func movePushJobs(fromDevices: [String], toDevice: String) throws(StorageError) -> Int

    /// Makes every leased job of `kind` due at `now` at the latest. For one process per queue, at
    /// start: a lease still held belongs to a process that died. - Returns: how many.
    @discardableResult
    func releaseLeases(kind: String, now: Int64) throws(StorageError) -> Int

    /// A job by id, if it is app `app`'s (another app's job is not found, ADR 0006).
    func find(id: Int64, app: String) throws(StorageError) -> JobRecord?

    /// App `app`'s jobs in `state`, newest first, `limit` at most, with ids below `beforeID` (paging).
    func list(app: String, state: JobState, limit: Int, beforeID: Int64?) throws(StorageError) -> [JobRecord]

    /// Sends one dead job of app `app` back to the queue with fresh attempts and a fresh retry
    /// budget, due at `now`.
    /// - Returns: false when it does not exist, is another app's, or is not dead.
    func retryDead(id: Int64, app: String, now: Int64) throws(StorageError) -> Bool

    /// Sends every dead job matching `filter` (its app's only) back to the queue with fresh
    /// attempts and a fresh retry budget, due at `now`
    /// (after a provider outage, a credentials fix). - Returns: how many.
    @discardableResult
    func retryDead(matching filter: DeadJobFilter, now: Int64) throws(StorageError) -> Int

    /// Jobs per state and the age of the oldest due job (`/metrics`), every app's together.
    func depth(now: Int64) throws(StorageError) -> JobQueueDepth

    /// Deletes at most `limit` done jobs created before `cutoff` (unix ms), lowest id first, so
    /// that the retention purge of a large table is a series of short writes (call again while it
    /// returns `limit`). An adapter may leave a job created out of id order to a later call.
    /// - Returns: how many were deleted.
    @discardableResult
    func purgeDone(createdBefore cutoff: Int64, limit: Int) throws(StorageError) -> Int
}

extension JobQueue {
    /// Every done job created before `cutoff`, in one write: `purgeDone(createdBefore:limit:)`
    /// without a limit.
    @discardableResult
    public func purgeDone(createdBefore cutoff: Int64) throws(StorageError) -> Int {
        try purgeDone(createdBefore: cutoff, limit: Int(Int64.max))
    }

    /// `enqueue(kind:payloadJSON:app:runAt:now:)` for the `default` app.
    @discardableResult
    public func enqueue(kind: String, payloadJSON: String, runAt: Int64, now: Int64) throws(StorageError) -> Int64 {
        try enqueue(kind: kind, payloadJSON: payloadJSON, app: AppID.default.rawValue, runAt: runAt, now: now)
    }

    /// `find(id:app:)` for the `default` app.
    public func find(id: Int64) throws(StorageError) -> JobRecord? {
        try find(id: id, app: AppID.default.rawValue)
    }

    /// `list(app:state:limit:beforeID:)` for the `default` app.
    public func list(state: JobState, limit: Int, beforeID: Int64?) throws(StorageError) -> [JobRecord] {
        try list(app: AppID.default.rawValue, state: state, limit: limit, beforeID: beforeID)
    }

    /// `retryDead(id:app:now:)` for the `default` app.
    public func retryDead(id: Int64, now: Int64) throws(StorageError) -> Bool {
        try retryDead(id: id, app: AppID.default.rawValue, now: now)
    }

    /// `complete(_:note:)` without a note.
    public func complete(_ lease: JobLease) throws(StorageError) -> Bool {
        try complete(lease, note: nil)
    }

    /// `deadLetter(_:error:cause:now:)` with the cause read from `error` (its code) and no provider.
    public func deadLetter(_ lease: JobLease, error: String, now: Int64) throws(StorageError) -> Bool {
        try deadLetter(lease, error: error, cause: DeadLetterCause(provider: nil, reason: DeadLetterCause.code(of: error)), now: now)
    }

    /// `retry(_:runAt:error:attempt:)` for an attempt that counts.
    public func retry(_ lease: JobLease, runAt: Int64, error: String) throws(StorageError) -> Bool {
        try retry(lease, runAt: runAt, error: error, attempt: .counted)
    }

    /// `retry(_:runAt:error:attempt:)`: `.counted`, or `.uncounted` when `countsAttempt` is false.
    public func retry(_ lease: JobLease, runAt: Int64, error: String, countsAttempt: Bool) throws(StorageError) -> Bool {
        try retry(lease, runAt: runAt, error: error, attempt: countsAttempt ? .counted : .uncounted)
    }
}

/// How a retried attempt counts (`JobQueue.retry(_:runAt:error:attempt:)`).
public enum JobAttempt: Sendable, Equatable {
    /// It reached its destination: toward the retry policy's cap and the backoff.
    case counted
    /// It never reached its destination (no connection, no auth token): toward the backoff only.
    case uncounted
    /// Not sent for its turn (Web Push's `origin_busy`, ADR 0024): toward neither.
    case turnedAway
}

/// How full the queue is.
public struct JobQueueDepth: Sendable, Equatable {
    /// Jobs per state (a state with none may be absent).
    public var counts: [JobState: Int]
    /// Milliseconds the oldest due queued job has waited; 0 when none is due.
    public var oldestDueAgeMilliseconds: Int64

    public init(counts: [JobState: Int], oldestDueAgeMilliseconds: Int64) {
        self.counts = counts
        self.oldestDueAgeMilliseconds = oldestDueAgeMilliseconds
    }
}
