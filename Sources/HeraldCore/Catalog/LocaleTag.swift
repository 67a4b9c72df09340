import Foundation

/// A BCP 47 language tag as devices report it (`pt-BR`, `en`, `zh-Hant-TW`, `es-419`): a 2–3 letter
/// language, then subtags of 1–8 letters or digits, 35 characters at most. Normalised to the
/// usual case (`pt-BR`; subtags after a singleton lower case: `en-US-u-ca-gregory`). Grandfathered and private-use tags are refused.
public struct LocaleTag: Hashable, Sendable {
    public let rawValue: String

    public init?(_ raw: String) {
        guard (2...35).contains(raw.utf8.count) else { return nil }
        let parts = raw.replacingOccurrences(of: "_", with: "-").split(separator: "-", omittingEmptySubsequences: false)
        guard let language = parts.first, (2...3).contains(language.count), language.allSatisfy({ $0.isASCII && $0.isLetter }) else { return nil }
        var normalised = [language.lowercased()]
        // After a singleton (an extension such as `u`, or `x` for private use) every subtag is
        // lower case: `en-US-u-ca-gregory`'s `ca` is a key, not a region (RFC 5646 §2.1.1).
        var afterSingleton = false
        for part in parts.dropFirst() {
            guard (1...8).contains(part.count), part.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
            if part.count == 1 { afterSingleton = true }
            if afterSingleton {
                normalised.append(part.lowercased())
            } else if part.count == 2, part.allSatisfy(\.isLetter) {
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
