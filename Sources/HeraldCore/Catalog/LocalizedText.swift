/// One text in several languages, keyed by BCP 47 tag (`pt`, `pt-BR`, `en`, `zh-Hans`), and the
/// rule that picks one for a device (NO-5).
///
/// For a device locale the choice is, in order:
/// 1. the exact tag (`pt-BR` → `pt-BR`);
/// 2. the tag with subtags dropped from the end (`zh-Hant-TW` → `zh-Hant` → `zh`, `pt-PT` → `pt`).
///    Chinese without a script gets the one its region implies first (`zh-TW` → `zh-Hant`, `zh-CN` → `zh-Hans`);
/// 3. any other text of the same language: one with the same script first, then by tag, so the
///    choice never depends on dictionary order (`en-GB` → `en-US` when only `en-US` exists). A
///    tag that names its script takes only a text of that script or of none (`sr-Latn` never gets
///    `sr-Cyrl`, `zh-Hant-HK` never `zh-Hans`); a tag without one may take any (`zh-TW` still
///    gets `zh-Hans` when it is the only Chinese text);
/// 4. for a push, the same three steps for the user's language (the profile's locale), when the
///    device's found nothing (NO-5);
/// 5. the same three steps for the app's default locale;
/// 6. nil.
///
/// A text made with `init(single:)` is the same in every language.
public struct LocalizedText: Sendable, Equatable {
    private let byTag: [String: TextTemplate]
    /// `byTag`'s keys, sorted.
    private let tags: [String]
    private let single: TextTemplate?

    /// - Parameter byLocale: language tag → text. Tags are matched without regard to case or
    ///   `_`/`-` (`pt_br` is `pt-BR`); of two keys that mean the same tag, the one sorting first wins.
    public init(_ byLocale: [String: TextTemplate]) {
        var byTag: [String: TextTemplate] = [:]
        for key in byLocale.keys.sorted() {
            let tag = LocaleTag(key)?.rawValue ?? key
            if byTag[tag] == nil { byTag[tag] = byLocale[key] }
        }
        self.byTag = byTag
        tags = byTag.keys.sorted()
        single = nil
    }

    /// One text for every locale.
    public init(single: TextTemplate) {
        byTag = [:]
        tags = []
        self.single = single
    }

    /// The language tags present, sorted; empty for a single text.
    public var locales: [String] { tags }

    /// Whether this is one text for every locale (`init(single:)`): every device gets it.
    var isSingle: Bool { single != nil }

    /// Every text with its tag (nil for a single text), for checking that all of them render.
    var entries: [(locale: String?, template: TextTemplate)] {
        if let single { return [(nil, single)] }
        return tags.map { ($0, byTag[$0]!) }
    }

    /// The text for a device.
    ///
    /// - Parameters:
    ///   - locale: the device's language tag; nil or malformed means "unknown".
    ///   - defaultLocale: the app's default language tag.
    /// - Returns: the chosen text, or nil when neither the device's language nor the default one is present.
    public func template(for locale: String?, defaultLocale: String) -> TextTemplate? {
        choose(for: locale, defaultLocale: defaultLocale)?.template
    }

    /// The text for a device and the tag it was chosen under (nil for a single text).
    /// - Parameter userLocale: the user's language, tried when the device's finds no text (a
    ///   second parameter, not a list: a push is rendered per device, and a list was an
    ///   allocation each; issue 17).
    func choose(for locale: String?, userLocale: String? = nil, defaultLocale: String) -> (locale: String?, template: TextTemplate)? {
        if let single { return (nil, single) }
        if let locale, let tag = bestTag(for: locale) { return (tag, byTag[tag]!) }
        if let userLocale, userLocale != locale, let tag = bestTag(for: userLocale) { return (tag, byTag[tag]!) }
        if let tag = bestTag(for: defaultLocale) { return (tag, byTag[tag]!) }
        return nil
    }

    /// The text for a reader who named several languages, most wanted first (an inbox's
    /// `Accept-Language` by weight, then the user's language): the first of them present (each
    /// as `choose(for:defaultLocale:)` matches one), else the default language's.
    func choose(for locales: [String], defaultLocale: String) -> (locale: String?, template: TextTemplate)? {
        if let single { return (nil, single) }
        for locale in locales {
            if let tag = bestTag(for: locale) { return (tag, byTag[tag]!) }
        }
        if let tag = bestTag(for: defaultLocale) { return (tag, byTag[tag]!) }
        return nil
    }

    /// The deterministic last resort for texts given in a call: the first tag in sort order.
    var first: (locale: String?, template: TextTemplate)? {
        if let single { return (nil, single) }
        return tags.first.map { ($0, byTag[$0]!) }
    }

    private func bestTag(for raw: String) -> String? {
        guard let wanted = LocaleTag(raw) else { return nil }
        let subtags = wanted.rawValue.split(separator: "-").map(String.init)
        for candidate in Self.lookupChain(subtags) where byTag[candidate] != nil {
            return candidate
        }
        let language = subtags[0]
        let script = Self.script(of: subtags)
        // A script the device names is a script its reader reads: `sr-Latn` falls back to
        // another Latin text or to one that names no script, never to `sr-Cyrl`.
        let scriptNamed = subtags.count > 1 && Self.isScript(subtags[1])
        var sameLanguage: String?
        for tag in tags {
            let other = tag.split(separator: "-").map(String.init)
            guard other.first == language else { continue }
            let otherScript = Self.script(of: other)
            if otherScript == script { return tag }
            if sameLanguage == nil, !scriptNamed || otherScript == nil { sameLanguage = tag }
        }
        return sameLanguage
    }

    /// RFC 4647 §3.4 lookup order: the tag, then the tag with one subtag fewer each time, with the
    /// implied script inserted for Chinese so `zh-TW` finds `zh-Hant` before `zh`.
    private static func lookupChain(_ subtags: [String]) -> [String] {
        var chain = [subtags.joined(separator: "-")]
        var parts = subtags
        if parts.count < 2 || !isScript(parts[1]), let implied = impliedScript(parts) {
            parts.insert(implied, at: 1)
        }
        for count in stride(from: parts.count, through: 1, by: -1) {
            let tag = parts[..<count].joined(separator: "-")
            if !chain.contains(tag) { chain.append(tag) }
        }
        return chain
    }

    private static func isScript(_ subtag: String) -> Bool {
        subtag.count == 4 && subtag.allSatisfy(\.isLetter)
    }

    private static func script(of subtags: [String]) -> String? {
        if subtags.count > 1, isScript(subtags[1]) { return subtags[1] }
        return impliedScript(subtags)
    }

    /// Only Chinese is written in two scripts that devices commonly leave implicit.
    private static func impliedScript(_ subtags: [String]) -> String? {
        guard subtags[0] == "zh" else { return nil }
        let region = subtags.dropFirst().first { $0.count == 2 && $0.allSatisfy(\.isLetter) }
        return region.map { ["TW", "HK", "MO"].contains($0) } == true ? "Hant" : "Hans"
    }
}
