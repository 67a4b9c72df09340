/// What happened to a notification on one device or connection (NO-8). The raw values are the
/// API's words and the `deliveries.outcome` CHECK list (migration 3).
public enum DeliveryOutcome: String, Sendable, CaseIterable, Codable {
    /// A live connection received the event.
    case liveDelivered = "live_delivered"
    /// No push: the device's session had a foreground connection that received the event (NO-2).
    case suppressedForeground = "suppressed_foreground"
    /// A queued push was cancelled because the client acknowledged the event in time.
    case suppressedAcked = "suppressed_acked"
    /// No push: the user's preferences turn this kind off (NO-4).
    case skippedPreferences = "skipped_preferences"
    /// No push: the device's session ended or expired (DV-4).
    case skippedSession = "skipped_session"
    /// No push: the kind or audience is excluded for this recipient (NO-2, staff-only kinds).
    case skippedAudience = "skipped_audience"
    /// No push: the call asked for none (`push.policy: never`).
    case skippedPolicy = "skipped_policy"
    /// No push: the notification expired before it could be sent.
    case expired
    /// A `push.deliver` job was enqueued.
    case queued
    /// The provider accepted the push (with its message id).
    case sent
    /// A transient failure; the job runs again later.
    case retrying
    /// A permanent failure for this device.
    case failed
    /// Given up after the last attempt (a dead letter).
    case dead
    /// The open beacon of a campaign push (seed 004).
    case opened
}

/// One line of a notification's delivery record (NO-8).
public struct DeliveryEntry: Sendable, Equatable {
    /// Assigned by the store; 0 before it is recorded.
    public var id: Int64
    public var notificationID: String
    public var userID: String
    public var deviceID: String?
    /// The live connection, for live outcomes.
    public var connectionID: String?
    /// The device's or connection's session (`sid`).
    public var sessionID: String?
    public var outcome: DeliveryOutcome
    /// The provider's id for the push (APNs `apns-id`, FCM message name), once sent.
    public var providerMessageID: String?
    /// The `push.deliver` job.
    public var jobID: Int64?
    /// A campaign push's delivery id, the open beacon's key (seed 004).
    public var deliveryID: String?
    /// Why: a provider reason, a suppression cause.
    public var detail: String?
    /// Unix ms.
    public var at: Int64

    public init(id: Int64 = 0, notificationID: String, userID: String, deviceID: String? = nil, connectionID: String? = nil,
                sessionID: String? = nil, outcome: DeliveryOutcome, providerMessageID: String? = nil, jobID: Int64? = nil,
                deliveryID: String? = nil, detail: String? = nil, at: Int64) {
        self.id = id
        self.notificationID = notificationID
        self.userID = userID
        self.deviceID = deviceID
        self.connectionID = connectionID
        self.sessionID = sessionID
        self.outcome = outcome
        self.providerMessageID = providerMessageID
        self.jobID = jobID
        self.deliveryID = deliveryID
        self.detail = detail
        self.at = at
    }
}
