import Foundation

/// The JSON stored in a `push.deliver` job (PU-5): which device, the notification, and the
/// push id reused on every attempt so a retried push shows at most once (PU-5b).
///
/// ```
/// {"apns_id":"<uuid>","device_id":"…","notification":{<PushNotification>},
///  "origin":{"ack_event_id","delivery_id","notification_id","session_id","user_id"},"user_id":"…"}
/// ```
/// The keys are a stored format: jobs queued by an older build must still decode, so they only
/// ever gain optional members (`notification.interruption_level`).
public struct DeliveryJobPayload: Codable, Sendable, Equatable {
    /// The job kind in the `jobs` table.
    public static let kind = "push.deliver"

    /// The `devices.id` to send to (`device_id`); its token and provider are read when the job runs.
    public var deviceID: String
    /// The `PushID` text (`apns_id`: APNs was its first user; the key stays for stored jobs).
    public var apnsID: String
    /// What to send (`notification`), in `PushNotification`'s stored form.
    public var notification: PushNotification
    /// The notification this push belongs to (NO-8): set, the worker records each outcome in its
    /// delivery record; nil for a plain `POST /v1/push`.
    public var origin: Origin?
    /// How often a provider's receipt sent this push again (`resends`; Expo `MessageRateExceeded`,
    /// PU-8a); absent until the first resend, so stored jobs keep their exact text.
    public var resends: Int?
    /// A plain push's user (`user_id`): whose device it was made for. A device of another user by
    /// its send (its token moved, DV-1) does not get it. Nil for a planned push (its `origin`
    /// names the recipient) and for jobs stored before it was written.
    public var userID: String?

    /// Where a planned push came from, and what may still stop it.
    public struct Origin: Codable, Sendable, Equatable {
        /// The inbox row (`notification_id`) whose delivery record gets this push's outcomes.
        public var notificationID: String
        /// Its recipient (`user_id`).
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
        case deviceID = "device_id", apnsID = "apns_id", notification, origin, resends, userID = "user_id"
    }

    public init(deviceID: String, apnsID: PushID, notification: PushNotification, origin: Origin? = nil, resends: Int? = nil,
                userID: String? = nil) {
        self.deviceID = deviceID
        self.apnsID = apnsID.value
        self.notification = notification
        self.origin = origin
        self.resends = resends
        self.userID = userID
    }

    /// A payload as stored: `apnsID` kept as text, checked (`PushID(_:)`) when the job is sent.
    init(deviceID: String, storedAPNsID: String, notification: PushNotification, origin: Origin?, resends: Int?, userID: String?) {
        self.deviceID = deviceID
        self.apnsID = storedAPNsID
        self.notification = notification
        self.origin = origin
        self.resends = resends
        self.userID = userID
    }

    /// The JSON text for the `payload_json` column (keys sorted, stable): byte for byte what
    /// `JSONEncoder` (`.sortedKeys`, `.withoutEscapingSlashes`) writes.
    ///
    /// One notification goes to many devices, so its text is encoded once and reused while the
    /// next payload carries the same notification (`PayloadTextCache`); the ids around it are
    /// spliced in when they need no escaping (ids Herald makes never do), else the whole payload
    /// goes through `JSONEncoder`.
    public func jsonText() -> String {
        splicedText(kept: true) ?? foundationText()
    }

    /// `jsonText()` for a job that is never read back from its text in this process: one
    /// leased at insert, whose payload goes to its sender as a value (ADR 0007). The
    /// notification's text is not kept for a claim to find (`PayloadTextCache`), which for a
    /// notification of its own (the choke point: one device each) was a hash of its whole text
    /// and a ring slot per push, never used (issue 17).
    func jsonTextHandedOver() -> String {
        splicedText(kept: false) ?? foundationText()
    }

    /// Reads a stored payload.
    ///
    /// The text `jsonText()` writes is read by a scanner of that exact layout, the notification
    /// decoded once per distinct notification text (`PayloadTextCache`); any other layout (an
    /// older build's, escaped ids, unknown keys) goes through `JSONDecoder`, which decides.
    /// - Throws: `DecodingError` for a payload this version cannot read.
    public static func decode(_ text: String) throws -> DeliveryJobPayload {
        if let payload = PayloadScanner.read(text) { return payload }
        return try foundationDecode(text)
    }

    /// `JSONEncoder`'s text of the whole payload (the reference `jsonText()` must equal).
    func foundationText() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain strings, numbers and dictionaries cannot fail.
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// `JSONDecoder`'s reading (the reference `decode(_:)` must equal).
    static func foundationDecode(_ text: String) throws -> DeliveryJobPayload {
        try JSONDecoder().decode(DeliveryJobPayload.self, from: Data(text.utf8))
    }

    /// The payload's text built by hand around the notification's cached text; nil when some id
    /// would need escaping. `kept`: the notification's text is kept for a claim (`PayloadTextCache`).
    private func splicedText(kept: Bool) -> String? {
        // One buffer of the exact size, each id checked by the `plainQuoted` that copies it
        // (issue 17: a head, a tail and the head's regrowth for the notification were three
        // allocations and a copy a push). The notification's text comes first, for its size:
        // an id that needs escaping (Herald's never do) then leaves the whole payload to
        // `JSONEncoder`, whose text holds the same notification text, so the one made here is
        // still the right one in the cache.
        let notificationText = PayloadTextCache.shared.text(of: notification, keptForClaim: kept)
        var room = 96 + apnsID.utf8.count + deviceID.utf8.count + notificationText.utf8.count + (userID.map { 14 + $0.utf8.count } ?? 0)
        if let origin {
            // The keys (80 bytes with their quotes and colons) and the values' bytes.
            room += 80 + (origin.ackEventID?.utf8.count ?? 0) + (origin.deliveryID?.utf8.count ?? 0)
                + origin.notificationID.utf8.count + (origin.sessionID?.utf8.count ?? 0) + origin.userID.utf8.count
        }
        var out = JSONWriter(capacity: room)
        out.raw(#"{"apns_id":"#)
        guard out.plainQuoted(apnsID) else { return nil }
        out.raw(#","device_id":"#)
        guard out.plainQuoted(deviceID) else { return nil }
        out.raw(#","notification":"#)
        out.embed(notificationText)
        if let origin {
            // Sorted keys, absent ones left out (as the synthesized `encodeIfPresent` does).
            var first = true
            func field(_ key: StaticString, _ value: String?) -> Bool {
                guard let value else { return true }
                out.raw(first ? #","origin":{"# : ",")
                first = false
                out.raw(key)
                return out.plainQuoted(value)
            }
            guard field(#""ack_event_id":"#, origin.ackEventID), field(#""delivery_id":"#, origin.deliveryID),
                  field(#""notification_id":"#, origin.notificationID), field(#""session_id":"#, origin.sessionID),
                  field(#""user_id":"#, origin.userID) else { return nil }
            out.raw("}")
        }
        if let resends {
            out.raw(#","resends":"#)
            out.number(resends)
        }
        if let userID {
            out.raw(#","user_id":"#)
            guard out.plainQuoted(userID) else { return nil }
        }
        out.raw("}")
        return out.text
    }
}
