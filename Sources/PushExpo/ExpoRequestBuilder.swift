import HeraldCore
import PushHTTP

/// Turns `PushNotification`s into Expo push API requests (PU-8a; expo-webpush.md "Expo push service").
///
/// ```
/// POST <HERALD_EXPO_URL>/--/api/v2/push/send
/// accept: application/json
/// accept-encoding: gzip                      (libcurl decodes the answer)
/// authorization: Bearer <HERALD_EXPO_ACCESS_TOKEN>   (only when set)
/// content-type: application/json
/// content-encoding: gzip                     (bodies over 1 KiB, as the official SDK does)
///
/// [{"to":"ExponentPushToken[…]","title","subtitle","body","sound","badge","ttl","priority",
///   "channelId","interruptionLevel","collapseId","tag","data":{<the app's keys>}}, … ≤ 100]
/// wake-up: {"to":…,"_contentAvailable":true,"priority":"normal","ttl":…,"data":{…}}
/// ```
/// `priority`: a normal alert is `default` (Android normal, iOS 10: an alert must not be held
/// back), high and urgent are `high`; a wake-up is `normal`, because iOS delivers background
/// pushes only at APNs priority 5 (Expo's `normal`). `data` holds the app's keys (expo-notifications
/// hands the app exactly this object), under `rootKey` when the notification has one. Expo has
/// no thread id: `threadID` is dropped. `tag` is the tag, else the collapse key, else the
/// notification's id (a resend replaces its first copy on Android); `collapseId` is the caller's
/// collapse key only (ADR 0020). Keys sorted; absent fields omitted.
public enum ExpoRequestBuilder {
    /// Expo's limit on one message's payload, bytes: counted as the UTF-8 bytes of the message's
    /// compact JSON without `to`, non-ASCII written as UTF-8 (`PushJSON`), not `\u` escapes. Expo's
    /// docs (`sending-notifications`, `data` and the `MessageTooBig` error) limit "the total
    /// notification payload sent to Apple and Google" to 4096 bytes, which those services count
    /// as UTF-8 JSON; expo-server-sdk-node sends `JSON.stringify`'s UTF-8 and checks no size.
    public static let maximumPayloadBytes = 4096
    /// Most messages in one send request (more: `PUSH_TOO_MANY_NOTIFICATIONS`).
    public static let maximumMessagesPerRequest = 100
    /// Expo's TTL ceiling (FCM's 4 weeks; APNs keeps a notification about as long).
    public static let maximumTTLSeconds = 2_419_200

    /// One message object.
    ///
    /// - Parameters:
    ///   - notification: what to send.
    ///   - token: the Expo push token.
    ///   - now: UNIX seconds, to turn `expiresAt` into a TTL.
    ///   - nowMilliseconds: the same instant in UNIX ms (default `now` × 1000): with
    ///     `expiresAtMilliseconds` the time left is rounded down, never past the expiry (NO-2).
    /// - Throws: `PushPayloadError.expired`, `.invalidTTL`, `.expoPayloadTooLarge` (the message
    ///   without `to` over 4096 bytes once an alert's texts were shortened to fit,
    ///   `PushNotification.fittingTexts(within:size:)`: the data alone is too large).
    public static func message(for notification: PushNotification, token: String, now: Int, nowMilliseconds: Int64? = nil) throws(PushPayloadError) -> PushJSON {
        let ttl = min(try notification.remainingTTL(nowMilliseconds: nowMilliseconds ?? Int64(now) * 1000), maximumTTLSeconds)
        var message = members(of: notification, ttl: ttl)
        let bytes = PushJSON.object(message).bytes.count
        if bytes > maximumPayloadBytes {
            // Texts shortened as every provider does; data never cut (then refused below).
            guard let shorter = notification.fittingTexts(within: maximumPayloadBytes, size: { PushJSON.object(members(of: $0, ttl: ttl)).bytes.count })
            else { throw .expoPayloadTooLarge(bytes: bytes, limit: maximumPayloadBytes) }
            message = members(of: shorter, ttl: ttl)
        }
        message["to"] = .string(token)
        return .object(message)
    }

    /// The message's members without `to` (what Expo's 4096 bytes count).
    static func members(of notification: PushNotification, ttl: Int) -> [String: PushJSON] {
        var message: [String: PushJSON] = ["ttl": .int(Int64(ttl))]
        if !notification.data.isEmpty {
            let data = PushJSON.object(notification.data.mapValues { .string($0) })
            message["data"] = notification.rootKey.map { .object([$0: data]) } ?? data
        }
        if let collapseKey = notification.collapseKey { message["collapseId"] = .string(collapseKey) }
        switch notification.kind {
        case .alert:
            if let title = notification.title { message["title"] = .string(title) }
            if let subtitle = notification.subtitle { message["subtitle"] = .string(subtitle) }
            if let body = notification.body { message["body"] = .string(body) }
            if let sound = notification.sound { message["sound"] = .string(sound) }
            if let badge = notification.badge { message["badge"] = .int(Int64(badge)) }
            if let channel = notification.androidChannelID { message["channelId"] = .string(channel) }
            if let level = notification.effectiveInterruptionLevel { message["interruptionLevel"] = .string(level.rawValue) }
            if let tag = notification.effectiveTag { message["tag"] = .string(tag) }
            message["priority"] = .string(notification.priority == .normal ? "default" : "high")
        case .wakeup:
            message["_contentAvailable"] = .bool(true)
            message["priority"] = .string("normal")
        }
        return message
    }

    /// The send request for up to 100 messages (`message(for:token:now:)`), as one JSON array.
    public static func sendRequest(messages: [PushJSON], settings: ExpoSettings) -> PushHTTPRequest {
        precondition((1...maximumMessagesPerRequest).contains(messages.count), "an Expo request carries 1-100 messages")
        return request(url: settings.sendURL, body: PushJSON.array(messages).bytes, settings: settings)
    }

    /// The receipts request: `{"ids":[…]}`.
    public static func receiptsRequest(ids: [String], settings: ExpoSettings) -> PushHTTPRequest {
        request(url: settings.receiptsURL, body: PushJSON.object(["ids": .array(ids.map { .string($0) })]).bytes, settings: settings)
    }

    private static func request(url: String, body: [UInt8], settings: ExpoSettings) -> PushHTTPRequest {
        var headers: [(String, String)] = [("accept", "application/json"), ("accept-encoding", "gzip")]
        if let token = settings.accessToken { headers.append(("authorization", "Bearer \(token)")) }
        headers.append(("content-type", "application/json"))
        var payload = body
        if body.count > settings.gzipThresholdBytes, let compressed = Gzip.compress(body) {
            headers.append(("content-encoding", "gzip"))
            payload = compressed
        }
        return PushHTTPRequest(url: url, headers: headers, body: payload)
    }
}
