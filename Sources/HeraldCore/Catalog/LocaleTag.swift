import Foundation

/// A BCP 47 language tag as devices report it (`pt-BR`, `en`, `zh-Hant-TW`, `es-419`), well formed
/// by RFC 5646 §2.1: a 2–3 letter language (with up to three 3-letter extlangs), then in this order
/// an optional 4-letter script, an optional region (2 letters or 3 digits), variants (5–8 letters
/// or digits, or a digit and 3), extensions (a singleton and subtags of 2–8) and private use (`x`
/// and subtags of 1–8); 35 characters at most, `_` read as `-`. Normalised to the usual case
/// (`pt-BR`; subtags after a singleton lower case: `en-US-u-ca-gregory`), with a withdrawn language
/// code replaced by its successor (`iw` → `he`, `in` → `id`, `ji` → `yi`). Grandfathered tags, tags
/// that are private use alone, and subtags out of that order (`xx-YY-ZZ`, two regions) are refused.
public struct LocaleTag: Hashable, Sendable {
    public let rawValue: String

    public init?(_ raw: String) {
        guard (2...35).contains(raw.utf8.count) else { return nil }
        let parts = raw.replacingOccurrences(of: "_", with: "-").split(separator: "-", omittingEmptySubsequences: false)
        guard let language = parts.first, (2...3).contains(language.count), language.allSatisfy(Self.isLetter) else { return nil }
        let code = language.lowercased()
        var normalised = [Self.preferredLanguage[code] ?? code]
        // Where the next subtag may go: each stage only moves forward (RFC 5646 §2.1's order).
        enum Stage: Int, Comparable {
            case extlang, script, region, variant, extensions
            static func < (a: Stage, b: Stage) -> Bool { a.rawValue < b.rawValue }
        }
        var stage = Stage.extlang
        var extlangs = 0
        var privateUse = false
        var singletonOpen = false   // a singleton still waiting for its first subtag
        for part in parts.dropFirst() {
            guard (1...8).contains(part.count), part.allSatisfy({ Self.isLetter($0) || Self.isDigit($0) }) else { return nil }
            let letters = part.allSatisfy(Self.isLetter)
            if stage == .extensions {
                // After a singleton (an extension such as `u`, or `x` for private use) every
                // subtag is lower case: `en-US-u-ca-gregory`'s `ca` is a key, not a region (§2.1.1).
                if part.count == 1 && !privateUse {
                    guard !singletonOpen else { return nil }
                    privateUse = part.lowercased() == "x"
                    singletonOpen = true
                } else {
                    guard privateUse || part.count >= 2 else { return nil }
                    singletonOpen = false
                }
                normalised.append(part.lowercased())
            } else if part.count == 1 {
                stage = .extensions
                privateUse = part.lowercased() == "x"
                singletonOpen = true
                normalised.append(part.lowercased())
            } else if stage == .extlang && part.count == 3 && letters && extlangs < 3 {
                extlangs += 1
                normalised.append(part.lowercased())
            } else if stage <= .script && part.count == 4 && letters {
                stage = .region
                normalised.append(part.prefix(1).uppercased() + part.dropFirst().lowercased())
            } else if stage <= .region && ((part.count == 2 && letters) || (part.count == 3 && part.allSatisfy(Self.isDigit))) {
                stage = .variant
                normalised.append(part.uppercased())
            } else if part.count >= 5 || (part.count == 4 && part.first.map(Self.isDigit) == true) {
                stage = .variant
                normalised.append(part.lowercased())
            } else {
                return nil
            }
        }
        guard !singletonOpen else { return nil }
        rawValue = normalised.joined(separator: "-")
    }

    /// Language subtags the IANA registry deprecates with a preferred value (RFC 5646 §4.5), as
    /// Android's `Locale.toString()` still reports three of them (`iw_IL`, `in_ID`, `ji`): read
    /// as the codes catalogs and calls are written in, so those devices get their own language.
    private static let preferredLanguage = ["iw": "he", "in": "id", "ji": "yi", "jw": "jv", "mo": "ro"]

    private static func isLetter(_ c: Character) -> Bool { c.isASCII && c.isLetter }
    private static func isDigit(_ c: Character) -> Bool { c.isASCII && c.isNumber }
}
