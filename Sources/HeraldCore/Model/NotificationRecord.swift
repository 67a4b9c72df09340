/// One notification for one recipient as stored (NO-1): an inbox row (NO-3) and the source of
/// its pushes (NO-2). Texts stay JSON as the API received them; Storage does not read them.
public struct NotificationRecord: Sendable, Equatable {
    /// The fields, in one shared box: a stored row goes through the batch, its broadcast, its
    /// planning and the answer, and as a plain struct each copy (every loop over a call's rows)
    /// retained and released its dozen strings (issue 17: ~100 of each a notification at the
    /// choke point). Copy on write: a change to a shared box copies it first.
    private var fields: Fields

    /// The stored fields. Mutated only through `unique()`, i.e. while one record owns it.
    private final class Fields: CopyOnWriteFields, @unchecked Sendable {
        var sequence: Int64
        var id: String
        var app: String
        var userID: String
        var kind: String
        var scope: String?
        var titleJSON: String?
        var bodyJSON: String?
        var argsJSON: String?
        var dataJSON: String
        var collapseKey: String?
        var threadID: String?
        var priority: String
        var expiresAt: Int64?
        var inInbox: Bool
        var cursor: String?
        var planID: Int64?
        var planJSON: String?
        var planLeaseUntil: Int64?
        var createdAt: Int64
        var readAt: Int64?

        init(sequence: Int64, id: String, app: String, userID: String, kind: String, scope: String?, titleJSON: String?, bodyJSON: String?,
            argsJSON: String?, dataJSON: String, collapseKey: String?, threadID: String?, priority: String, expiresAt: Int64?,
            inInbox: Bool, cursor: String?, planID: Int64?, planJSON: String?, planLeaseUntil: Int64?, createdAt: Int64, readAt: Int64?) {
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
            self.planLeaseUntil = planLeaseUntil
            self.createdAt = createdAt
            self.readAt = readAt
        }

        func copy() -> Fields {
            Fields(sequence: sequence, id: id, app: app, userID: userID, kind: kind, scope: scope, titleJSON: titleJSON, bodyJSON: bodyJSON,
                argsJSON: argsJSON, dataJSON: dataJSON, collapseKey: collapseKey, threadID: threadID, priority: priority,
                expiresAt: expiresAt, inInbox: inInbox, cursor: cursor, planID: planID, planJSON: planJSON, planLeaseUntil: planLeaseUntil,
                createdAt: createdAt, readAt: readAt)
        }

        func equals(_ other: Fields) -> Bool {
            sequence == other.sequence
                && id == other.id
                && app == other.app
                && userID == other.userID
                && kind == other.kind
                && scope == other.scope
                && titleJSON == other.titleJSON
                && bodyJSON == other.bodyJSON
                && argsJSON == other.argsJSON
                && dataJSON == other.dataJSON
                && collapseKey == other.collapseKey
                && threadID == other.threadID
                && priority == other.priority
                && expiresAt == other.expiresAt
                && inInbox == other.inInbox
                && cursor == other.cursor
                && planID == other.planID
                && planJSON == other.planJSON
                && planLeaseUntil == other.planLeaseUntil
                && createdAt == other.createdAt
                && readAt == other.readAt
        }
    }

    /// The box, copied first when another record shares it.
    private mutating func unique() -> Fields { uniqueFields(&fields) }

    /// Field by field, at once when both share one box.
    public static func == (lhs: NotificationRecord, rhs: NotificationRecord) -> Bool { sameFields(lhs.fields, rhs.fields) }

    /// The row's `seq`: grows with insertion, the inbox's paging cursor.
    public var sequence: Int64 {
        get { fields.sequence }
        set { unique().sequence = newValue }
    }
    public var id: String {
        get { fields.id }
        set { unique().id = newValue }
    }
    public var app: String {
        get { fields.app }
        set { unique().app = newValue }
    }
    public var userID: String {
        get { fields.userID }
        set { unique().userID = newValue }
    }
    public var kind: String {
        get { fields.kind }
        set { unique().kind = newValue }
    }
    public var scope: String? {
        get { fields.scope }
        set { unique().scope = newValue }
    }
    /// Per-locale texts or a catalog key, JSON (NO-5).
    public var titleJSON: String? {
        get { fields.titleJSON }
        set { unique().titleJSON = newValue }
    }
    public var bodyJSON: String? {
        get { fields.bodyJSON }
        set { unique().bodyJSON = newValue }
    }
    /// Catalog arguments, JSON.
    public var argsJSON: String? {
        get { fields.argsJSON }
        set { unique().argsJSON = newValue }
    }
    /// Flat string map, JSON object.
    public var dataJSON: String {
        get { fields.dataJSON }
        set { unique().dataJSON = newValue }
    }
    public var collapseKey: String? {
        get { fields.collapseKey }
        set { unique().collapseKey = newValue }
    }
    public var threadID: String? {
        get { fields.threadID }
        set { unique().threadID = newValue }
    }
    /// `normal`, `high` or `urgent`.
    public var priority: String {
        get { fields.priority }
        set { unique().priority = newValue }
    }
    /// Unix ms after which no push is sent; nil = no expiry.
    public var expiresAt: Int64? {
        get { fields.expiresAt }
        set { unique().expiresAt = newValue }
    }
    /// False for push-only notifications: never listed or counted in the inbox.
    public var inInbox: Bool {
        get { fields.inInbox }
        set { unique().inInbox = newValue }
    }
    /// The stream cursor of its live event, set once broadcast.
    public var cursor: String? {
        get { fields.cursor }
        set { unique().cursor = newValue }
    }
    /// The call's plan (`PendingPlan.id`), set when stored; the plan is gone once the pushes are
    /// planned. nil for rows stored before schema 5 (their plan, if any, is adopted).
    public var planID: Int64? {
        get { fields.planID }
        set { unique().planID = newValue }
    }
    /// The push plan's input, JSON, while the pushes are not planned: as builds before schema 4
    /// stored it on every row, or (ADR 0003's amendment) a one-recipient call's plan held in its
    /// row, with `planLeaseUntil`. nil otherwise; recovery adopts the rows nobody holds
    /// (`PlanRepository.adoptLegacyPlans(now:)`).
    public var planJSON: String? {
        get { fields.planJSON }
        set { unique().planJSON = newValue }
    }
    /// Unix ms until which the node that stored the row holds the plan in `planJSON`; 0 once
    /// released, nil for rows of older builds and rows without a plan of their own.
    public var planLeaseUntil: Int64? {
        get { fields.planLeaseUntil }
        set { unique().planLeaseUntil = newValue }
    }
    /// Unix ms.
    public var createdAt: Int64 {
        get { fields.createdAt }
        set { unique().createdAt = newValue }
    }
    /// Unix ms the user read it; nil while unread.
    public var readAt: Int64? {
        get { fields.readAt }
        set { unique().readAt = newValue }
    }

    /// `sequence` is assigned by the store on insert; a record to insert leaves it 0.
    public init(sequence: Int64 = 0, id: String, app: String = "default", userID: String, kind: String, scope: String? = nil,
                titleJSON: String? = nil, bodyJSON: String? = nil, argsJSON: String? = nil, dataJSON: String = "{}",
                collapseKey: String? = nil, threadID: String? = nil, priority: String = "normal", expiresAt: Int64? = nil,
                inInbox: Bool = true, cursor: String? = nil, planID: Int64? = nil, planJSON: String? = nil, createdAt: Int64,
                readAt: Int64? = nil, planLeaseUntil: Int64? = nil) {
        fields = Fields(sequence: sequence, id: id, app: app, userID: userID, kind: kind, scope: scope, titleJSON: titleJSON,
            bodyJSON: bodyJSON, argsJSON: argsJSON, dataJSON: dataJSON, collapseKey: collapseKey, threadID: threadID, priority: priority,
            expiresAt: expiresAt, inInbox: inInbox, cursor: cursor, planID: planID, planJSON: planJSON, planLeaseUntil: planLeaseUntil,
            createdAt: createdAt, readAt: readAt)
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
