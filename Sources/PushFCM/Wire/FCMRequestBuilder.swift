import HeraldCore
import PushHTTP
import Synchronization

/// Turns a `PushNotification` into an FCM HTTP v1 `messages:send` request (SPEC PU-2, PU-3, PU-4;
/// seed 001 shape; push-providers.md §2.1–2.3).
///
/// ```
/// POST <HERALD_FCM_URL>/v1/projects/<project>/messages:send
/// authorization: Bearer <OAuth2 access token>
/// content-type: application/json
///
/// alert:   {"message":{"token":…,
///             "notification":{"body","title"},
///             "data":{<string values>} | {"<rootKey>":"<data as one JSON string>"},
///             "android":{"priority":"normal|high","ttl":"<s>s","collapse_key",
///                        "notification":{"channel_id","notification_count","sound","tag"}},
///             "apns":{"headers":{"apns-collapse-id","apns-expiration","apns-priority":"10","apns-push-type":"alert"},
///                     "payload":{"aps":{"badge","interruption-level","sound","thread-id"}}}}}
/// wake-up: {"message":{"token":…,"data":{…},"android":{"priority":"high","ttl":"<s>s","collapse_key"},
///             "apns":{"headers":{"apns-collapse-id","apns-expiration","apns-priority":"5","apns-push-type":"background"},
///                     "payload":{"aps":{"content-available":1}}}}}
/// ```
/// The `apns` block is what an FCM token on iOS needs (PU-8c; seed 003 registers FCM tokens on
/// iOS): without it a wake-up is sent as an alert-less push at priority 10, which APNs does not
/// deliver to a backgrounded app. FCM ignores it for Android tokens, so every message carries it
/// (the builder does not know the device's OS). FCM merges `notification.title`/`body` into
/// `aps.alert` itself. A collapse key over APNs's 64 bytes keeps `collapse_key` for Android but
/// gets no `apns-collapse-id` (APNs would refuse the push: `BadCollapseId`).
/// Without a collapse key or tag of the caller's, `tag` and `apns-collapse-id` are the notification's
/// id, so a push resent after a crash replaces its first copy; `collapse_key` stays the caller's
/// only (FCM keeps 4 per device; ADR 0020).
/// Defaults: `tag` = collapse key, `notification_count` = badge, TTL 3600 s (clamped to FCM's
/// 0…2 419 200). Keys sorted; absent fields omitted; `subtitle` has no FCM field and is dropped.
public enum FCMRequestBuilder {
    /// FCM's limit on a message's payload, in bytes ("includes both the keys and the values").
    public static let maximumPayloadBytes = 4096
    /// FCM's largest Android TTL: 4 weeks.
    public static let maximumTTLSeconds = 2_419_200

    /// Builds the request.
    ///
    /// - Parameters:
    ///   - notification: what to send.
    ///   - deviceToken: the FCM registration token.
    ///   - projectID: the Firebase project (`FCMCredentials.projectID`).
    ///   - accessToken: from `FCMAccessTokenCache`.
    ///   - endpoint: `HERALD_FCM_URL`.
    ///   - now: UNIX seconds, to turn `expiresAt` into a TTL.
    ///   - nowMilliseconds: the same instant in UNIX ms (default `now` × 1000): a notification with
    ///     `expiresAtMilliseconds` gets the time left rounded down, never a TTL past its expiry (NO-2).
    ///   - bodies: the body of the last notification (and second), reused without its token when
    ///     this one is equal (a provider keeps one).
    ///   - sendURL: `endpoint.sendURL(projectID: projectID)` when the caller keeps it; nil: made here.
    ///   - authorizations: `authorization`'s value for the last access token, reused while it is
    ///     the same (a provider keeps one; its prefix must be `Bearer `); nil: built here.
    /// - Throws: `PushPayloadError` — `.reservedDataKey`, `.expired`, `.invalidTTL`,
    ///   `.fcmPayloadTooLarge` (data keys + values + notification title + body over 4096 bytes once
    ///   an alert's texts were shortened to fit, `PushNotification.fittingTexts(within:size:)`: the
    ///   data alone is too large).
    public static func request(for notification: PushNotification, deviceToken: String, projectID: String, accessToken: String,
                               endpoint: FCMEndpoint = .production, now: Int, nowMilliseconds: Int64? = nil,
                               bodies: FCMBodyCache? = nil, sendURL: String? = nil,
                               authorizations: AuthorizationValueCache? = nil) throws(PushPayloadError) -> PushHTTPRequest {
        let ttl = min(try notification.remainingTTL(nowMilliseconds: nowMilliseconds ?? Int64(now) * 1000), maximumTTLSeconds)
        let untargeted: [UInt8]
        if let bodies {
            // The TTL is in the key: with a millisecond expiry it can drop within one second.
            untargeted = try bodies.body(for: FCMBodyCache.Key(notification: notification, now: now, ttl: ttl)) { () throws(PushPayloadError) in
                try untargetedBody(for: notification, now: now, ttl: ttl)
            }
        } else {
            untargeted = try untargetedBody(for: notification, now: now, ttl: ttl)
        }
        // `token` sorts after every other member of `message` (android, apns, data,
        // notification), so it goes last: the bytes are those of the whole message written at once.
        var body: [UInt8] = []
        body.reserveCapacity(untargeted.count + deviceToken.utf8.count + 16)
        body.append(contentsOf: untargeted[..<(untargeted.count - 2)])  // without "}}"
        body.append(contentsOf: #","token":"#.utf8)
        PushJSON.append(string: deviceToken, to: &body)
        body.append(contentsOf: "}}".utf8)
        return PushHTTPRequest(url: sendURL ?? endpoint.sendURL(projectID: projectID),
                               headers: [("authorization", authorizations?.value(for: accessToken) ?? "Bearer \(accessToken)"),
                                         ("content-type", "application/json")],
                               body: body)
    }

    /// `{"message":{…}}` without the device's `token`: what every device of one notification
    /// shares at one second (the TTL and the APNs expiry depend on `now`).
    /// `ttl`: seconds left, already capped (default: `remainingTTL(now:)`, capped).
    static func untargetedBody(for original: PushNotification, now: Int, ttl knownTTL: Int? = nil) throws(PushPayloadError) -> [UInt8] {
        let ttl: Int
        if let knownTTL { ttl = knownTTL } else { ttl = min(try original.remainingTTL(now: now), maximumTTLSeconds) }

        var data: [String: String] = original.data
        if let rootKey = original.rootKey { data = [rootKey: PushJSON.strings(original.data).text] }
        for key in data.keys where isReserved(key) { throw .reservedDataKey(key) }
        // Sized like FCM counts it: every key and value we hand over for display or delivery.
        let dataBytes = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        let counted = { (n: PushNotification) in
            dataBytes + (n.kind == .alert ? (n.title?.utf8.count ?? 0) + (n.body?.utf8.count ?? 0) : 0)
        }
        let payloadBytes = counted(original)
        var notification = original
        if payloadBytes > maximumPayloadBytes {
            // Texts shortened as every provider does; data never cut (then refused).
            guard let shorter = original.fittingTexts(within: maximumPayloadBytes, size: counted) else {
                throw .fcmPayloadTooLarge(bytes: payloadBytes, limit: maximumPayloadBytes)
            }
            notification = shorter
        }

        var message: [String: PushJSON] = [:]
        if !data.isEmpty { message["data"] = .strings(data) }
        var android: [String: PushJSON] = ["ttl": .string("\(ttl)s")]
        if let collapseKey = notification.collapseKey { android["collapse_key"] = .string(collapseKey) }

        switch notification.kind {
        case .alert:
            var display: [String: PushJSON] = [:]
            if let title = notification.title { display["title"] = .string(title) }
            if let body = notification.body { display["body"] = .string(body) }
            if !display.isEmpty { message["notification"] = .object(display) }

            android["priority"] = .string((notification.priority == .normal ? AndroidPriority.normal : .high).rawValue)
            var androidNotification: [String: PushJSON] = [:]
            if let channel = notification.androidChannelID { androidNotification["channel_id"] = .string(channel) }
            if let tag = notification.effectiveTag { androidNotification["tag"] = .string(tag) }
            if let count = notification.notificationCount ?? notification.badge { androidNotification["notification_count"] = .int(Int64(count)) }
            if let sound = notification.sound { androidNotification["sound"] = .string(sound) }
            if !androidNotification.isEmpty { android["notification"] = .object(androidNotification) }
        case .wakeup:
            // PU-4: data-only and high priority, so a dozing device still wakes to refetch.
            android["priority"] = .string(AndroidPriority.high.rawValue)
        }
        message["apns"] = apnsConfig(for: notification, ttl: ttl, now: now)
        message["android"] = .object(android)
        return PushJSON.object(["message": .object(message)]).bytes
    }

    /// APNs's limit on `apns-collapse-id`, bytes.
    static let maximumAPNsCollapseIDBytes = 64

    /// The `apns` block (PU-8c): headers and `aps` as the APNs provider would send them.
    /// Alerts: push type `alert`, priority 10, `badge`, `sound`, `thread-id` and the interruption
    /// level; wake-ups: push type `background`, priority 5 and `content-available: 1` only (Apple
    /// refuses priority 10 and alert keys on a background push). Header values are strings: FCM's
    /// `apns.headers` is a map of strings.
    static func apnsConfig(for notification: PushNotification, ttl: Int, now: Int) -> PushJSON {
        var headers: [String: PushJSON] = [
            // An absolute expiry, so the push lives as long on an iPhone as on Android (0: now or never).
            "apns-expiration": .string(ttl == 0 ? "0" : String(now + ttl)),
        ]
        if let collapseID = notification.effectiveCollapseID, (1...maximumAPNsCollapseIDBytes).contains(collapseID.utf8.count) {
            headers["apns-collapse-id"] = .string(collapseID)
        }
        var aps: [String: PushJSON] = [:]
        switch notification.kind {
        case .alert:
            headers["apns-push-type"] = .string("alert")
            headers["apns-priority"] = .string("10")
            if let badge = notification.badge { aps["badge"] = .int(Int64(badge)) }
            if let sound = notification.sound { aps["sound"] = .string(sound) }
            if let threadID = notification.threadID { aps["thread-id"] = .string(threadID) }
            if let level = notification.effectiveInterruptionLevel { aps["interruption-level"] = .string(level.rawValue) }
        case .wakeup:
            headers["apns-push-type"] = .string("background")
            headers["apns-priority"] = .string("5")
            aps["content-available"] = .int(1)
        }
        var apns: [String: PushJSON] = ["headers": .object(headers)]
        if !aps.isEmpty { apns["payload"] = .object(["aps": .object(aps)]) }
        return .object(apns)
    }

    /// FCM's reserved data keys (push-providers.md §2.3, the older and broader rule): `from`,
    /// `message_type`, `gcm`, `google`, and anything starting with `google.` or `gcm.`.
    static func isReserved(_ key: String) -> Bool {
        key == "from" || key == "message_type" || key == "gcm" || key == "google" || key.hasPrefix("google.") || key.hasPrefix("gcm.")
    }
}

/// The FCM body of the last notification sent, without its token (`FCMRequestBuilder.request(…bodies:)`).
public final class FCMBodyCache: Sendable {
    struct Key: Equatable, Sendable {
        let notification: PushNotification
        /// UNIX seconds: the body's TTL and APNs expiry are computed from it.
        let now: Int
        /// The TTL sent, seconds (it depends on the millisecond too when the expiry has them).
        let ttl: Int
    }

    /// Concrete, not a generic cache from PushHTTP: across modules a generic one stayed
    /// unspecialized (~3k instructions a push, issue 17). `make` runs outside the lock.
    private let slot = Mutex<(key: Key, body: [UInt8])?>(nil)

    public init() {}

    /// The body remembered for `key` when the last key was equal, else `make()`'s, which is then
    /// remembered. - Throws: `make`'s error (nothing is remembered then).
    func body(for key: Key, make: () throws(PushPayloadError) -> [UInt8]) throws(PushPayloadError) -> [UInt8] {
        let hit = slot.withLock { slot -> [UInt8]? in
            guard let kept = slot, kept.key == key else { return nil }
            // Equal, maybe another copy (an earlier call's): this one is kept, so the rest of its
            // run compares by identity (`PushNotification`'s shared box) instead of field by field.
            slot = (key, kept.body)
            return kept.body
        }
        if let hit { return hit }
        let body = try make()
        slot.withLock { $0 = (key, body) }
        return body
    }
}
