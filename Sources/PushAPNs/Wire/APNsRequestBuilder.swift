import HeraldCore
import PushHTTP
import Synchronization

/// Turns a `PushNotification` into the APNs provider-API request (SPEC PU-1, PU-3, PU-4;
/// push-providers.md §1.2–1.4, §1.10).
///
/// ```
/// POST <gateway>/3/device/<hex token>
/// authorization: bearer <provider JWT>
/// apns-id: <lower-case uuid>
/// apns-push-type: alert | background
/// apns-priority: 10 (alert) | 5 (background, always)
/// apns-expiration: <epoch s: expiresAt, or now + TTL (default 1 h); 0 for TTL 0>
/// apns-topic: <bundle id>
/// apns-collapse-id: <≤ 64 bytes>          (the collapse key, else the notification's id: ADR 0020)
/// content-type: application/json          (stops libcurl from sending its form-urlencoded default)
///
/// alert:   {"aps":{"alert":{"body","subtitle","title"},"badge","interruption-level","sound","thread-id"},<data keys>}
/// wake-up: {"aps":{"content-available":1},<data keys>}
/// with rootKey: <data keys> becomes "<rootKey>":{<data keys>}
/// ```
/// Keys are sorted (`PushJSON`), absent fields are omitted, custom keys never go inside `aps`
/// (APNs ignores them there).
public enum APNsRequestBuilder {
    /// Builds the request.
    ///
    /// - Parameters:
    ///   - notification: what to send.
    ///   - deviceToken: the device token as hex text (any length: Apple says not to assume 32 bytes).
    ///   - environment: the gateway matching the device's environment.
    ///   - topic: `apns-topic`, the bundle id (`APNS_TOPIC`).
    ///   - authToken: the provider JWT from `APNsAuthToken.current()`.
    ///   - apnsID: the job's id, the same on every attempt (PU-5b).
    ///   - now: UNIX seconds, for `apns-expiration`.
    ///   - nowMilliseconds: the same instant in UNIX ms (default `now` × 1000): a notification with
    ///     `expiresAtMilliseconds` expires at `now` + the time left rounded down, or `0` with under a
    ///     second left — never after the caller's expiry (NO-2).
    ///   - bodies: the body of the last notification, reused when this one is equal (a provider
    ///     keeps one; the body depends on the notification alone).
    ///   - authorizations: `authorization`'s value for the last JWT, reused while it is the same
    ///     (a provider keeps one; its prefix must be `bearer `); nil: built here.
    /// - Throws: `PushPayloadError` — `.invalidDeviceToken`, `.collapseIDTooLong`, `.reservedDataKey("aps")`,
    ///   `.expired`, `.invalidTTL`, `.apnsPayloadTooLarge` (body over 4096 bytes once an alert's
    ///   texts were shortened to fit, `fitted(_:limit:)`: the data alone is too large).
    public static func request(for notification: PushNotification, deviceToken: String, environment: APNsGateway,
                               topic: String, authToken: String, apnsID: PushID, now: Int, nowMilliseconds: Int64? = nil,
                               bodies: APNsBodyCache? = nil,
                               authorizations: AuthorizationValueCache? = nil) throws(PushPayloadError) -> PushHTTPRequest {
        guard !deviceToken.isEmpty, deviceToken.isAllASCIIHexDigits else { throw .invalidDeviceToken }
        // The caller's key must fit (else the push is refused); the notification's id stands in
        // without one, so a resend replaces the first copy (ADR 0020). Ours always fit.
        let collapseID = try notification.collapseKey.map { key throws(PushPayloadError) in try APNsCollapseID(key) }
            ?? notification.notificationID.flatMap { try? APNsCollapseID($0) }
        let ttl = try notification.remainingTTL(nowMilliseconds: nowMilliseconds ?? Int64(now) * 1000)
        let expiration: APNsExpiration
        if notification.expiresAtMilliseconds != nil {
            expiration = .after(ttlSeconds: ttl, now: now)
        } else {
            // Jobs stored before the millisecond field: the expiry as stored, a whole second.
            expiration = notification.expiresAt.map { .at($0) } ?? .after(ttlSeconds: ttl, now: now)
        }

        let pushType: APNsPushType
        let priority: APNsPriority
        switch notification.kind {
        case .alert:
            pushType = .alert
            priority = .immediately
        case .wakeup:
            pushType = .background
            priority = .consideringDevicePower  // "Using priority 10 is an error" for background
        }

        var body: [UInt8]
        if let bodies {
            body = try bodies.body(for: notification) { () throws(PushPayloadError) in try payloadBytes(for: notification) }
        } else {
            body = try payloadBytes(for: notification)
        }
        if body.count > pushType.maximumPayloadBytes, notification.kind == .alert {
            body = try fitted(notification, limit: pushType.maximumPayloadBytes) ?? body
        }
        guard body.count <= pushType.maximumPayloadBytes else {
            throw .apnsPayloadTooLarge(bytes: body.count, limit: pushType.maximumPayloadBytes)
        }

        // Room for all eight at once: growing the array for the last one or two was ~650
        // instructions a push.
        var headers: [(String, String)] = []
        headers.reserveCapacity(8)
        headers.append(("authorization", authorizations?.value(for: authToken) ?? "bearer \(authToken)"))
        headers.append(("apns-id", apnsID.value))
        headers.append(("apns-push-type", pushType.rawValue))
        headers.append(("apns-priority", priority.headerValue))
        headers.append(("apns-expiration", expiration.headerValue))
        headers.append(("apns-topic", topic))
        if let collapseID { headers.append(("apns-collapse-id", collapseID.value)) }
        headers.append(("content-type", "application/json"))
        return PushHTTPRequest(url: environment.devicePathPrefix + deviceToken, headers: headers, body: body)
    }

    /// The body of an alert whose payload outgrows `limit`, its texts shortened to fit
    /// (`PushNotification.fittingTexts(within:size:)`); nil when no cut makes it fit (the data
    /// alone is too large).
    static func fitted(_ notification: PushNotification, limit: Int) throws(PushPayloadError) -> [UInt8]? {
        let shorter = try notification.fittingTexts(within: limit) { (candidate) throws(PushPayloadError) in try payloadBytes(for: candidate).count }
        return try shorter.map { (fitting) throws(PushPayloadError) in try payloadBytes(for: fitting) }
    }
}

/// The APNs body of the last notification sent (`APNsRequestBuilder.request(…bodies:)`): pushes
/// come in runs of one notification to many devices, so the body built for the first device of a
/// run serves the rest. One slot, so it holds no more than one body whatever the traffic.
///
/// Concrete, not a generic cache from PushHTTP: across modules a generic one stayed
/// unspecialized (~3k instructions a push of metadata look-ups and value-witness calls, issue 17).
///
/// # Thread safety
/// A `Mutex` guards the slot; `make` runs outside it (two threads missing at once both make the
/// body; the later one stays).
public final class APNsBodyCache: Sendable {
    private let slot = Mutex<(notification: PushNotification, body: [UInt8])?>(nil)

    public init() {}

    /// The body remembered for `notification` when the last one was equal, else `make()`'s, which
    /// is then remembered. - Throws: `make`'s error (nothing is remembered then).
    func body(for notification: PushNotification, make: () throws(PushPayloadError) -> [UInt8]) throws(PushPayloadError) -> [UInt8] {
        let hit = slot.withLock { slot -> [UInt8]? in
            guard let kept = slot, kept.notification == notification else { return nil }
            // Equal, maybe another copy (an earlier call's): this one is kept, so the rest of its
            // run compares by identity (`PushNotification`'s shared box) instead of field by field.
            slot = (notification, kept.body)
            return kept.body
        }
        if let hit { return hit }
        let body = try make()
        slot.withLock { $0 = (notification, body) }
        return body
    }
}
