import Foundation
import HeraldCore
import Realtime

/// What every recipient's copy of one notification follows: texts, data, grouping, expiry and
/// the push policy (NO-1, NO-2). Stored as the call's `notification_plans` row until the pushes
/// are planned, so a crash between storing and planning re-plans from it at the next start.
struct NotificationPlan: Codable, Sendable, Equatable {
    /// NO-2 push policies.
    enum Policy: String, Codable, Sendable {
        /// Push unless a foreground connection of the device's session received the live event.
        case auto
        case always
        case never
        /// Push after `ack_window_ms` unless the device's session acknowledged the live event.
        case unlessAcked = "unless_acked"
    }

    /// A visible alert, or a wake-up carrying ids only (PU-4).
    enum PushType: String, Codable, Sendable {
        case alert, wakeup
    }

    enum Badge: Codable, Sendable, Equatable {
        case number(Int)
        /// The recipient's unread inbox count when the push is planned.
        case unread

        init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let n = try? container.decode(Int.self) { self = .number(n) } else { _ = try container.decode(String.self); self = .unread }
        }

        func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .number(let n): try container.encode(n)
            case .unread: try container.encode("unread")
            }
        }
    }

    var kind: String
    var scope: String?
    /// Per-call texts by locale tag; `*` is the one text for every locale.
    var title: [String: String]?
    var body: [String: String]?
    /// Catalog template arguments.
    var arguments: [String: String]
    /// Flat string data for the inbox and the push.
    var data: [String: String]
    var collapseKey: String?
    var threadID: String?
    var sound: String?
    var androidChannelID: String?
    /// `normal`, `high` or `urgent`.
    var priority: String
    /// Unix ms; nil = the providers' default lifetime.
    var expiresAt: Int64?
    /// `ttl_seconds` as given: 0 means "deliver now or never" (APNs expiration 0), not "expired".
    var ttlSeconds: Int? = nil
    var badge: Badge?
    /// Goes to the inbox (`persist`, default true).
    var persist: Bool
    var policy: Policy
    var ackWindowMilliseconds: Int
    var type: PushType
    /// `everyone`, `staff`…: the catalog may exclude some from pushes (seed 002).
    var audience: String
    /// Pushes carry a `delivery_id` for the open beacon (NO-8).
    var trackOpens: Bool
    /// The call's key: recovery completes its stored answer too.
    var idempotencyKey: String?
    /// The call's extra `live` message, published once per call (so recovery publishes it too).
    var live: LiveMessage? = nil

    /// `live {channel, event, data, retain}`, validated.
    struct LiveMessage: Codable, Sendable, Equatable {
        var channel: String
        var event: String
        /// Compact JSON text.
        var data: String
        var retain: Bool

        var request: PublishRequest? {
            guard let channel = ChannelName(channel), let event = EventName(event) else { return nil }
            return PublishRequest(channel: channel, event: event, data: data, retain: retain)
        }
    }

    /// The plan as JSON text that `decode` reads back, keys and map entries in a fixed order (the
    /// idempotency digest depends on it). Written by hand: `JSONEncoder` was a tenth of the
    /// choke point's CPU; the round trip is tested against the `Codable` decoder.
    func jsonText() -> String {
        // One string grown in place (the plan is made for every call, on the event loops); each
        // field after `kind` brings its own comma, key and colon as one literal.
        var out = "{\"kind\":"
        func string(_ key: String, _ value: String) {
            out += key
            JSONText.appendQuoted(value, to: &out)
        }
        func map(_ key: String, _ value: [String: String]) {
            out += key
            out += JSONText.object(value)
        }
        JSONText.appendQuoted(kind, to: &out)
        if let scope { string(",\"scope\":", scope) }
        if let title { map(",\"title\":", title) }
        if let body { map(",\"body\":", body) }
        map(",\"arguments\":", arguments)
        map(",\"data\":", data)
        if let collapseKey { string(",\"collapseKey\":", collapseKey) }
        if let threadID { string(",\"threadID\":", threadID) }
        if let sound { string(",\"sound\":", sound) }
        if let androidChannelID { string(",\"androidChannelID\":", androidChannelID) }
        string(",\"priority\":", priority)
        if let expiresAt { out += ",\"expiresAt\":\(expiresAt)" }
        if let ttlSeconds { out += ",\"ttlSeconds\":\(ttlSeconds)" }
        switch badge {
        case .number(let n)?: out += ",\"badge\":\(n)"
        case .unread?: out += ",\"badge\":\"unread\""
        case nil: break
        }
        out += persist ? ",\"persist\":true" : ",\"persist\":false"
        string(",\"policy\":", policy.rawValue)
        out += ",\"ackWindowMilliseconds\":\(ackWindowMilliseconds)"
        string(",\"type\":", type.rawValue)
        string(",\"audience\":", audience)
        out += trackOpens ? ",\"trackOpens\":true" : ",\"trackOpens\":false"
        if let idempotencyKey { string(",\"idempotencyKey\":", idempotencyKey) }
        if let live {
            string(",\"live\":{\"channel\":", live.channel)
            string(",\"event\":", live.event)
            string(",\"data\":", live.data)
            out += live.retain ? ",\"retain\":true}" : ",\"retain\":false}"
        }
        out += "}"
        return out
    }

    static func decode(_ text: String) throws -> NotificationPlan {
        try JSONDecoder().decode(NotificationPlan.self, from: Data(text.utf8))
    }

    /// A stored per-locale map as `LocalizedText` (`*` = one text for all).
    static func localized(_ map: [String: String]) throws(CatalogError) -> LocalizedText {
        if let single = map["*"], map.count == 1 { return LocalizedText(single: try TextTemplate(single)) }
        var templates: [String: TextTemplate] = [:]
        for (tag, text) in map { templates[tag] = try TextTemplate(text) }
        return LocalizedText(templates)
    }
}
