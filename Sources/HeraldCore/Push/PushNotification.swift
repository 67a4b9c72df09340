/// One push to one device, independent of the provider: what the notification planner decides,
/// what a `push.deliver` job stores (`DeliveryJobPayload`), and what each `PushProvider` turns
/// into its wire request (SPEC PU-3, PU-4, NO-1, NO-7; seed 001 shapes, seed 003 wake-ups, seed 004 root key).
///
/// `Codable` as the job payload's `notification` object, with the keys jobs have always been
/// stored with (snake_case, absent fields omitted): jobs queued by an older build still decode.
public struct PushNotification: Sendable, Equatable {
    /// A visible alert, or a silent wake-up that carries ids only (seed 003) and makes the app refetch.
    /// Stored as `"alert"` / `"wakeup"`.
    public enum Kind: String, Sendable, Equatable {
        /// APNs `alert` push / FCM `notification` message.
        case alert
        /// APNs `background` push with `content-available: 1`, priority 5 / FCM data-only, high priority.
        case wakeup
    }

    /// SPEC NO-1 `priority`. `high` and `urgent` map to Android `high`; only `urgent` adds iOS
    /// `interruption-level: time-sensitive` (issue 6's reading of NO-7: seed 001's high-priority
    /// order alerts carry no level, seed 002 reserves time-sensitive for urgent); `normal` maps to
    /// Android `normal` and no interruption level.
    /// APNs `apns-priority` does not follow it: alerts are always 10, wake-ups 5 (PU-1).
    /// Stored as `"normal"`, `"high"`, `"urgent"`.
    public enum Priority: String, Sendable, Equatable {
        case normal, high, urgent
    }

    /// The fields, in one shared box: a notification goes to every device of its recipients, and
    /// each job's payload, hand-over and provider request held a copy; as a plain struct each copy
    /// retained and released its dozen strings and each cache check compared them all (issue 17:
    /// ~4k instructions a push). Copy on write: a change to a shared box copies it first.
    private var fields: Fields

    /// The stored fields. Mutated only through `unique()`, i.e. while one notification owns it.
    private final class Fields: CopyOnWriteFields, @unchecked Sendable {
        var kind: Kind
        var title: String?
        var subtitle: String?
        var body: String?
        var sound: String?
        var badge: Int?
        var threadID: String?
        var collapseKey: String?
        var data: [String: String]
        var priority: Priority
        var ttlSeconds: Int?
        var expiresAt: Int?
        var expiresAtMilliseconds: Int?
        var androidChannelID: String?
        var tag: String?
        var notificationCount: Int?
        var interruptionLevel: InterruptionLevel?
        var rootKey: String?
        var notificationID: String?
        /// The stored text of these fields, made by `prepareStoredText()` before the box was
        /// shared; cleared by every change (`unique()`), never copied, never compared.
        var storedText: String?

        init(kind: Kind, title: String?, subtitle: String?, body: String?, sound: String?, badge: Int?, threadID: String?,
             collapseKey: String?, data: [String: String], priority: Priority, ttlSeconds: Int?, expiresAt: Int?,
             expiresAtMilliseconds: Int?, androidChannelID: String?, tag: String?, notificationCount: Int?,
             interruptionLevel: InterruptionLevel?, rootKey: String?, notificationID: String?) {
            self.kind = kind
            self.title = title
            self.subtitle = subtitle
            self.body = body
            self.sound = sound
            self.badge = badge
            self.threadID = threadID
            self.collapseKey = collapseKey
            self.data = data
            self.priority = priority
            self.ttlSeconds = ttlSeconds
            self.expiresAt = expiresAt
            self.expiresAtMilliseconds = expiresAtMilliseconds
            self.androidChannelID = androidChannelID
            self.tag = tag
            self.notificationCount = notificationCount
            self.interruptionLevel = interruptionLevel
            self.rootKey = rootKey
            self.notificationID = notificationID
        }

        func copy() -> Fields {
            Fields(kind: kind, title: title, subtitle: subtitle, body: body, sound: sound, badge: badge, threadID: threadID,
                   collapseKey: collapseKey, data: data, priority: priority, ttlSeconds: ttlSeconds, expiresAt: expiresAt,
                   expiresAtMilliseconds: expiresAtMilliseconds, androidChannelID: androidChannelID, tag: tag,
                   notificationCount: notificationCount, interruptionLevel: interruptionLevel, rootKey: rootKey,
                   notificationID: notificationID)
        }

        func equals(_ other: Fields) -> Bool {
            kind == other.kind
                && title == other.title
                && subtitle == other.subtitle
                && body == other.body
                && sound == other.sound
                && badge == other.badge
                && threadID == other.threadID
                && collapseKey == other.collapseKey
                && data == other.data
                && priority == other.priority
                && ttlSeconds == other.ttlSeconds
                && expiresAt == other.expiresAt
                && expiresAtMilliseconds == other.expiresAtMilliseconds
                && androidChannelID == other.androidChannelID
                && tag == other.tag
                && notificationCount == other.notificationCount
                && interruptionLevel == other.interruptionLevel
                && rootKey == other.rootKey
                && notificationID == other.notificationID
        }
    }

    /// The box, copied first when another notification shares it; a change to it ends the
    /// stored text it kept.
    private mutating func unique() -> Fields {
        let box = uniqueFields(&fields)
        box.storedText = nil
        return box
    }

    /// The stored text `prepareStoredText()` made, while nothing changed since; nil otherwise.
    var preparedStoredText: String? { fields.storedText }

    /// Makes the stored text now (`PayloadTextCache.text(of:)`'s: `handWrittenText()`, else
    /// `JSONEncoder`'s) and keeps it in the box, so the jobs that store this notification take
    /// it instead of writing it again: a call's pushes are made before its planning unit, off
    /// the serial writer (issue 17). Call it before the notification is shared.
    mutating func prepareStoredText() {
        let text = handWrittenText() ?? PayloadTextCache.encoderText(self)
        unique().storedText = text
    }

    /// Field by field, at once when both share one box.
    public static func == (lhs: PushNotification, rhs: PushNotification) -> Bool { sameFields(lhs.fields, rhs.fields) }

    /// Alert or wake-up (`kind`).
    public var kind: Kind {
        get { fields.kind }
        set { unique().kind = newValue }
    }
    /// Alert title (`aps.alert.title`, FCM `notification.title`).
    public var title: String? {
        get { fields.title }
        set { unique().title = newValue }
    }
    /// Alert subtitle (`aps.alert.subtitle`; FCM has none — dropped there). Seed 001: the store name.
    public var subtitle: String? {
        get { fields.subtitle }
        set { unique().subtitle = newValue }
    }
    /// Alert body.
    public var body: String? {
        get { fields.body }
        set { unique().body = newValue }
    }
    /// Sound name, e.g. `default` (`aps.sound`, `android.notification.sound`).
    public var sound: String? {
        get { fields.sound }
        set { unique().sound = newValue }
    }
    /// App icon badge (`aps.badge`; also Android `notification_count` unless `notificationCount` is set).
    public var badge: Int? {
        get { fields.badge }
        set { unique().badge = newValue }
    }
    /// `aps.thread-id`, e.g. `conv-<id>` / `store-<id>` (seed 001).
    public var threadID: String? {
        get { fields.threadID }
        set { unique().threadID = newValue }
    }
    /// The caller's collapse key: `apns-collapse-id`, FCM `android.collapse_key`, Web Push `Topic`
    /// (and the display tag unless `tag` is set). Without one, `notificationID` stands in for all
    /// but `android.collapse_key` (ADR 0020).
    public var collapseKey: String? {
        get { fields.collapseKey }
        set { unique().collapseKey = newValue }
    }
    /// Flat string data: top-level APNs keys / FCM `data` — or, with `rootKey`, one object under it.
    public var data: [String: String] {
        get { fields.data }
        // In place: `notification.data[key] = value` must not copy the dictionary first.
        _modify {
            let box = unique()
            yield &box.data
        }
    }
    /// SPEC NO-1 priority (`priority`); see `Priority` for how each provider maps it.
    public var priority: Priority {
        get { fields.priority }
        set { unique().priority = newValue }
    }
    /// Seconds the provider keeps trying; default 3600 (seed 001: "expire after an hour"). 0 = now or never.
    public var ttlSeconds: Int? {
        get { fields.ttlSeconds }
        set { unique().ttlSeconds = newValue }
    }
    /// Absolute expiry (UNIX seconds); wins over `ttlSeconds`.
    public var expiresAt: Int? {
        get { fields.expiresAt }
        set { unique().expiresAt = newValue }
    }
    /// The same expiry in UNIX milliseconds, as the caller gave it: `expiresAt` is it rounded up to
    /// a whole second for the providers' headers, which would let a job run up to 999 ms after the
    /// notification expired; the worker's "never sent once expired" check (SPEC NO-2) reads this.
    /// nil in jobs stored before it existed (the check falls back to `expiresAt`).
    public var expiresAtMilliseconds: Int? {
        get { fields.expiresAtMilliseconds }
        set { unique().expiresAtMilliseconds = newValue }
    }
    /// `android.notification.channel_id`, e.g. `orders`.
    public var androidChannelID: String? {
        get { fields.androidChannelID }
        set { unique().androidChannelID = newValue }
    }
    /// `android.notification.tag`; default `collapseKey`, then `notificationID` (`effectiveTag`).
    public var tag: String? {
        get { fields.tag }
        set { unique().tag = newValue }
    }
    /// `android.notification.notification_count`; default `badge`.
    public var notificationCount: Int? {
        get { fields.notificationCount }
        set { unique().notificationCount = newValue }
    }
    /// Overrides the interruption level derived from `priority`.
    public var interruptionLevel: InterruptionLevel? {
        get { fields.interruptionLevel }
        set { unique().interruptionLevel = newValue }
    }
    /// Seed 004: put `data` under this key — iOS a top-level object next to `aps`, Android one JSON
    /// string in `data[rootKey]`. `nil`: data keys at the top level (seed 001).
    public var rootKey: String? {
        get { fields.rootKey }
        set { unique().rootKey = newValue }
    }

    /// The id of the notification this push shows, the same for every device, attempt and resend
    /// of it: an inbox notification's id (`ntf_…`), or the id drawn for a `POST /v1/push` call
    /// (`push_…`). When the caller gave no collapse key or tag, the providers send it as the key
    /// that makes a repeat replace the push shown instead of adding another (`effectiveCollapseID`,
    /// `effectiveTag`; ADR 0020), so a push resent after a crash shows once. nil: none (jobs stored
    /// before it existed, the device test push).
    public var notificationID: String? {
        get { fields.notificationID }
        set { unique().notificationID = newValue }
    }

    /// What replaces an earlier push on the device: the caller's collapse key, else the
    /// notification's id (ADR 0020). APNs `apns-collapse-id`, FCM's `apns` block, Web Push `Topic`.
    public var effectiveCollapseID: String? { collapseKey ?? notificationID }

    /// The display tag: the caller's tag, else its collapse key, else the notification's id (ADR
    /// 0020). FCM `android.notification.tag`, Expo `tag`, the Web Push JSON's `tag`.
    public var effectiveTag: String? { tag ?? collapseKey ?? notificationID }

    /// Seconds a notification lives when neither `ttlSeconds` nor `expiresAt` is given.
    public static let defaultTTLSeconds = 3600

    public init(kind: Kind = .alert, title: String? = nil, subtitle: String? = nil, body: String? = nil,
                sound: String? = nil, badge: Int? = nil, threadID: String? = nil, collapseKey: String? = nil,
                data: [String: String] = [:], priority: Priority = .normal, ttlSeconds: Int? = nil,
                expiresAt: Int? = nil, androidChannelID: String? = nil, tag: String? = nil,
                notificationCount: Int? = nil, interruptionLevel: InterruptionLevel? = nil, rootKey: String? = nil,
                expiresAtMilliseconds: Int? = nil, notificationID: String? = nil) {
        fields = Fields(kind: kind, title: title, subtitle: subtitle, body: body, sound: sound, badge: badge, threadID: threadID,
                        collapseKey: collapseKey, data: data, priority: priority, ttlSeconds: ttlSeconds, expiresAt: expiresAt,
                        expiresAtMilliseconds: expiresAtMilliseconds, androidChannelID: androidChannelID, tag: tag,
                        notificationCount: notificationCount, interruptionLevel: interruptionLevel, rootKey: rootKey,
                        notificationID: notificationID)
    }

    /// A wake-up push carrying only `data` (ids), as seed 003 describes.
    public static func wakeup(data: [String: String], collapseKey: String? = nil, ttlSeconds: Int? = nil, rootKey: String? = nil,
                              notificationID: String? = nil) -> PushNotification {
        PushNotification(kind: .wakeup, collapseKey: collapseKey, data: data, priority: .high, ttlSeconds: ttlSeconds, rootKey: rootKey,
                         notificationID: notificationID)
    }

    /// Whether the notification has expired at `now` (UNIX ms), to the millisecond when the job
    /// carries `expiresAtMilliseconds` (SPEC NO-2).
    public func hasExpired(atMilliseconds now: Int64) -> Bool {
        if let ms = expiresAtMilliseconds { return Int64(ms) <= now }
        if let expiresAt { return Int64(expiresAt) * 1000 <= now }
        return false
    }

    /// Seconds left to live at `now` (the providers' TTL and expiry headers).
    ///
    /// - Parameter now: UNIX seconds.
    /// - Throws: `.expired` when `expiresAt` is not after `now`; `.invalidTTL` for a negative TTL.
    public func remainingTTL(now: Int) throws(PushPayloadError) -> Int {
        if let expiresAt {
            guard expiresAt > now else { throw .expired }
            return expiresAt - now
        }
        let ttl = ttlSeconds ?? Self.defaultTTLSeconds
        guard ttl >= 0 else { throw .invalidTTL(ttl) }
        return ttl
    }

    /// Seconds left to live at `now` (UNIX ms), for the providers' TTL and expiry headers.
    ///
    /// With `expiresAtMilliseconds` the time left is rounded **down** to the second, so a provider
    /// is never told to keep the push past the caller's expiry (SPEC NO-2): under one second left
    /// is 0, "now or never" (FCM `ttl: "0s"`, APNs `apns-expiration: 0`, Web Push `TTL: 0`, Expo
    /// `ttl: 0`). Without it (jobs stored before the field existed) this is
    /// `remainingTTL(now:)` at the whole second.
    ///
    /// - Throws: `.expired` when the expiry is not after `now`; `.invalidTTL` for a negative TTL.
    public func remainingTTL(nowMilliseconds now: Int64) throws(PushPayloadError) -> Int {
        guard let ms = expiresAtMilliseconds else {
            return try remainingTTL(now: Int(now.floorDivided(by: 1000)))
        }
        guard !hasExpired(atMilliseconds: now) else { throw .expired }
        return Int((Int64(ms) - now) / 1000)
    }

    /// The interruption level to send: the override, else `time-sensitive` for urgent, else none
    /// (seed 001's high-priority order alerts carry none; seed 002 keeps time-sensitive for urgent).
    public var effectiveInterruptionLevel: InterruptionLevel? {
        if let interruptionLevel { return interruptionLevel }
        return priority == .urgent ? .timeSensitive : nil
    }
}

extension PushNotification: Codable {
    enum CodingKeys: String, CodingKey {
        case kind, title, subtitle, body, sound, badge, data, priority, tag
        case threadID = "thread_id", collapseKey = "collapse_key", ttlSeconds = "ttl_seconds", expiresAt = "expires_at"
        case expiresAtMilliseconds = "expires_at_ms"
        case androidChannelID = "android_channel_id", notificationCount = "notification_count", rootKey = "root_key"
        case interruptionLevel = "interruption_level", notificationID = "notification_id"
    }

    /// Reads the stored form. `kind`, `priority` and `data` are required, as they always were; an
    /// unknown kind reads as `alert` and an unknown priority as `normal` (older builds' tolerance).
    ///
    /// - Throws: `DecodingError` for a missing required key or a value of the wrong type.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        kind = Kind(rawValue: try c.decode(String.self, forKey: .kind)) ?? .alert
        title = try c.decodeIfPresent(String.self, forKey: .title)
        subtitle = try c.decodeIfPresent(String.self, forKey: .subtitle)
        body = try c.decodeIfPresent(String.self, forKey: .body)
        sound = try c.decodeIfPresent(String.self, forKey: .sound)
        badge = try c.decodeIfPresent(Int.self, forKey: .badge)
        threadID = try c.decodeIfPresent(String.self, forKey: .threadID)
        collapseKey = try c.decodeIfPresent(String.self, forKey: .collapseKey)
        data = try c.decode([String: String].self, forKey: .data)
        priority = Priority(rawValue: try c.decode(String.self, forKey: .priority)) ?? .normal
        ttlSeconds = try c.decodeIfPresent(Int.self, forKey: .ttlSeconds)
        expiresAt = try c.decodeIfPresent(Int.self, forKey: .expiresAt)
        expiresAtMilliseconds = try c.decodeIfPresent(Int.self, forKey: .expiresAtMilliseconds)
        androidChannelID = try c.decodeIfPresent(String.self, forKey: .androidChannelID)
        tag = try c.decodeIfPresent(String.self, forKey: .tag)
        notificationCount = try c.decodeIfPresent(Int.self, forKey: .notificationCount)
        interruptionLevel = try c.decodeIfPresent(String.self, forKey: .interruptionLevel).map(InterruptionLevel.init(rawValue:))
        rootKey = try c.decodeIfPresent(String.self, forKey: .rootKey)
        notificationID = try c.decodeIfPresent(String.self, forKey: .notificationID)
    }

    /// Writes the stored form: absent optionals are left out, so a notification without an
    /// interruption level is stored exactly as before `interruption_level` existed.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(kind.rawValue, forKey: .kind)
        try c.encodeIfPresent(title, forKey: .title)
        try c.encodeIfPresent(subtitle, forKey: .subtitle)
        try c.encodeIfPresent(body, forKey: .body)
        try c.encodeIfPresent(sound, forKey: .sound)
        try c.encodeIfPresent(badge, forKey: .badge)
        try c.encodeIfPresent(threadID, forKey: .threadID)
        try c.encodeIfPresent(collapseKey, forKey: .collapseKey)
        try c.encode(data, forKey: .data)
        try c.encode(priority.rawValue, forKey: .priority)
        try c.encodeIfPresent(ttlSeconds, forKey: .ttlSeconds)
        try c.encodeIfPresent(expiresAt, forKey: .expiresAt)
        try c.encodeIfPresent(expiresAtMilliseconds, forKey: .expiresAtMilliseconds)
        try c.encodeIfPresent(androidChannelID, forKey: .androidChannelID)
        try c.encodeIfPresent(tag, forKey: .tag)
        try c.encodeIfPresent(notificationCount, forKey: .notificationCount)
        try c.encodeIfPresent(interruptionLevel?.rawValue, forKey: .interruptionLevel)
        try c.encodeIfPresent(rootKey, forKey: .rootKey)
        try c.encodeIfPresent(notificationID, forKey: .notificationID)
    }
}

extension Int64 {
    /// Division rounding toward negative infinity (UNIX ms before 1970 stay in their second).
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let (q, r) = quotientAndRemainder(dividingBy: divisor)
        return r < 0 ? q - 1 : q
    }
}
