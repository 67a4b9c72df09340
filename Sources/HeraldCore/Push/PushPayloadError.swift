/// Why a notification was refused **before** sending (SPEC PU-3, push-providers.md §6.6): each
/// case is something the provider would reject, and 4xx answers slow down APNs connections and
/// count against FCM quota. A job failing with one of these is dead-lettered at once.
public enum PushPayloadError: Error, Equatable, Sendable {
    /// The APNs body is `bytes` long, over the push type's `limit` (4096, VoIP 5120).
    case apnsPayloadTooLarge(bytes: Int, limit: Int)
    /// The FCM `data` + `notification` text is `bytes` long, over `limit` (4096).
    case fcmPayloadTooLarge(bytes: Int, limit: Int)
    /// An Expo message (everything but `to`) is `bytes` long, over Expo's `limit` (4096).
    case expoPayloadTooLarge(bytes: Int, limit: Int)
    /// The encrypted Web Push body would be `bytes` long, over `limit` (4096: push services must
    /// take at least that much, RFC 8030 §7.2, and may refuse more).
    case webPushPayloadTooLarge(bytes: Int, limit: Int)
    /// `apns-collapse-id` over 64 UTF-8 bytes (`bytes` is the actual size).
    case collapseIDTooLong(bytes: Int)
    /// An empty collapse id, which APNs would refuse.
    case emptyCollapseID
    /// The APNs device token is empty or not hexadecimal.
    case invalidDeviceToken
    /// A data key the provider reserves: `aps` for APNs; `from`, `message_type`, `google.*`,
    /// `gcm.*` for FCM (push-providers.md §2.3).
    case reservedDataKey(String)
    /// The expiry (`expiresAtMilliseconds`, else `expiresAt`) is not after `now`: SPEC NO-2,
    /// expired notifications are never sent. Unlike the other cases it is not refused:
    /// `classifyPayloadError` makes it `PushOutcome.expired`, and the worker completes the job
    /// with the outcome `expired` instead of dead-lettering it.
    case expired
    /// A negative TTL.
    case invalidTTL(Int)

    /// A short machine-readable reason, for a dead letter's `last_error`.
    public var reason: String {
        switch self {
        case .apnsPayloadTooLarge, .fcmPayloadTooLarge, .expoPayloadTooLarge, .webPushPayloadTooLarge: "payload_too_large"
        case .collapseIDTooLong, .emptyCollapseID: "invalid_collapse_id"
        case .invalidDeviceToken: "invalid_device_token"
        case .reservedDataKey: "reserved_data_key"
        case .expired: "expired"
        case .invalidTTL: "invalid_ttl"
        }
    }

    /// One line for logs.
    public var message: String {
        switch self {
        case .apnsPayloadTooLarge(let bytes, let limit): "APNs payload is \(bytes) bytes, over the \(limit)-byte limit"
        case .fcmPayloadTooLarge(let bytes, let limit): "FCM payload is \(bytes) bytes, over the \(limit)-byte limit"
        case .expoPayloadTooLarge(let bytes, let limit): "Expo message is \(bytes) bytes, over the \(limit)-byte limit"
        case .webPushPayloadTooLarge(let bytes, let limit): "Web Push body is \(bytes) bytes encrypted, over the \(limit)-byte limit"
        case .collapseIDTooLong(let bytes): "collapse id is \(bytes) bytes, over the 64-byte limit"
        case .emptyCollapseID: "collapse id is empty"
        case .invalidDeviceToken: "device token is not hexadecimal"
        case .reservedDataKey(let key): "data key \"\(key)\" is reserved by the provider"
        case .expired: "notification expired before it was sent"
        case .invalidTTL(let ttl): "TTL \(ttl) is negative"
        }
    }
}

extension PushPayloadError: CustomStringConvertible {
    public var description: String { message }
}
