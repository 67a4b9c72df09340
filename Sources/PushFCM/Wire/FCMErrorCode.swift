import HeraldCore
import PushHTTP

/// The FCM-specific error code: `errorCode` of the `details[]` entry whose `@type` is
/// `type.googleapis.com/google.firebase.fcm.v1.FcmError` (push-providers.md §2.5, Firebase ErrorCode reference).
///
/// Maps Google's exact strings both ways; unknown codes are kept as `.unknown(string)`.
public enum FCMErrorCode: Hashable, Sendable, CustomStringConvertible {
    /// No more information is available.
    case unspecifiedError
    /// Bad request: invalid token, package name, data key, TTL, size… (400).
    case invalidArgument
    /// The app instance was unregistered: the token is dead (404).
    case unregistered
    /// The token belongs to another Firebase project's sender (403).
    case senderIDMismatch
    /// Project, device or topic rate exceeded (429); back off at least one minute.
    case quotaExceeded
    /// FCM overloaded (503); honour Retry-After.
    case unavailable
    /// FCM internal error (500); retry like `unavailable`.
    case `internal`
    /// The APNs certificate or web-push key configured in Firebase is invalid or missing (401).
    case thirdPartyAuthError
    /// The deprecated name of `thirdPartyAuthError` in older documentation.
    case apnsAuthError
    /// A code this code does not know, exactly as received.
    case unknown(String)

    /// Every documented code.
    public static let known: [FCMErrorCode] = [
        .unspecifiedError, .invalidArgument, .unregistered, .senderIDMismatch, .quotaExceeded,
        .unavailable, .internal, .thirdPartyAuthError, .apnsAuthError,
    ]

    private static let byString: [String: FCMErrorCode] = Dictionary(uniqueKeysWithValues: known.map { ($0.rawValue, $0) })

    /// The code for Google's string; `.unknown(string)` when not documented.
    public init(rawValue: String) {
        self = Self.byString[rawValue] ?? .unknown(rawValue)
    }

    /// Google's exact string.
    public var rawValue: String {
        switch self {
        case .unspecifiedError: "UNSPECIFIED_ERROR"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .unregistered: "UNREGISTERED"
        case .senderIDMismatch: "SENDER_ID_MISMATCH"
        case .quotaExceeded: "QUOTA_EXCEEDED"
        case .unavailable: "UNAVAILABLE"
        case .internal: "INTERNAL"
        case .thirdPartyAuthError: "THIRD_PARTY_AUTH_ERROR"
        case .apnsAuthError: "APNS_AUTH_ERROR"
        case .unknown(let string): string
        }
    }

    public var description: String { rawValue }
}
