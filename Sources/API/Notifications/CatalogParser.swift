import Foundation
import HeraldCore
import Realtime

/// Turns catalog JSON into a `NotificationCatalog`, reporting the first problem with its path
/// (`kinds["orders.paid"].priority`). The JSON is walked as a `JSONValue` rather than decoded into
/// `Decodable` structs, because the format tells an absent key from `null` (`notification_id_key`,
/// a kind's `sound`) and refuses unknown keys, which `Decodable` does neither of.
enum CatalogParser {
    /// - Parameter overridingLocale: an app's `default_locale` setting, which replaces the file's
    ///   (every text must then have one for it, or for another tag of its language).
    static func parse(_ bytes: [UInt8], defaultLocale overridingLocale: String? = nil) throws(CatalogError) -> NotificationCatalog {
        switch JSONSyntax.check(bytes, maxDepth: 32, rejectDuplicateKeys: true) {
        case nil: break
        case .tooDeep?:
            throw .invalid(field: "", reason: "the catalog nests deeper than 32 levels")
        case .invalid(let offset)?:
            let (line, column) = position(of: offset, in: bytes)
            throw .invalid(field: "", reason: "the catalog is not valid JSON (line \(line), column \(column))")
        case .duplicateKey(let offset, let key)?:
            // A kind or a locale written twice is a mistake the author should see, not a silent pick.
            let (line, column) = position(of: offset, in: bytes)
            throw .invalid(field: "", reason: "the key \"\(key)\" appears twice in one object (line \(line), column \(column))")
        case .numberOutOfRange(let offset)?:
            let (line, column) = position(of: offset, in: bytes)
            throw .invalid(field: "", reason: "a number is beyond the range of a double (line \(line), column \(column))")
        }
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        } catch {
            throw .invalid(field: "", reason: "the catalog is not valid JSON")
        }
        let root = try Object(value, path: "")
        try root.allowKeys(["app", "default_locale", "notification_id_key", "kind_key", "exclude_audiences", "exclude_kinds", "exclude_data",
                            "categories", "kinds"])

        let app = try root.string("app") ?? "default"
        guard !app.isEmpty else { throw .invalid(field: "app", reason: "must not be empty") }
        let localeText: String?
        if let overridingLocale { localeText = overridingLocale } else { localeText = try root.string("default_locale") }
        let defaultLocale = try localeText.map { raw throws(CatalogError) in
            guard let tag = LocaleTag(raw) else {
                throw .invalid(field: "default_locale", reason: "\"\(raw)\" is not a language tag such as pt-BR")
            }
            return tag.rawValue
        } ?? NotificationCatalog.empty.defaultLocale
        let notificationIDKey = root.has("notification_id_key")
            ? try root.string("notification_id_key").map { key throws(CatalogError) in try dataKey(key, field: "notification_id_key") }
            : NotificationCatalog.empty.notificationIDKey
        let kindKey = try dataKey(try root.string("kind_key") ?? "kind", field: "kind_key")

        var excluded: Set<String> = []
        if let audiences = root["exclude_audiences"] {
            guard case .array(let items) = audiences else {
                throw .invalid(field: "exclude_audiences", reason: "must be an array of audience names")
            }
            for (i, item) in items.enumerated() {
                guard case .string(let audience) = item, !audience.isEmpty else {
                    throw .invalid(field: "exclude_audiences[\(i)]", reason: "must be a non-empty string")
                }
                excluded.insert(audience)
            }
        }
        let excludedKinds = try names(root["exclude_kinds"], field: "exclude_kinds", what: "kind")
        let excludedData = try dataPatterns(root["exclude_data"])

        var categories: [String: NotificationCategory] = [:]
        if let value = root["categories"] {
            let object = try Object(value, path: "categories")
            for (name, value) in object.fields {
                let path = object.path(name)
                try checkName(name, field: path, what: "category")
                categories[name] = try category(name, try Object(value, path: path), defaultLocale: defaultLocale)
            }
        }

        var kinds: [String: NotificationKind] = [:]
        if let value = root["kinds"] {
            let object = try Object(value, path: "kinds")
            for (name, value) in object.fields {
                let path = object.path(name)
                try checkName(name, field: path, what: "kind")
                kinds[name] = try kind(name, try Object(value, path: path), categories: categories, defaultLocale: defaultLocale)
            }
        }

        let catalog = NotificationCatalog(
            app: app, defaultLocale: defaultLocale, notificationIDKey: notificationIDKey, kindKey: kindKey,
            exclusions: ExclusionRules(audiences: excluded, kinds: excludedKinds, data: excludedData),
            categories: categories, kinds: kinds)
        try checkTestKind(catalog)
        return catalog
    }

    /// `exclude_kinds` (AP-6): an array of kind names. A name the catalog does not describe is fine:
    /// calls may send kinds outside it.
    private static func names(_ value: JSONValue?, field: String, what: String) throws(CatalogError) -> Set<String> {
        guard let value else { return [] }
        guard case .array(let items) = value else { throw .invalid(field: field, reason: "must be an array of \(what) names") }
        var names: Set<String> = []
        for (i, item) in items.enumerated() {
            guard case .string(let name) = item else { throw .invalid(field: "\(field)[\(i)]", reason: "must be a string") }
            try checkName(name, field: "\(field)[\(i)]", what: what)
            names.insert(name)
        }
        return names
    }

    /// `exclude_data` (AP-6, seed 002's staff-only destinations): an object from a data key to the
    /// value prefixes whose pushes are never sent, e.g. `{"actionUrl": ["/orders/", "/storage/"]}`.
    private static func dataPatterns(_ value: JSONValue?) throws(CatalogError) -> [ExclusionRules.DataPattern] {
        guard let value else { return [] }
        let object = try Object(value, path: "exclude_data")
        var patterns: [ExclusionRules.DataPattern] = []
        for (key, value) in object.fields {
            let path = object.path(key)
            _ = try dataKey(key, field: path)
            guard case .array(let items) = value, !items.isEmpty else {
                throw .invalid(field: path, reason: "must be a non-empty array of value prefixes")
            }
            var prefixes: [String] = []
            for (i, item) in items.enumerated() {
                // An empty prefix would match every value: a typo that silences the whole key.
                guard case .string(let prefix) = item, !prefix.isEmpty else {
                    throw .invalid(field: "\(path)[\(i)]", reason: "must be a non-empty string")
                }
                prefixes.append(prefix)
            }
            patterns.append(.init(key: key, prefixes: prefixes))
        }
        return patterns
    }

    /// The test push has no arguments (DV-7): a `test` kind whose texts or grouping name one would
    /// fail on a phone's first test, so it fails here, at start, with its path.
    private static func checkTestKind(_ catalog: NotificationCatalog) throws(CatalogError) {
        guard catalog.kind(NotificationCatalog.testKind) != nil else { return }
        do {
            try NotificationRenderer(catalog: catalog).validate(kind: NotificationCatalog.testKind, title: nil, body: nil,
                                                                 arguments: [:], data: [:])
        } catch .missingArgument(let field, let name) {
            throw .invalid(field: "\(Object.path("kinds", NotificationCatalog.testKind)).\(field)",
                           reason: "the test push has no arguments, so {\(name)} cannot be filled")
        }
    }

    private static func category(_ name: String, _ object: Object, defaultLocale: String) throws(CatalogError) -> NotificationCategory {
        try object.allowKeys(["android_channel_id", "importance", "sound", "name"])
        let channel = try object.string("android_channel_id") ?? name
        guard !channel.isEmpty else { throw .invalid(field: object.path("android_channel_id"), reason: "must not be empty") }
        let importance = try object.string("importance") ?? "default"
        guard NotificationCategory.importances.contains(importance) else {
            throw .invalid(field: object.path("importance"), reason: "\"\(importance)\" is not one of min, low, default, high, max")
        }
        return NotificationCategory(
            name: name, androidChannelID: channel, importance: importance, sound: try object.string("sound"),
            displayName: try localized(object, "name", defaultLocale: defaultLocale))
    }

    private static func kind(_ name: String, _ object: Object, categories: [String: NotificationCategory],
                             defaultLocale: String) throws(CatalogError) -> NotificationKind {
        try object.allowKeys(["category", "default_enabled", "requires", "audience", "priority", "sound", "preferences",
                              "collapse", "tag", "thread", "subtitle", "title", "body"])
        let category = try object.string("category").map { name throws(CatalogError) in
            guard let category = categories[name] else {
                let known = categories.keys.sorted().joined(separator: ", ")
                throw .invalid(field: object.path("category"),
                               reason: "unknown category \"\(name)\" (the catalog has: \(known.isEmpty ? "none" : known))")
            }
            return category
        }
        let priority = try object.string("priority")
        if let priority, !NotificationCatalog.priorities.contains(priority) {
            throw .invalid(field: object.path("priority"), reason: "\"\(priority)\" is not one of normal, high, urgent")
        }
        let requires = try object.string("requires")
        if requires?.isEmpty == true { throw .invalid(field: object.path("requires"), reason: "must not be empty (leave it out for none)") }
        let audience = try object.string("audience") ?? "everyone"
        if audience.isEmpty { throw .invalid(field: object.path("audience"), reason: "must not be empty") }
        // An explicit null silences a kind of a category that has a sound.
        let sound = object.has("sound") ? try object.string("sound") : category?.sound
        return NotificationKind(
            name: name, category: category?.name, androidChannelID: category?.androidChannelID,
            defaultEnabled: try object.bool("default_enabled") ?? true, requires: requires, audience: audience,
            priority: priority, sound: sound, inPreferences: try object.bool("preferences") ?? true,
            collapse: try template(object, "collapse"), tag: try template(object, "tag"),
            thread: try template(object, "thread"), subtitle: try template(object, "subtitle"),
            title: try localized(object, "title", defaultLocale: defaultLocale),
            body: try localized(object, "body", defaultLocale: defaultLocale))
    }

    private static func template(_ object: Object, _ key: String) throws(CatalogError) -> TextTemplate? {
        guard let source = try object.string(key) else { return nil }
        return try TextTemplate(source, field: object.path(key))
    }

    /// A text that is either one string for every language or an object of language tag → string.
    private static func localized(_ object: Object, _ key: String, defaultLocale: String) throws(CatalogError) -> LocalizedText? {
        let field = object.path(key)
        switch object[key] {
        case nil, .null?:
            return nil
        case .string(let source)?:
            return LocalizedText(single: try TextTemplate(source, field: field))
        case .object?:
            let texts = try Object(object[key]!, path: field)
            guard !texts.fields.isEmpty else { throw .invalid(field: field, reason: "needs at least one language") }
            var byLocale: [String: TextTemplate] = [:]
            var seen: [String: String] = [:]
            for (raw, value) in texts.fields {
                let path = texts.path(raw)
                guard let tag = LocaleTag(raw) else {
                    throw .invalid(field: path, reason: "\"\(raw)\" is not a language tag such as pt or pt-BR")
                }
                if let other = seen[tag.rawValue] {
                    throw .invalid(field: path, reason: "the same language as \"\(other)\"")
                }
                seen[tag.rawValue] = raw
                guard case .string(let source) = value else { throw .invalid(field: path, reason: "must be a string") }
                byLocale[tag.rawValue] = try TextTemplate(source, field: path)
            }
            let text = LocalizedText(byLocale)
            guard text.template(for: nil, defaultLocale: defaultLocale) != nil else {
                throw .invalid(field: field, reason: "has no text for the default locale \(defaultLocale) (nor another of its language)")
            }
            return text
        default:
            throw .invalid(field: field, reason: "must be a string or an object of language tag to string")
        }
    }

    /// Kind and category names: 1–64 of `A-Z a-z 0-9 _ . : -`.
    static func checkName(_ name: String, field: String, what: String) throws(CatalogError) {
        guard EventName.isName(name, maxLength: 64) else {
            throw .invalid(field: field, reason: "a \(what) name is 1-64 letters, digits, _ . : - (got \"\(name)\")")
        }
    }

    private static func dataKey(_ key: String, field: String) throws(CatalogError) -> String {
        guard (1...64).contains(key.utf8.count) else { throw .invalid(field: field, reason: "must be 1-64 characters") }
        // Herald writes it into every push's data: a key APNs or FCM refuses would fail them all.
        guard !PayloadOptions.isReservedDataKey(key) else { throw .invalid(field: field, reason: "\"\(key)\" is reserved by APNs or FCM") }
        return key
    }

    private static func position(of offset: Int, in bytes: [UInt8]) -> (line: Int, column: Int) {
        var line = 1
        var lineStart = 0
        for (i, byte) in bytes[..<min(offset, bytes.count)].enumerated() where byte == UInt8(ascii: "\n") {
            line += 1
            lineStart = i + 1
        }
        return (line, offset - lineStart + 1)
    }
}

/// A JSON object of the catalog with its path, for reading fields with precise errors.
private struct Object {
    let path: String
    /// The fields, sorted by key.
    let fields: [(key: String, value: JSONValue)]
    private let byKey: [String: JSONValue]

    init(_ value: JSONValue, path: String) throws(CatalogError) {
        guard case .object(let pairs) = value else {
            throw .invalid(field: path, reason: path.isEmpty ? "the catalog must be a JSON object" : "must be an object")
        }
        var byKey: [String: JSONValue] = [:]
        for (key, value) in pairs {
            guard byKey.updateValue(value, forKey: key) == nil else {
                throw .invalid(field: Self.path(path, key), reason: "appears twice")
            }
        }
        self.path = path
        self.fields = pairs.map { (key: $0.0, value: $0.1) }
        self.byKey = byKey
    }

    subscript(key: String) -> JSONValue? { byKey[key] }

    func has(_ key: String) -> Bool { byKey[key] != nil }

    func path(_ key: String) -> String { Self.path(path, key) }

    /// `parent.key`, or `parent["key"]` when the key holds characters other than letters, digits, `_` and `-`.
    static func path(_ parent: String, _ key: String) -> String {
        let plain = !key.isEmpty && key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }
        if plain { return parent.isEmpty ? key : "\(parent).\(key)" }
        return "\(parent)[\"\(key)\"]"
    }

    /// Refuses keys outside `allowed`, except comments (keys starting with `_`).
    func allowKeys(_ allowed: Set<String>) throws(CatalogError) {
        for (key, _) in fields where !allowed.contains(key) && !key.hasPrefix("_") {
            throw .invalid(field: path(key), reason: "unknown field (known: \(allowed.sorted().joined(separator: ", ")))")
        }
    }

    /// Absent or null → nil.
    func string(_ key: String) throws(CatalogError) -> String? {
        switch byKey[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw .invalid(field: path(key), reason: "must be a string")
        }
    }

    /// Absent or null → nil.
    func bool(_ key: String) throws(CatalogError) -> Bool? {
        switch byKey[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw .invalid(field: path(key), reason: "must be true or false")
        }
    }
}
