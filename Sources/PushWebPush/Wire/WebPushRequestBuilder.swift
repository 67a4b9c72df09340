import HeraldCore
import PushHTTP

/// How a `PushNotification` travels to a browser: the JSON the service worker reads
/// (`event.data.json()`) and the RFC 8030 headers.
///
/// The payload (compact, sorted keys, absent fields left out):
/// ```
/// {"kind":"alert"|"wakeup","push_id":…,"title":…,"subtitle":…,"body":…,"tag":…,"badge":…,
///  "sound":…,"priority":"normal"|"high"|"urgent","data":{…}}
/// ```
/// `data` holds the notification's string data (under `root_key` when the notification names
/// one, as on iOS); `tag` is the notification's tag, else its collapse key, else its id, so a
/// service worker passing it to `showNotification` replaces the older one, and a push resent after
/// a crash its first copy. `Topic` is the collapse key, else the notification's id (ADR 0020).
public enum WebPushRequestBuilder {
    /// The JSON the service worker receives.
    public static func payload(for notification: PushNotification, pushID: PushID) -> PushJSON {
        var object: [String: PushJSON] = [
            "kind": .string(notification.kind.rawValue),
            "push_id": .string(pushID.value),
            "priority": .string(notification.priority.rawValue),
        ]
        let data = PushJSON.object(notification.data.mapValues { .string($0) })
        object["data"] = notification.rootKey.map { .object([$0: data]) } ?? data
        if notification.kind == .alert {
            if let title = notification.title { object["title"] = .string(title) }
            if let subtitle = notification.subtitle { object["subtitle"] = .string(subtitle) }
            if let body = notification.body { object["body"] = .string(body) }
            if let sound = notification.sound { object["sound"] = .string(sound) }
            if let badge = notification.badge { object["badge"] = .int(Int64(badge)) }
            if let tag = notification.effectiveTag { object["tag"] = .string(tag) }
        }
        return .object(object)
    }

    /// RFC 8030 §5.3 `Urgency`: `normal` → normal; `high` and `urgent` → high. A wake-up is high
    /// (it must arrive while the app is away), as FCM sends it.
    public static func urgency(for notification: PushNotification) -> String {
        switch notification.priority {
        case .normal: "normal"
        case .high, .urgent: "high"
        }
    }

    /// RFC 8030 §5.4 `Topic` from the collapse key (or the notification's id, which always fits as
    /// it is: `effectiveCollapseID`): at most 32 characters of the base64url
    /// alphabet. A key that fits is sent as it is; any other becomes the first 32 characters of
    /// the base64url SHA-256 of its UTF-8 bytes, the same topic for the same key every time.
    public static func topic(for collapseKey: String?) -> String? {
        guard let collapseKey, !collapseKey.isEmpty else { return nil }
        let fits = collapseKey.utf8.count <= 32 && collapseKey.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2D || byte == 0x5F
        }
        if fits { return collapseKey }
        return String(Base64URL.encode(WebPushPrimitives.sha256(Array(collapseKey.utf8))).prefix(32))
    }

    /// The JSON to encrypt (`payload(for:pushID:)`), at most `WebPushEncryption.maxPlaintextBytes`:
    /// an alert over it has its body, then its title, shortened at a whole character with "…"
    /// (`PushNotification.fittingTexts(within:size:)`, as every provider); data is never cut.
    /// - Throws: `PushPayloadError.webPushPayloadTooLarge` (the encrypted body's size it would
    ///   have had) when no cut makes it fit: the data alone is too large, or a wake-up is.
    static func plaintext(for notification: PushNotification, pushID: PushID) throws(PushPayloadError) -> [UInt8] {
        let limit = WebPushEncryption.maxPlaintextBytes
        let plaintext = payload(for: notification, pushID: pushID).bytes
        if plaintext.count <= limit { return plaintext }
        if let shorter = notification.fittingTexts(within: limit, size: { payload(for: $0, pushID: pushID).bytes.count }) {
            return payload(for: shorter, pushID: pushID).bytes
        }
        throw .webPushPayloadTooLarge(bytes: plaintext.count + WebPushEncryption.maxBodyBytes - limit, limit: WebPushEncryption.maxBodyBytes)
    }

    /// The whole request: the endpoint, the headers, the encrypted body.
    ///
    /// - Parameters:
    ///   - authorization: the `vapid t=…, k=…` header value.
    ///   - now: UNIX seconds, for the TTL of an absolute expiry.
    ///   - nowMilliseconds: the same instant in UNIX ms (default `now` × 1000): with
    ///     `expiresAtMilliseconds` the time left is rounded down, never past the expiry (NO-2).
    /// - Throws: `PushPayloadError` (`.expired`, `.invalidTTL`, `.webPushPayloadTooLarge`: over
    ///   the limit once its texts were shortened, `plaintext(for:pushID:)`) for a notification never to send; `WebPushCryptoError` when encryption fails.
    static func request(for notification: PushNotification, to subscription: WebPushSubscription, pushID: PushID,
                        authorization: String, now: Int, nowMilliseconds: Int64? = nil) throws -> PushHTTPRequest {
        let ttl = try notification.remainingTTL(nowMilliseconds: nowMilliseconds ?? Int64(now) * 1000)
        let body = try WebPushEncryption.encrypt(try plaintext(for: notification, pushID: pushID), to: subscription)
        var headers: [(String, String)] = [
            ("ttl", String(ttl)),
            ("urgency", urgency(for: notification)),
        ]
        if let topic = topic(for: notification.effectiveCollapseID) { headers.append(("topic", topic)) }
        headers += [
            ("content-encoding", "aes128gcm"),
            ("content-type", "application/octet-stream"),
            ("authorization", authorization),
        ]
        return PushHTTPRequest(url: subscription.endpoint, headers: headers, body: body)
    }
}
