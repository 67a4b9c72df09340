/// Notifications as stored (NO-1) and read back as the inbox (NO-3). Times are unix ms; `app` is
/// the tenant (`"default"` today).
public protocol NotificationRepository {
    /// Stores a new notification; the store assigns `sequence`, and `cursor` and `readAt` start
    /// empty whatever `record` holds.
    /// - Returns: the stored record, with its `sequence`.
    /// - Throws: `.constraint(.unique, _)` for a known id, `.constraint(.check, _)` for an
    ///   unknown priority.
    func insert(_ record: NotificationRecord) throws(StorageError) -> NotificationRecord

    /// Stores a call's only notification with the call's push plan in its row, held as
    /// `plan.claimedBy` and `plan.leaseUntil` say (ADR 0003's amendment); `record.planID` and
    /// `record.planJSON` are ignored. The hold is then `PlanHold.row(sequence:)` of the record.
    /// - Returns: the stored record, or nil (nothing stored) when the adapter keeps every plan
    ///   in its plan table: store a plan row and the record with `insert(_:)` instead.
    /// - Throws: as `insert(_:)`.
    func insert(_ record: NotificationRecord, carrying plan: PendingPlan) throws(StorageError) -> NotificationRecord?

    /// A notification by id, whoever it belongs to.
    func find(id: String) throws(StorageError) -> NotificationRecord?

    /// Sets the stream cursor of the notification's live event once broadcast (NO-2).
    /// - Parameter sequence: the record's `sequence`.
    func setCursor(sequence: Int64, cursor: String) throws(StorageError)

    /// One page of a user's inbox, newest first; push-only notifications are left out.
    /// - Parameters:
    ///   - unreadOnly: only notifications not read yet.
    ///   - before: the `sequence` of the previous page's last record; nil for the first page.
    ///   - limit: records at most (not negative).
    func page(app: String, userID: String, unreadOnly: Bool, before: Int64?, limit: Int) throws(StorageError) -> [NotificationRecord]

    /// Unread inbox notifications of a user (also the badge).
    func unreadCount(app: String, userID: String) throws(StorageError) -> Int

    /// Marks one of the user's inbox notifications read at `now`. Another user's, a push-only
    /// and a missing one are all `.notFound`, so ids of others cannot be probed.
    func markRead(app: String, userID: String, id: String, now: Int64) throws(StorageError) -> MarkReadResult

    /// Marks every unread inbox notification of the user read at `now`. - Returns: how many.
    func markAllRead(app: String, userID: String, now: Int64) throws(StorageError) -> Int

    /// Deletes at most `limit` notifications created before `cutoff` (unix ms), read or not, with
    /// every delivery record carrying their ids, as one write (ADR 0012): the retention purge of a
    /// large table is a series of short writes (call again while it returns `limit`), and a batch
    /// is deleted whole or not at all. Reads only rows it deletes (an index on their age).
    /// - Returns: how many notifications were deleted.
    @discardableResult
    func purge(createdBefore cutoff: Int64, limit: Int) throws(StorageError) -> Int

    /// Whether the notification's pushes are planned: its plan is gone (and it carries no plan of
    /// a pre-schema-4 build).
    func isPlanned(_ record: NotificationRecord) throws(StorageError) -> Bool
}

extension NotificationRepository {
    /// Every notification created before `cutoff`, with their records, in one write:
    /// `purge(createdBefore:limit:)` without a limit.
    @discardableResult
    public func purge(createdBefore cutoff: Int64) throws(StorageError) -> Int {
        try purge(createdBefore: cutoff, limit: Int(Int64.max))
    }

    /// Adapters without plans in notification rows store none there.
    public func insert(_ record: NotificationRecord, carrying plan: PendingPlan) throws(StorageError) -> NotificationRecord? { nil }

    /// `page(app:…)` for the default app.
    public func page(userID: String, unreadOnly: Bool, before: Int64?, limit: Int) throws(StorageError) -> [NotificationRecord] {
        try page(app: "default", userID: userID, unreadOnly: unreadOnly, before: before, limit: limit)
    }

    /// `unreadCount(app:userID:)` for the default app.
    public func unreadCount(userID: String) throws(StorageError) -> Int {
        try unreadCount(app: "default", userID: userID)
    }

    /// `markRead(app:…)` for the default app.
    public func markRead(userID: String, id: String, now: Int64) throws(StorageError) -> MarkReadResult {
        try markRead(app: "default", userID: userID, id: id, now: now)
    }

    /// `markAllRead(app:…)` for the default app.
    public func markAllRead(userID: String, now: Int64) throws(StorageError) -> Int {
        try markAllRead(app: "default", userID: userID, now: now)
    }
}

/// Push plans while their pushes are not planned (NO-2), each held by one node as a lease
/// (DESIGN "Plan ownership"): a live call stores its plan claimed by its node; recovery claims
/// only plans nobody holds or whose lease is over, and renews them while it plans; the planning
/// unit of work deletes the plan, fenced by its holder. Times are unix ms.
public protocol PlanRepository {
    /// Stores a call's plan (its `id` is ignored), claimed as `plan.claimedBy` says. Store the
    /// call's notifications with `planID` set to the id returned, in the same unit of work.
    /// - Returns: the plan's id, never one an earlier plan had.
    func insert(_ plan: PendingPlan) throws(StorageError) -> Int64

    /// The plan's pushes are planned: the plan goes. Fenced: only while `node` holds it.
    /// - Returns: false when `node` no longer holds it (gone, or taken over after its lease ran
    ///   out); the caller must then record nothing of its planning.
    func markPlanned(id: Int64, by node: String) throws(StorageError) -> Bool

    /// The pushes of the plan held in the row `sequence` (`PlanHold.row`) are planned: the row
    /// gets its event `cursor` (nil: none) and loses its plan and hold. Fenced: only while `node`
    /// holds it. - Returns: false when `node` no longer holds it; nothing is written then.
    func markPlanned(row sequence: Int64, cursor: String?, by node: String) throws(StorageError) -> Bool

    /// Deletes a plan whoever holds it (one that cannot be read is given up).
    func delete(id: Int64) throws(StorageError)

    /// Claims for `node`, until `now + leaseMilliseconds`, up to `limit` plans with ids above
    /// `after` that nobody holds or whose lease is over, oldest first, atomically (two claimers
    /// never get the same plan).
    func claim(by node: String, after: Int64, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(StorageError) -> [PendingPlan]

    /// Extends `node`'s hold on `ids` to `until`. - Returns: how many it still held.
    @discardableResult
    func renew(ids: [Int64], by node: String, until: Int64) throws(StorageError) -> Int

    /// Ends `node`'s hold on `ids` (planning failed), so recovery may claim them at once.
    /// - Returns: how many it held.
    @discardableResult
    func release(ids: [Int64], by node: String) throws(StorageError) -> Int

    /// Ends `node`'s hold on the plans held in the rows `sequences` (planning failed), so
    /// recovery may adopt them at once. - Returns: how many it held.
    @discardableResult
    func release(rows sequences: [Int64], by node: String) throws(StorageError) -> Int

    /// Ends every hold of a node other than `node`. For adapters with one process per database
    /// (SQLite), at start: such a hold belongs to a process that died. - Returns: how many.
    @discardableResult
    func releaseLeases(heldByOtherThan node: String) throws(StorageError) -> Int

    /// Stored plans with ids above `after`, oldest first, whoever holds them (inspection).
    func list(after: Int64, limit: Int) throws(StorageError) -> [PendingPlan]

    /// Who may plan plan `id` at `now` (an idempotency key's repeat asks, ADR 0023): `.held`
    /// while it is claimed under a running lease by a holder that may be alive, `.orphaned` when
    /// the lease runs but the adapter knows its holder is gone (PostgreSQL: its session lock is
    /// not held), `.free` when nobody holds it or it is gone (planned).
    func holding(ofPlan id: Int64, now: Int64) throws(StorageError) -> PlanHolding

    /// The notifications of plan `id`, in order of storing.
    func notifications(ofPlan id: Int64) throws(StorageError) -> [NotificationRecord]

    /// Turns the plans notification rows carry and nobody holds (hold released, or its lease
    /// over at `now`) into plans without an owner: one per call for rows a pre-schema-4 build
    /// stored with a per-row plan, one per row for a one-recipient call's (ADR 0003's
    /// amendment). Recovery runs it first. - Returns: plans made.
    @discardableResult
    func adoptLegacyPlans(now: Int64) throws(StorageError) -> Int
}

extension PlanRepository {
    /// By the lease alone, one read of the plan: adapters that cannot tell a dead holder from a
    /// live one (SQLite, where the start releases a dead process's holds) never answer `.orphaned`.
    public func holding(ofPlan id: Int64, now: Int64) throws(StorageError) -> PlanHolding {
        guard let plan = try list(after: id - 1, limit: 1).first, plan.id == id else { return .free }
        return plan.claimedBy != nil && (plan.leaseUntil ?? 0) > now ? .held : .free
    }

    /// Adapters that keep no plan in notification rows never hold one there.
    public func markPlanned(row sequence: Int64, cursor: String?, by node: String) throws(StorageError) -> Bool { false }

    /// Adapters that keep no plan in notification rows hold none there.
    @discardableResult
    public func release(rows sequences: [Int64], by node: String) throws(StorageError) -> Int { 0 }

    /// `claim(by:after:…)` from the oldest plan.
    public func claim(by node: String, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(StorageError) -> [PendingPlan] {
        try claim(by: node, after: 0, limit: limit, leaseMilliseconds: leaseMilliseconds, now: now)
    }
}
