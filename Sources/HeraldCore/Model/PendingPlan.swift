/// One call's push plan, stored with its notifications and deleted once their pushes are
/// planned (NO-2). A crash in between leaves it, and recovery plans the call from it.
///
/// A plan is identified by its call (`id`), and its notifications name it (`NotificationRecord
/// .planID`). Whoever plans it holds it as a lease, like a job (DESIGN "Plan ownership"): a live
/// call stores its plan already claimed by its node; recovery claims only plans whose lease is
/// over or that have no owner, so it never races a live call, on this node or another.
public struct PendingPlan: Sendable, Equatable {
    /// Assigned by the store, never reused; 0 before it is stored.
    public var id: Int64
    /// The push plan's input, JSON (the API's `NotificationPlan`).
    public var planJSON: String
    /// Unix ms.
    public var createdAt: Int64
    /// The node holding the plan (`Notifier.nodeID`); nil when nobody does (stored by an older
    /// build, or released).
    public var claimedBy: String?
    /// Unix ms until which `claimedBy` holds it; past it, recovery may claim it. nil with `claimedBy`.
    public var leaseUntil: Int64?

    public init(id: Int64 = 0, planJSON: String, createdAt: Int64, claimedBy: String? = nil, leaseUntil: Int64? = nil) {
        precondition((claimedBy == nil) == (leaseUntil == nil), "a plan's owner and lease go together")
        self.id = id
        self.planJSON = planJSON
        self.createdAt = createdAt
        self.claimedBy = claimedBy
        self.leaseUntil = leaseUntil
    }
}

/// Where a live call's plan is held while its pushes are not planned (ADR 0003 and its amendment).
public enum PlanHold: Sendable, Equatable {
    /// A plan row (`PendingPlan.id`) that the call's notifications name in `planID`.
    case table(id: Int64)
    /// The row of the call's only notification (its `sequence`), which carries the plan itself.
    case row(sequence: Int64)
}

/// Who may plan a stored plan now (`PlanRepository.holding(ofPlan:now:)`, ADR 0023).
public enum PlanHolding: Sendable, Equatable {
    /// Nobody holds it (released, or its lease is over), or it is gone (planned): a repeat of its
    /// call gets the stored answer; recovery takes it at its next pass.
    case free
    /// Claimed under a running lease by a holder that is, or may be, alive (planning it now).
    case held
    /// Its lease runs, but its holder is known to be gone (its process died): free for any
    /// node's recovery now.
    case orphaned
}
