/// The texts and grouping of one notification for one device, ready for a push payload (NO-5, NO-7).
public struct RenderedNotification: Sendable, Equatable {
    public var title: String?
    /// iOS only (`aps.alert.subtitle`).
    public var subtitle: String?
    public var body: String?
    /// `apns-collapse-id` and FCM `android.collapse_key`.
    public var collapseKey: String?
    /// FCM `android.notification.tag`.
    public var tag: String?
    /// `aps.thread-id`.
    public var threadID: String?
    /// FCM `android.notification.channel_id`.
    public var androidChannelID: String?
    /// `aps.sound` and FCM `android.notification.sound`; nil for a silent push.
    public var sound: String?
    /// The language tag the title (else the body) was taken from; nil for a text that is the same in every language.
    public var locale: String?
}

/// Renders a notification for each device from the call and the app's kind catalog (NO-5, NO-7).
///
/// Precedence, field by field:
/// - title, body: the call's texts when it gives them, else the kind's; in either, the device's
///   language by `LocalizedText`'s rule, else the app default. Texts given in a call that has neither
///   fall back to their first language in tag order rather than to nothing.
/// - collapse key, thread, sound, Android channel: the call's, else the kind's (templates rendered).
/// - tag: the call's collapse key, else the kind's tag, else the kind's collapse key, as seed 001 pushes
///   carry the same value in both.
/// - subtitle: the kind's, dropped when an argument is missing (seed 001's store name is optional).
///
/// Template arguments are the call's `args` over its `data` (`args` win), so `conv-{conversation_id}`
/// works from the deep-link data without repeating it.
public struct NotificationRenderer: Sendable {
    public let catalog: NotificationCatalog

    public init(catalog: NotificationCatalog) {
        self.catalog = catalog
    }

    /// - Parameters:
    ///   - kind: the notification's kind; one the catalog lacks renders from the call alone.
    ///   - deviceLocale: the device's language tag, nil when unknown.
    ///   - userLocale: the user's language (the profile's locale), for a text the device's
    ///     language lacks, before the catalog's default (NO-5); nil when unknown.
    ///   - title, body: the call's texts, nil to use the kind's.
    ///   - arguments: the call's `args`.
    ///   - data: the call's flat string `data`.
    ///   - collapseKey, threadID, sound, androidChannelID: the call's values, nil to use the kind's.
    /// - Throws: `CatalogError.missingArgument` when the title, body, collapse key, tag or thread
    ///   needs an argument neither `arguments` nor `data` has.
    public func render(kind: String, deviceLocale: String?, userLocale: String? = nil, title: LocalizedText?, body: LocalizedText?,
                       arguments: [String: String], data: [String: String],
                       collapseKey: String?, threadID: String?, sound: String?,
                       androidChannelID: String?) throws(CatalogError) -> RenderedNotification {
        try render(kind: kind, title: title, body: body, arguments: arguments, data: data, collapseKey: collapseKey,
                   threadID: threadID, sound: sound, androidChannelID: androidChannelID) { text, defaultLocale in
            text.choose(for: deviceLocale, userLocale: userLocale, defaultLocale: defaultLocale)
        }
    }

    /// Whether `render(kind:deviceLocale:userLocale:…)` gives every device the same result for
    /// these texts: the title and the body it would use (the call's, else the kind's) are each
    /// absent or one text for every locale, so no language is looked at.
    /// - Parameters:
    ///   - kind: the notification's kind.
    ///   - title, body: the call's texts, nil for the kind's.
    func rendersAlikeInEveryLocale(kind: String, title: LocalizedText?, body: LocalizedText?) -> Bool {
        let definition = title == nil || body == nil ? catalog.kind(kind) : nil
        return ((title ?? definition?.title)?.isSingle ?? true) && ((body ?? definition?.body)?.isSingle ?? true)
    }

    /// `render(kind:deviceLocale:…)` for a reader who named several languages, most wanted first
    /// (an inbox page: `Accept-Language` by weight, RFC 9110 §12.5.4, then the user's language):
    /// each text in the first of them it has, else in the catalog's default language.
    /// - Throws: as `render(kind:deviceLocale:…)`.
    public func render(kind: String, locales: [String], title: LocalizedText?, body: LocalizedText?,
                       arguments: [String: String], data: [String: String],
                       collapseKey: String?, threadID: String?) throws(CatalogError) -> RenderedNotification {
        try render(kind: kind, title: title, body: body, arguments: arguments, data: data, collapseKey: collapseKey,
                   threadID: threadID, sound: nil, androidChannelID: nil) { text, defaultLocale in
            text.choose(for: locales, defaultLocale: defaultLocale)
        }
    }

    private func render(kind: String, title: LocalizedText?, body: LocalizedText?,
                        arguments: [String: String], data: [String: String],
                        collapseKey: String?, threadID: String?, sound: String?, androidChannelID: String?,
                        choosing: (LocalizedText, String) -> (locale: String?, template: TextTemplate)?) throws(CatalogError) -> RenderedNotification {
        let definition = catalog.kind(kind)
        let values = data.merging(arguments) { _, argument in argument }
        let chosenTitle = choose(call: title, kind: definition?.title, choosing)
        let chosenBody = choose(call: body, kind: definition?.body, choosing)
        var out = RenderedNotification()
        out.title = try chosenTitle.map { chosen throws(CatalogError) in try chosen.template.render(values, field: Self.field("title", chosen.locale)) }
        out.body = try chosenBody.map { chosen throws(CatalogError) in try chosen.template.render(values, field: Self.field("body", chosen.locale)) }
        out.locale = chosenTitle?.locale ?? chosenBody?.locale
        out.subtitle = try? definition?.subtitle?.render(values, field: "subtitle")
        if let collapseKey {
            // Taken at intake as 1-64 characters (what the OpenAPI's `maxLength` counts): one of
            // multi-byte characters past APNs's 64 bytes is sent shortened, as a kind's is.
            out.collapseKey = Self.fitCollapseKey(collapseKey)
            out.tag = collapseKey
        } else {
            let rendered = try definition?.collapse?.render(values, field: "collapse")
            out.collapseKey = rendered.map(Self.fitCollapseKey)
            let tag = try definition?.tag?.render(values, field: "tag")
            out.tag = tag ?? out.collapseKey
        }
        if let threadID {
            out.threadID = threadID
        } else {
            out.threadID = try definition?.thread?.render(values, field: "thread")
        }
        out.androidChannelID = androidChannelID ?? definition?.androidChannelID
        out.sound = sound ?? definition?.sound
        return out
    }

    /// Checks a call once, before anything is stored, so a bad call fails with 400 and changes
    /// nothing: every language of the texts that will be used (the call's, else the kind's) renders
    /// with these arguments, and so do the kind's collapse key, tag and thread unless the call
    /// gives its own.
    ///
    /// - Throws: `CatalogError.missingArgument` for the first text that needs an absent argument.
    public func validate(kind: String, title: LocalizedText?, body: LocalizedText?,
                         arguments: [String: String], data: [String: String],
                         collapseKey: String? = nil, threadID: String? = nil) throws(CatalogError) {
        let definition = catalog.kind(kind)
        // Only a placeholder can miss its value: a text without one (every choke-point call's) is
        // not rendered, and the values are merged only for the first that has one.
        var values: [String: String]?
        func check(_ template: TextTemplate?, _ field: @autoclosure () -> String) throws(CatalogError) {
            guard let template, template.hasPlaceholders else { return }
            if values == nil { values = data.merging(arguments) { _, argument in argument } }
            try template.check(values!, field: field())
        }
        for entry in (title ?? definition?.title)?.entries ?? [] { try check(entry.template, Self.field("title", entry.locale)) }
        for entry in (body ?? definition?.body)?.entries ?? [] { try check(entry.template, Self.field("body", entry.locale)) }
        if collapseKey == nil {
            try check(definition?.collapse, "collapse")
            try check(definition?.tag, "tag")
        }
        if threadID == nil {
            try check(definition?.thread, "thread")
        }
    }

    /// The longest collapse key every provider takes: APNs's `apns-collapse-id`, 64 bytes of UTF-8.
    /// A call's own `collapse_key` is held to it at intake.
    public static let maximumCollapseKeyBytes = 64

    /// Whether `key` can be sent as APNs's `apns-collapse-id` header (and FCM's in its `apns`
    /// block): not empty (APNs refuses an empty one), and as an HTTP field value no control
    /// characters (NUL, CR, LF…: RFC 9110 §5.5) and no space or tab at either end (RFC 9113
    /// §8.2.1), which the HTTP/2 client refuses to send. A call's own `collapse_key` is held to it
    /// at intake (400).
    public static func isSendableCollapseKey(_ key: String) -> Bool {
        guard let first = key.unicodeScalars.first, let last = key.unicodeScalars.last,
              first != " ", first != "\t", last != " ", last != "\t" else { return false }
        return !key.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    /// A kind's collapse key as its template rendered it (or a call's, 1-64 characters), or, when
    /// the call's data or multi-byte characters made it longer
    /// than `maximumCollapseKeyBytes`, its first whole characters, `~` and 16 hex digits of a
    /// 64-bit FNV-1a hash of the whole key. APNs refuses a longer `apns-collapse-id`, which would
    /// dead-letter every push of the notification; the hash (not Swift's `Hasher`, which is seeded
    /// per process) gives one key the same short form on every node and at every send, so pushes
    /// that should replace each other still do, and keys that differ only past the cut do not.
    /// A key that `isSendableCollapseKey` refuses (a control character, or a space or tab at
    /// either end, that the call's args or data put there) takes the same hashed form, its
    /// control characters left out of the prefix: sent as it is, the `apns-collapse-id` header
    /// it becomes fails every APNs push of the notification as a transport error, for the whole
    /// retry budget.
    public static func fitCollapseKey(_ key: String) -> String {
        guard key.utf8.count > maximumCollapseKeyBytes || !isSendableCollapseKey(key) else { return key }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let digits = String(hash, radix: 16)
        let suffix = "~" + String(repeating: "0", count: 16 - digits.count) + digits
        let room = maximumCollapseKeyBytes - suffix.utf8.count
        var prefix = String.UnicodeScalarView()
        var used = 0
        for scalar in key.unicodeScalars where scalar.properties.generalCategory != .control {
            used += scalar.utf8.count
            if used > room { break }
            prefix.append(scalar)
        }
        return String(prefix) + suffix
    }

    /// FCM `android.priority` for a notification priority (NO-7): `high` for high and urgent, else `normal`.
    public static func androidPriority(_ priority: String?) -> String {
        priority == "high" || priority == "urgent" ? "high" : "normal"
    }

    /// APNs `aps.interruption-level` for a notification priority (NO-7): `time-sensitive` for urgent,
    /// else nil (the system's default, `active`).
    public static func interruptionLevel(_ priority: String?) -> String? {
        priority == "urgent" ? "time-sensitive" : nil
    }

    private func choose(call: LocalizedText?, kind: LocalizedText?,
                        _ choosing: (LocalizedText, String) -> (locale: String?, template: TextTemplate)?) -> (locale: String?, template: TextTemplate)? {
        if let call {
            return choosing(call, catalog.defaultLocale) ?? call.first
        }
        return kind.flatMap { choosing($0, catalog.defaultLocale) }
    }

    private static func field(_ name: String, _ locale: String?) -> String {
        locale.map { "\(name).\($0)" } ?? name
    }
}
