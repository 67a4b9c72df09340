import Foundation
import Realtime

/// What every recipient's copy of one notification follows: texts, data, grouping, expiry and
/// the push policy (NO-1, NO-2). Stored as `notifications.plan_json` until the pushes are planned,
/// so a crash between storing and planning re-plans from it at the next start.
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
        var out = "{"
        var first = true
        // One string grown in place: the plan is made for every call on the event loops.
        func key(_ name: StaticString) {
            if !first { out += "," }
            first = false
            out += "\""
            out += name.description
            out += "\":"
        }
        func string(_ name: StaticString, _ value: String) {
            key(name)
            JSONText.appendQuoted(value, to: &out)
        }
        func map(_ name: StaticString, _ value: [String: String]) {
            key(name)
            out += JSONText.object(value)
        }
        func literal(_ name: StaticString, _ value: some CustomStringConvertible) {
            key(name)
            out += value.description
        }
        string("kind", kind)
        if let scope { string("scope", scope) }
        if let title { map("title", title) }
        if let body { map("body", body) }
        map("arguments", arguments)
        map("data", data)
        if let collapseKey { string("collapseKey", collapseKey) }
        if let threadID { string("threadID", threadID) }
        if let sound { string("sound", sound) }
        if let androidChannelID { string("androidChannelID", androidChannelID) }
        string("priority", priority)
        if let expiresAt { literal("expiresAt", expiresAt) }
        if let ttlSeconds { literal("ttlSeconds", ttlSeconds) }
        switch badge {
        case .number(let n)?: literal("badge", n)
        case .unread?: string("badge", "unread")
        case nil: break
        }
        literal("persist", persist)
        string("policy", policy.rawValue)
        literal("ackWindowMilliseconds", ackWindowMilliseconds)
        string("type", type.rawValue)
        string("audience", audience)
        literal("trackOpens", trackOpens)
        if let idempotencyKey { string("idempotencyKey", idempotencyKey) }
        if let live {
            key("live")
            out += "{\"channel\":"
            JSONText.appendQuoted(live.channel, to: &out)
            out += ",\"event\":"
            JSONText.appendQuoted(live.event, to: &out)
            out += ",\"data\":"
            JSONText.appendQuoted(live.data, to: &out)
            out += ",\"retain\":\(live.retain)}"
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
