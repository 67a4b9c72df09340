/// One notification for one recipient as stored (NO-1): an inbox row (NO-3) and the source of
/// its pushes (NO-2). Texts stay JSON as the API received them; Storage does not read them.
public struct NotificationRecord: Sendable, Equatable {
    /// The row's `seq`: grows with insertion, the inbox's paging cursor.
    public var sequence: Int64
    public var id: String
    public var app: String
    public var userID: String
    public var kind: String
    public var scope: String?
    /// Per-locale texts or a catalog key, JSON (NO-5).
    public var titleJSON: String?
    public var bodyJSON: String?
    /// Catalog arguments, JSON.
    public var argsJSON: String?
    /// Flat string map, JSON object.
    public var dataJSON: String
    public var collapseKey: String?
    public var threadID: String?
    /// `normal`, `high` or `urgent`.
    public var priority: String
    /// Unix ms after which no push is sent; nil = no expiry.
    public var expiresAt: Int64?
    /// False for push-only notifications: never listed or counted in the inbox.
    public var inInbox: Bool
    /// The stream cursor of its live event, set once broadcast.
    public var cursor: String?
    /// The call's plan (`PendingPlan.id`), set when stored; the plan is gone once the pushes are
    /// planned. nil for rows stored before schema 5 (their plan, if any, is adopted).
    public var planID: Int64?
    /// The push plan's input, JSON, while the pushes are not planned: as builds before schema 4
    /// stored it on every row, or (ADR 0003's amendment) a one-recipient call's plan held in its
    /// row, with `planLeaseUntil`. nil otherwise; recovery adopts the rows nobody holds
    /// (`PlanRepository.adoptLegacyPlans(now:)`).
    public var planJSON: String?
    /// Unix ms until which the node that stored the row holds the plan in `planJSON`; 0 once
    /// released, nil for rows of older builds and rows without a plan of their own.
    public var planLeaseUntil: Int64?
    /// Unix ms.
    public var createdAt: Int64
    /// Unix ms the user read it; nil while unread.
    public var readAt: Int64?

    /// `sequence` is assigned by the store on insert; a record to insert leaves it 0.
    public init(sequence: Int64 = 0, id: String, app: String = "default", userID: String, kind: String, scope: String? = nil,
                titleJSON: String? = nil, bodyJSON: String? = nil, argsJSON: String? = nil, dataJSON: String = "{}",
                collapseKey: String? = nil, threadID: String? = nil, priority: String = "normal", expiresAt: Int64? = nil,
                inInbox: Bool = true, cursor: String? = nil, planID: Int64? = nil, planJSON: String? = nil, createdAt: Int64,
                readAt: Int64? = nil, planLeaseUntil: Int64? = nil) {
        self.sequence = sequence
        self.id = id
        self.app = app
        self.userID = userID
        self.kind = kind
        self.scope = scope
        self.titleJSON = titleJSON
        self.bodyJSON = bodyJSON
        self.argsJSON = argsJSON
        self.dataJSON = dataJSON
        self.collapseKey = collapseKey
        self.threadID = threadID
        self.priority = priority
        self.expiresAt = expiresAt
        self.inInbox = inInbox
        self.cursor = cursor
        self.planID = planID
        self.planJSON = planJSON
        self.createdAt = createdAt
        self.readAt = readAt
        self.planLeaseUntil = planLeaseUntil
    }
}

/// What marking one notification read found (NO-3).
public enum MarkReadResult: Sendable, Equatable {
    /// No such notification for this user (another user's counts as missing).
    case notFound
    /// Read before, at this unix ms; nothing changed.
    case alreadyRead(at: Int64)
    /// Marked read now, at this unix ms.
    case marked(at: Int64)
}
