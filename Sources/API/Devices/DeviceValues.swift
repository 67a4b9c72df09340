import HeraldCore
import Realtime

/// A device's OS (DV-1): `ios`, `android` or `web`.
public enum DevicePlatform: String, Sendable, CaseIterable {
    case ios, android, web

    /// Who delivers to this platform's tokens unless the client says otherwise.
    var defaultProvider: PushProviderID {
        switch self {
        case .ios: return .apns
        case .android: return .fcm
        case .web: return .webpush
        }
    }

    /// The provider registration gives `token` when the client names none (PU-8a): Expo for an
    /// `ExponentPushToken[…]` / `ExpoPushToken[…]` on ios or android, which names its provider
    /// itself, else `defaultProvider`. A token that only starts like one (cut short, emptied) is
    /// Expo's too, so Expo's rule refuses it rather than FCM's storing it (`ExpoPushToken.hasExpoPrefix`).
    /// `herald send-test` picks the same one.
    public func provider(forToken token: String) -> PushProviderID {
        self != .web && ExpoPushToken.hasExpoPrefix(token) ? .expo : defaultProvider
    }

    /// Whether `provider` delivers to this platform's devices (docs/api.md, `provider`): ios
    /// apns, fcm or expo; android fcm or expo; web webpush or fcm. Registration and
    /// `herald send-test` refuse the other pairs alike.
    public func accepts(_ provider: PushProviderID) -> Bool {
        switch (self, provider) {
        case (.ios, .apns), (.ios, .fcm), (.android, .fcm), (.web, .webpush), (.web, .fcm), (.ios, .expo), (.android, .expo): true
        default: false
        }
    }
}

/// An APNs environment (iOS only): which gateway a token belongs to.
public enum APNsEnvironment: String, Sendable, CaseIterable {
    case sandbox, production
}

/// A push token as the API shows it. Tokens are checked by their provider's rule
/// (`PushProviders.validate(token:for:)`, DV-1), not here.
public enum DeviceToken {
    /// The token as shown in lists: its first and last four characters.
    public static func masked(_ token: String) -> String {
        guard token.count > 12 else { return String(repeating: "•", count: token.count) }
        return "\(token.prefix(4))…\(token.suffix(4))"
    }
}
