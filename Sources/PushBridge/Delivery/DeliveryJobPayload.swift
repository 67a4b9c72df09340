import Foundation

/// The JSON stored in a `push.deliver` job (PU-5): which device, the notification, and the
/// `apns-id` reused on every attempt so a retried push shows at most once (PU-5b).
public struct DeliveryJobPayload: Codable, Sendable, Equatable {
    /// The job kind in the `jobs` table.
    public static let kind = "push.deliver"

    public var deviceID: String
    public var apnsID: String
    public var notification: NotificationPayload
    /// What the push belongs to (a notification id, `test`, …), for the delivery record.
    public var reference: String?

    enum CodingKeys: String, CodingKey {
        case deviceID = "device_id", apnsID = "apns_id", notification, reference
    }

    public init(deviceID: String, apnsID: APNsID, notification: PushNotification, reference: String? = nil) {
        self.deviceID = deviceID
        self.apnsID = apnsID.value
        self.notification = NotificationPayload(notification)
        self.reference = reference
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
