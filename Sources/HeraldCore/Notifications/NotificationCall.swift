/// Whom a notification is for (NO-1, NO-6).
public enum Recipients: Sendable, Equatable {
    /// These users, as given (deduplicated, order kept).
    case users([String])
    /// Members of `scope` holding `permission` (every member when nil).
    case scopePermission(scope: String, permission: String?)
    /// The assignee when there is one, else every member of `scope` holding the kind's permission.
    case scopeAssignee(scope: String, assignee: String?)
}

/// One validated `POST /v1/notifications` call as the `Notifier` takes it: recipients, the plan
/// every recipient's notification follows, and the texts as each row stores them. The API builds
/// it from the request body (`NotificationRequest`); the core never sees HTTP.
public struct NotificationCall: Sendable {
    /// The app the call is for (ADR 0006): its members, catalog, devices and channels.
    public let app: String
    public let recipients: Recipients
    package let plan: NotificationPlan
    /// Extra message for a resource channel, published once per call.
    public let live: PublishRequest?
    public let idempotencyKey: String?
    /// The idempotency key within its app: two apps may use the same key (ADR 0006).
    var inFlightKey: String? { idempotencyKey.map { app + "\u{0}" + $0 } }
    /// Digest of the request, so one idempotency key cannot mean two different calls (NO-1).
    public let requestHash: String
    /// `plan.jsonText()`, made once: stored as the call's plan until its pushes are planned.
    public let planJSON: String
    /// The texts, arguments and data as every recipient's row stores them (JSON objects, keys sorted).
    public let titleJSON: String?, bodyJSON: String?, argsJSON: String?, dataJSON: String

    package init(app: String = "default", recipients: Recipients, plan: NotificationPlan, live: PublishRequest?, idempotencyKey: String?,
                 requestHash: String, planJSON: String, titleJSON: String?, bodyJSON: String?, argsJSON: String?, dataJSON: String) {
        self.app = app
        self.recipients = recipients
        self.plan = plan
        self.live = live
        self.idempotencyKey = idempotencyKey
        self.requestHash = requestHash
        self.planJSON = planJSON
        self.titleJSON = titleJSON
        self.bodyJSON = bodyJSON
        self.argsJSON = argsJSON
        self.dataJSON = dataJSON
    }
}

/// Why a call was refused after validation, by what only storage can tell: nothing of the call
/// is stored. The API answers each with its status (409, 409, 413) and `code`.
public enum NotificationRefusal: Error, Sendable, Equatable {
    /// The idempotency key answered a different request in the last 24 hours.
    case idempotencyKeyReused
    /// A call with this idempotency key is still being stored or planned.
    case idempotencyInProgress
    /// A scope rule reaches more members than one call may (`limit`).
    case tooManyRecipients(scope: String, count: Int, limit: Int)

    /// The error code of the JSON answer (`{"error": code, …}`).
    public var code: String {
        switch self {
        case .idempotencyKeyReused: "idempotency_key_reused"
        case .idempotencyInProgress: "idempotency_in_progress"
        case .tooManyRecipients: "too_many_recipients"
        }
    }

    /// A sentence for the caller.
    public var message: String {
        switch self {
        case .idempotencyKeyReused: "this idempotency_key was used with a different request in the last 24 hours"
        case .idempotencyInProgress: "a request with this idempotency_key is still being processed; retry shortly"
        case .tooManyRecipients(let scope, let count, let limit): "scope \(scope) has \(count) recipients; one call reaches at most \(limit)"
        }
    }

    /// The request field at fault.
    public var field: String {
        switch self {
        case .idempotencyKeyReused, .idempotencyInProgress: "idempotency_key"
        case .tooManyRecipients: "recipients"
        }
    }
}

/// How the `Notifier` answers one call.
public enum NotificationAnswer: Sendable {
    /// Stored, broadcast and planned: the answer's JSON (`notifications`, `live_delivered`,
    /// `push_queued`, `push_suppressed`, `skipped`, `skipped_recipients`; docs/api.md).
    case created(json: String)
    /// The idempotency key's first answer, replayed (NO-1).
    case replayed(json: String)
    /// Stored (and broadcast when the broker took it) but the pushes not planned: the planning
    /// transaction failed, or another node took the plan over. Recovery plans them; the JSON is
    /// the answer's shape with the stored ids, zero counts and `"push_planning":"deferred"`.
    /// `replayed`: a repeat of such a call with its idempotency key before recovery planned it.
    case accepted(json: String, replayed: Bool)
    /// Refused; nothing stored.
    case refused(NotificationRefusal)
    /// Storage failed and nothing was stored (the storing transaction failed): a `StorageError`
    /// mostly. A call that was stored is never `failed` (RL-2): it is `accepted`.
    case failed(any Error)
}
