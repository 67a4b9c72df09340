import Foundation

/// What every recipient's copy of one notification follows: texts, data, grouping, expiry and
/// the push policy (NO-1, NO-2). Stored as the call's `notification_plans` row until the pushes
/// are planned, so a crash between storing and planning re-plans from it at the next start.
package struct NotificationPlan: Codable, Sendable, Equatable {
    /// NO-2 push policies.
    package enum Policy: String, Codable, Sendable {
        /// Push unless a foreground connection of the device's session received the live event.
        case auto
        case always
        case never
        /// Push after `ack_window_ms` unless the device's session acknowledged the live event.
        case unlessAcked = "unless_acked"
    }

    /// A visible alert, or a wake-up carrying ids only (PU-4).
    package enum PushType: String, Codable, Sendable {
        case alert, wakeup
    }

    package enum Badge: Codable, Sendable, Equatable {
        case number(Int)
        /// The recipient's unread inbox count when the push is planned.
        case unread

        package init(from decoder: Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let n = try? container.decode(Int.self) { self = .number(n) } else { _ = try container.decode(String.self); self = .unread }
        }

        package func encode(to encoder: Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .number(let n): try container.encode(n)
            case .unread: try container.encode("unread")
            }
        }
    }

    package var kind: String
    package var scope: String?
    /// Per-call texts by locale tag; `*` is the one text for every locale.
    package var title: [String: String]?
    package var body: [String: String]?
    /// Catalog template arguments.
    package var arguments: [String: String]
    /// Flat string data for the inbox and the push.
    package var data: [String: String]
    package var collapseKey: String?
    package var threadID: String?
    package var sound: String?
    package var androidChannelID: String?
    /// `normal`, `high` or `urgent`.
    package var priority: String
    /// Unix ms; nil = the providers' default lifetime.
    package var expiresAt: Int64?
    /// `ttl_seconds` as given: 0 means "deliver now or never" (APNs expiration 0), not "expired".
    package var ttlSeconds: Int? = nil
    package var badge: Badge?
    /// Goes to the inbox (`persist`, default true).
    package var persist: Bool
    package var policy: Policy
    package var ackWindowMilliseconds: Int
    package var type: PushType
    /// `everyone`, `staff`…: the catalog may exclude some from pushes (seed 002).
    package var audience: String
    /// Pushes carry a `delivery_id` for the open beacon (NO-8).
    package var trackOpens: Bool
    /// The call's key: recovery completes its stored answer too.
    package var idempotencyKey: String?
    /// The call's extra `live` message, published once per call (so recovery publishes it too).
    package var live: LiveMessage? = nil

    /// Every field as `NotificationRequest` validated it.
    package init(kind: String, scope: String?, title: [String: String]?, body: [String: String]?, arguments: [String: String],
                 data: [String: String], collapseKey: String?, threadID: String?, sound: String?, androidChannelID: String?,
                 priority: String, expiresAt: Int64?, ttlSeconds: Int? = nil, badge: Badge?, persist: Bool, policy: Policy,
                 ackWindowMilliseconds: Int, type: PushType, audience: String, trackOpens: Bool, idempotencyKey: String? = nil,
                 live: LiveMessage? = nil) {
        self.kind = kind
        self.scope = scope
        self.title = title
        self.body = body
        self.arguments = arguments
        self.data = data
        self.collapseKey = collapseKey
        self.threadID = threadID
        self.sound = sound
        self.androidChannelID = androidChannelID
        self.priority = priority
        self.expiresAt = expiresAt
        self.ttlSeconds = ttlSeconds
        self.badge = badge
        self.persist = persist
        self.policy = policy
        self.ackWindowMilliseconds = ackWindowMilliseconds
        self.type = type
        self.audience = audience
        self.trackOpens = trackOpens
        self.idempotencyKey = idempotencyKey
        self.live = live
    }

    /// `live {channel, event, data, retain}`, validated.
    package struct LiveMessage: Codable, Sendable, Equatable {
        package var channel: String
        package var event: String
        /// Compact JSON text.
        package var data: String
        package var retain: Bool

        package init(channel: String, event: String, data: String, retain: Bool) {
            self.channel = channel
            self.event = event
            self.data = data
            self.retain = retain
        }

        package var request: PublishRequest? {
            guard let channel = ChannelName(channel), let event = EventName(event) else { return nil }
            return PublishRequest(channel: channel, event: event, data: data, retain: retain)
        }
    }

    /// The plan as JSON text that `decode` reads back, keys and map entries in a fixed order (the
    /// idempotency digest depends on it). Written by hand: `JSONEncoder` was a tenth of the
    /// choke point's CPU; the round trip is tested against the `Codable` decoder.
    package func jsonText() -> String { jsonText(made: nil) }

    /// The objects of `jsonText` already written, each as `JSONText.object` writes it.
    package struct MadeObjects {
        let title: String?, body: String?, arguments: String, data: String

        /// - Parameters: each `JSONText.object` of the plan's map (nil for an absent title or body).
        package init(title: String?, body: String?, arguments: String, data: String) {
            self.title = title
            self.body = body
            self.arguments = arguments
            self.data = data
        }
    }

    /// `jsonText()`, with the title, body, arguments and data objects embedded as `made` has them
    /// instead of written again: `POST /v1/notifications` makes them for the rows first.
    package func jsonText(made: MadeObjects?) -> String {
        // Bytes grown in place, one `String` at the end (the plan is made for every call, on the
        // event loops); each field after `kind` brings its own comma, key and colon as one literal.
        var out = JSONWriter(capacity: 320)
        out.raw("{\"kind\":")
        out.quoted(kind)
        if let scope { out.raw(",\"scope\":"); out.quoted(scope) }
        if let title { out.raw(",\"title\":"); Self.write(title, made: made?.title, to: &out) }
        if let body { out.raw(",\"body\":"); Self.write(body, made: made?.body, to: &out) }
        out.raw(",\"arguments\":")
        Self.write(arguments, made: made?.arguments, to: &out)
        out.raw(",\"data\":")
        Self.write(data, made: made?.data, to: &out)
        if let collapseKey { out.raw(",\"collapseKey\":"); out.quoted(collapseKey) }
        if let threadID { out.raw(",\"threadID\":"); out.quoted(threadID) }
        if let sound { out.raw(",\"sound\":"); out.quoted(sound) }
        if let androidChannelID { out.raw(",\"androidChannelID\":"); out.quoted(androidChannelID) }
        out.raw(",\"priority\":")
        out.quoted(priority)
        if let expiresAt { out.raw(",\"expiresAt\":"); out.number(expiresAt) }
        if let ttlSeconds { out.raw(",\"ttlSeconds\":"); out.number(ttlSeconds) }
        switch badge {
        case .number(let n)?: out.raw(",\"badge\":"); out.number(n)
        case .unread?: out.raw(",\"badge\":\"unread\"")
        case nil: break
        }
        if persist { out.raw(",\"persist\":true") } else { out.raw(",\"persist\":false") }
        out.raw(",\"policy\":")
        out.quoted(policy.rawValue)
        out.raw(",\"ackWindowMilliseconds\":")
        out.number(ackWindowMilliseconds)
        out.raw(",\"type\":")
        out.quoted(type.rawValue)
        out.raw(",\"audience\":")
        out.quoted(audience)
        if trackOpens { out.raw(",\"trackOpens\":true") } else { out.raw(",\"trackOpens\":false") }
        if let idempotencyKey { out.raw(",\"idempotencyKey\":"); out.quoted(idempotencyKey) }
        if let live {
            out.raw(",\"live\":{\"channel\":")
            out.quoted(live.channel)
            out.raw(",\"event\":")
            out.quoted(live.event)
            out.raw(",\"data\":")
            out.quoted(live.data)
            if live.retain { out.raw(",\"retain\":true}") } else { out.raw(",\"retain\":false}") }
        }
        out.raw("}")
        return out.text
    }

    private static func write(_ values: [String: String], made: String?, to out: inout JSONWriter) {
        if let made { out.embed(made) } else { out.object(values) }
    }

    package static func decode(_ text: String) throws -> NotificationPlan {
        try JSONDecoder().decode(NotificationPlan.self, from: Data(text.utf8))
    }

    /// A stored per-locale map as `LocalizedText` (`*` = one text for all).
    package static func localized(_ map: [String: String]) throws(CatalogError) -> LocalizedText {
        if let single = map["*"], map.count == 1 { return LocalizedText(single: try TextTemplate(single)) }
        var templates: [String: TextTemplate] = [:]
        for (tag, text) in map { templates[tag] = try TextTemplate(text) }
        return LocalizedText(templates)
    }
}
