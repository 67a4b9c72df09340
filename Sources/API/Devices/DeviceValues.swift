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

/// A BCP 47 language tag as devices report it (`pt-BR`, `en`, `zh-Hant-TW`, `es-419`): a 2–3 letter
/// language, then subtags of 1–8 letters or digits, 35 characters at most. Normalised to the
/// usual case (`pt-BR`). Grandfathered and private-use tags are refused.
public struct LocaleTag: Hashable, Sendable {
    public let rawValue: String

    public init?(_ raw: String) {
        guard (2...35).contains(raw.utf8.count) else { return nil }
        let parts = raw.replacingOccurrences(of: "_", with: "-").split(separator: "-", omittingEmptySubsequences: false)
        guard let language = parts.first, (2...3).contains(language.count), language.allSatisfy({ $0.isASCII && $0.isLetter }) else { return nil }
        var normalised = [language.lowercased()]
        for part in parts.dropFirst() {
            guard (1...8).contains(part.count), part.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
            if part.count == 2, part.allSatisfy(\.isLetter) {
                normalised.append(part.uppercased())          // region
            } else if part.count == 4, part.allSatisfy(\.isLetter) {
                normalised.append(part.prefix(1).uppercased() + part.dropFirst().lowercased())  // script
            } else {
                normalised.append(part.lowercased())
            }
        }
        rawValue = normalised.joined(separator: "-")
    }
}
