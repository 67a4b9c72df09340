/// Herald's storage as units of work (DESIGN "Ports and adapters"): every read and write of
/// notifications, plans, deliveries, devices, sessions, preferences, members, idempotency keys
/// and jobs goes through one of these, and no connection type, SQL or row crosses it.
///
/// ```swift
/// storage.write({ tx in
///     let id = try tx.plans.insert(plan)
///     for record in records { _ = try tx.notifications.insert(record) }
///     return try tx.jobs.enqueue(kind: "push.deliver", payloadJSON: json, runAt: now, now: now)
/// }) { result in loop.execute { respond(result) } }
/// ```
///
/// - A write body is one transaction: committed when it returns, rolled back when it throws, so
///   a plan, its notifications and their jobs commit together or not at all. Writes run one at a
///   time, in submission order (SQLite: the one writer connection).
/// - A read body sees one snapshot; it runs concurrently with writes and other reads. A write
///   inside it fails with `StorageError.readOnly`.
/// - Completion handlers run on the adapter's own thread: keep them short, hand results to an
///   event loop. Work is not cancellable once submitted.
/// - The transaction (`any StorageTransaction`) and the repositories it gives must not escape
///   the body.
///
/// Errors: a completion or `throws` gets the body's own error unchanged (an `HTTPError` a route
/// threw, a `DeviceRegistrationError`), or a `StorageError`, never an engine's error type.
///
/// # Thread safety
/// Implementations are `Sendable`: every method may be called from any thread.
public protocol Storage: Sendable {
    /// Runs `body` as one write transaction after the writes already submitted. Never blocks.
    /// - Parameters:
    ///   - body: the unit of work; `StorageError`s from the repositories, or any error of its own.
    ///   - completion: called once with `body`'s result, or its error after the rollback, or a
    ///     `StorageError` from BEGIN/COMMIT (`.closed` after `close()`).
    func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void)

    /// Runs `body` on one snapshot of the data, concurrently with writes. Never blocks.
    /// - Parameters:
    ///   - body: read-only work; a write fails with `StorageError.readOnly`.
    ///   - completion: called once with `body`'s result or error.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T,
                           completion: @escaping @Sendable (Result<T, any Error>) -> Void)

    /// `write(_:completion:)`, blocking the calling thread until it ran.
    /// - Important: For start-up, timers on their own queues, the CLI and tests; never on an
    ///   event loop or in a Task, and never from inside a `write` body (it would wait for itself).
    func writeSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T

    /// `read(_:completion:)`, blocking the calling thread until it ran.
    /// - Important: As `writeSync`; never from inside a `read` body.
    func readSync<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) throws -> T

    /// Whether a write commits right now, by making a small real one after the writes already
    /// submitted (readiness, RL-2): an empty transaction would commit on a full disk.
    /// - Parameter completion: called once with success, or the write's `StorageError`
    ///   (`.diskFull`, `.readOnly`, `.busy`, `.unavailable`, …).
    func probeWrite(completion: @escaping @Sendable (Result<Void, any Error>) -> Void)

    /// This storage's count of the writes that may take a device out of pushes, when every write
    /// unit runs alone, one after another (one writer connection, as SQLite's: a unit then sees
    /// every earlier unit's changes and none of a later one's) and each such write counts in it
    /// inside its unit. `DeliveryWorker` relies on it to skip a device's second read; nil: not
    /// kept (PostgreSQL's pool writes side by side), so a device is always read again.
    var pushAudience: PushAudienceChange? { get }

    /// The time before which no `push.deliver` job can be due, when the adapter keeps it (every
    /// write through this process's one writer, SQLite); nil: not kept, so every claim is made
    /// (PostgreSQL: other nodes queue jobs). `DeliveryWorker` reads it to leave out the claim after
    /// a send that could find nothing (issue 17).
    var jobClaimHorizon: JobClaimHorizon? { get }

    /// The token rotations that moved push jobs in this storage (`JobQueue.movePushJobs`, ADR
    /// 0014), counted inside the moving transaction. Every storage keeps one (no default: a
    /// wrapper that did not pass its base's on would hide rotations from the worker, which then
    /// sent to a replaced device).
    var pushRotations: PushJobRotation.Count { get }
}

extension Storage {
    /// Not kept: writes may run side by side (PostgreSQL's pool).
    public var pushAudience: PushAudienceChange? { nil }

    /// Not kept: every claim is made.
    public var jobClaimHorizon: JobClaimHorizon? { nil }

    /// An empty write unit, for adapters with nothing cheaper that proves a write (it still takes
    /// the write lock).
    public func probeWrite(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        write({ _ in }, completion: completion)
    }
}

extension Storage {
    /// `write(_:completion:)` for async callers: suspends (no thread blocked) until `body` ran.
    /// - Throws: `body`'s error, or a `StorageError`.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            write(body) { continuation.resume(with: $0) }
        }
    }

    /// `read(_:completion:)` for async callers: suspends (no thread blocked) until `body` ran.
    /// - Throws: `body`'s error, or a `StorageError`.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StorageTransaction) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            read(body) { continuation.resume(with: $0) }
        }
    }
}

/// One unit of work: the repositories, all inside the same transaction (or, in a read, the same
/// snapshot). Only valid inside the body it was given to.
public protocol StorageTransaction {
    /// Notifications: storing, the inbox, retention (NO-1, NO-3).
    var notifications: any NotificationRepository { get }
    /// Push plans and their leases (NO-2, DESIGN "Plan ownership").
    var plans: any PlanRepository { get }
    /// The delivery record (NO-8).
    var deliveries: any DeliveryRepository { get }
    /// Push devices (DV-1 … DV-6).
    var devices: any DeviceRepository { get }
    /// Sessions (DV-4).
    var sessions: any SessionRepository { get }
    /// Push preferences (NO-4).
    var preferences: any PreferenceRepository { get }
    /// Scope members (NO-6).
    var members: any MemberRepository { get }
    /// Idempotency keys of `POST /v1/notifications` (NO-1).
    var idempotency: any IdempotencyRepository { get }
    /// The durable job queue (PU-5).
    var jobs: any JobQueue { get }
    /// Users' profiles: their language (NO-5).
    var users: any UserRepository { get }
    /// The apps (AP-1, ADR 0006).
    var apps: any AppRepository { get }

    /// Keeps `action` to run once this write unit has ended, on the adapter's thread before the
    /// unit's completion: with true after its commit, false after its rollback. For what may only
    /// follow a commit, e.g. handing a job leased in the unit to the worker (ADR 0007).
    /// - Returns: false when the adapter cannot report the end (`action` is dropped); the caller
    ///   must then not depend on it.
    func whenEnded(_ action: @escaping (_ committed: Bool) -> Void) -> Bool
}

extension StorageTransaction {
    /// Adapters that cannot report a unit's end keep nothing and say so.
    public func whenEnded(_ action: @escaping (_ committed: Bool) -> Void) -> Bool { false }

    /// Adapters without an apps table refuse every app call (`UnsupportedAppRepository`).
    public var apps: any AppRepository { UnsupportedAppRepository() }
}
