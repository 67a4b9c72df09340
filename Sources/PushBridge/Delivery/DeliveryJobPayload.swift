import Foundation

/// The JSON stored in a `push.deliver` job (PU-5): which device, the notification, and the
/// `apns-id` reused on every attempt so a retried push shows at most once (PU-5b).
public struct DeliveryJobPayload: Codable, Sendable, Equatable {
    /// The job kind in the `jobs` table.
    public static let kind = "push.deliver"

    public var deviceID: String
    public var apnsID: String
    public var notification: NotificationPayload
    /// The notification this push belongs to (NO-8): set, the worker records each outcome in its
    /// delivery record; nil for a plain `POST /v1/push`.
    public var origin: Origin?

    /// Where a planned push came from, and what may still stop it.
    public struct Origin: Codable, Sendable, Equatable {
        public var notificationID: String
        public var userID: String
        /// The device's session (the one whose ack suppresses an `unless_acked` push).
        public var sessionID: String?
        /// `unless_acked`: the live event id the session must acknowledge before `run_at` (NO-2).
        public var ackEventID: String?
        /// The open beacon's key, when the push carries one (NO-8, seed 004).
        public var deliveryID: String?

        enum CodingKeys: String, CodingKey {
            case notificationID = "notification_id", userID = "user_id", sessionID = "session_id"
            case ackEventID = "ack_event_id", deliveryID = "delivery_id"
        }

        public init(notificationID: String, userID: String, sessionID: String?, ackEventID: String? = nil, deliveryID: String? = nil) {
            self.notificationID = notificationID
            self.userID = userID
            self.sessionID = sessionID
            self.ackEventID = ackEventID
            self.deliveryID = deliveryID
        }
    }

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id", apnsID = "apns_id", notification, origin
    }

    public init(deviceID: String, apnsID: APNsID, notification: PushNotification, origin: Origin? = nil) {
        self.deviceID = deviceID
        self.apnsID = apnsID.value
        self.notification = NotificationPayload(notification)
        self.origin = origin
    }

    /// The JSON text for the `payload_json` column (keys sorted, stable).
    public func jsonText() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings, numbers and dictionaries cannot fail.
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// - Throws: `DecodingError` for a payload this version cannot read.
    public static func decode(_ text: String) throws -> DeliveryJobPayload {
        try JSONDecoder().decode(DeliveryJobPayload.self, from: Data(text.utf8))
    }
}

/// `PushNotification` as stored JSON.
public struct NotificationPayload: Codable, Sendable, Equatable {
    public var kind: String
    public var title: String?
    public var subtitle: String?
    public var body: String?
    public var sound: String?
    public var badge: Int?
    public var threadID: String?
    public var collapseKey: String?
    public var data: [String: String]
    public var priority: String
    public var ttlSeconds: Int?
    public var expiresAt: Int?
    public var androidChannelID: String?
    public var tag: String?
    public var notificationCount: Int?
    public var rootKey: String?

    enum CodingKeys: String, CodingKey {
        case kind, title, subtitle, body, sound, badge, data, priority, tag
        case threadID = "thread_id", collapseKey = "collapse_key", ttlSeconds = "ttl_seconds", expiresAt = "expires_at"
        case androidChannelID = "android_channel_id", notificationCount = "notification_count", rootKey = "root_key"
    }

    init(_ n: PushNotification) {
        kind = n.kind == .wakeup ? "wakeup" : "alert"
        title = n.title
        subtitle = n.subtitle
        body = n.body
        sound = n.sound
        badge = n.badge
        threadID = n.threadID
        collapseKey = n.collapseKey
        data = n.data
        priority = n.priority.rawValue
        ttlSeconds = n.ttlSeconds
        expiresAt = n.expiresAt
        androidChannelID = n.androidChannelID
        tag = n.tag
        notificationCount = n.notificationCount
        rootKey = n.rootKey
    }

    /// The notification to send.
    public var notification: PushNotification {
        PushNotification(kind: kind == "wakeup" ? .wakeup : .alert, title: title, subtitle: subtitle, body: body, sound: sound,
                         badge: badge, threadID: threadID, collapseKey: collapseKey, data: data,
                         priority: PushNotification.Priority(rawValue: priority) ?? .normal, ttlSeconds: ttlSeconds,
                         expiresAt: expiresAt, androidChannelID: androidChannelID, tag: tag,
                         notificationCount: notificationCount, rootKey: rootKey)
    }
}
