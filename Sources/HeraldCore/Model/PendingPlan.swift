/// One call's push plan, stored with its notifications and deleted once their pushes are
/// planned (NO-2). A crash in between leaves it, and recovery plans the call from it.
public struct PendingPlan: Sendable, Equatable {
    /// `seq` of the call's first and last notification: the call stored them one after another
    /// in one transaction, so they are every row in between.
    public var firstSequence: Int64
    public var lastSequence: Int64
    /// The push plan's input, JSON (the API's `NotificationPlan`).
    public var planJSON: String
    /// Unix ms.
    public var createdAt: Int64

    public init(firstSequence: Int64, lastSequence: Int64, planJSON: String, createdAt: Int64) {
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
        self.planJSON = planJSON
        self.createdAt = createdAt
    }
}
