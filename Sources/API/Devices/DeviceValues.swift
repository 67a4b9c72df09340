import Realtime

/// A device's OS (DV-1): `ios`, `android` or `web`.
public enum DevicePlatform: String, Sendable, CaseIterable {
    case ios, android, web

    /// Who delivers to this platform's tokens unless the client says otherwise.
    var defaultProvider: PushProvider {
        switch self {
        case .ios: return .apns
        case .android: return .fcm
        case .web: return .webpush
        }
    }
}

/// Who delivers to a token: Apple (APNs), Google (FCM) or a browser's push service (Web Push).
public enum PushProvider: String, Sendable, CaseIterable {
    case apns, fcm, webpush
}

/// An APNs environment (iOS only): which gateway a token belongs to.
public enum APNsEnvironment: String, Sendable, CaseIterable {
    case sandbox, production
}

/// A push token, validated for its provider (DV-1):
/// - APNs: hex, even length, 16–200 characters (stored lower-case);
/// - FCM and Web Push: 1–4096 printable ASCII characters.
public struct DeviceToken: Hashable, Sendable {
    public let rawValue: String

    /// - Returns: nil when `raw` is not a valid token for `provider`.
    public init?(_ raw: String, provider: PushProvider) {
        switch provider {
        case .apns:
            let utf8 = raw.utf8
            guard (16...200).contains(utf8.count), utf8.count % 2 == 0, utf8.allSatisfy({ $0.isHexDigit }) else { return nil }
            rawValue = raw.lowercased()
        case .fcm, .webpush:
            let utf8 = raw.utf8
            guard (1...4096).contains(utf8.count), utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }) else { return nil }
            rawValue = raw
        }
    }

    /// The token as shown in lists: its first and last four characters.
    public static func masked(_ token: String) -> String {
        guard token.count > 12 else { return String(repeating: "•", count: token.count) }
        return "\(token.prefix(4))…\(token.suffix(4))"
    }
}

private extension UInt8 {
    var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
