import Foundation

/// An app's kind catalog (`HERALD_CATALOG_PATH`, NO-4, NO-5, NO-7): for each notification kind its
/// category and Android channel, whether it is on by default, the permission it needs, how its
/// pushes collapse and group, and its title and body per language.
///
/// `examples/catalogs/merchant.json` (seeds 000/001) and `logistics.json` (seed 002) show the format.
/// `parse` checks all of it when the server starts, so a mistake in the file stops the start with
/// its path instead of reaching a phone.
public struct NotificationCatalog: Sendable {
    /// The app the catalog belongs to (`default`, `merchant`, `logistics`).
    public let app: String
    /// The language used when a device's is missing from a text (NO-5), normalised (`pt-BR`).
    public let defaultLocale: String
    /// The push data key that carries the notification's id; nil when pushes carry no id (seed 001
    /// payloads have none). Absent from the file: `notification_id`.
    public let notificationIDKey: String?
    /// The push data key that carries the kind (`kind`, seed 001; `type`, seed 002). Default `kind`.
    public let kindKey: String
    /// What is never pushed (NO-2, AP-6): audiences (any case, seed 002: `staff`/`STAFF`) whether
    /// the kind or the call names them, kinds, and destinations by data-key prefix.
    public let exclusions: ExclusionRules
    /// The excluded audiences, lower-cased (`exclusions.audiences`).
    public var excludedAudiences: Set<String> { exclusions.audiences }
    /// Categories by name.
    public let categories: [String: NotificationCategory]
    /// Kinds by name.
    public let kinds: [String: NotificationKind]

    /// The kind of the test push (`POST /v1/me/devices/{id}/test`, DV-7): seed 000 sends it as
    /// `kind: "test"`. A catalog may describe it like any kind (texts, sound, priority); it is
    /// sent with no arguments, so the catalog parser refuses one whose texts need any.
    public static let testKind = "test"

    /// The priorities a kind or a call may name (NO-1).
    public static let priorities: Set<String> = ["normal", "high", "urgent"]

    /// An empty catalog, for apps that send every text in the call: no kinds, default locale `en`,
    /// notification ids under `notification_id`.
    public static let empty = NotificationCatalog(
        app: "default", defaultLocale: "en", notificationIDKey: "notification_id", kindKey: "kind",
        excludedAudiences: [], categories: [:], kinds: [:])

    /// The kind named `name`, if the catalog has it.
    public func kind(_ name: String) -> NotificationKind? {
        kinds[name]
    }

    /// Whether notifications for `audience` are never pushed in this app (NO-2).
    public func excludes(audience: String?) -> Bool {
        audience.map(exclusions.excludes(audience:)) ?? false
    }

    /// The kinds a member holding `permissions` may choose in push preferences (`available_events`,
    /// NO-4, NO-6): those without `requires` or whose permission they hold, leaving out kinds
    /// preferences do not govern and excluded kinds or kinds of excluded audiences. Sorted by name.
    public func availableKinds(permissions: Set<String>) -> [NotificationKind] {
        kinds.values
            .filter { kind in
                kind.inPreferences && !excludes(audience: kind.audience) && !exclusions.kinds.contains(kind.name)
                    && (kind.requires.map(permissions.contains) ?? true)
            }
            .sorted { $0.name < $1.name }
    }

    /// Every field as the catalog parser checked it, with only audiences excluded.
    public init(app: String, defaultLocale: String, notificationIDKey: String?, kindKey: String, excludedAudiences: Set<String>, categories: [String: NotificationCategory], kinds: [String: NotificationKind]) {
        self.init(app: app, defaultLocale: defaultLocale, notificationIDKey: notificationIDKey, kindKey: kindKey,
                  exclusions: ExclusionRules(audiences: excludedAudiences), categories: categories, kinds: kinds)
    }

    /// Every field as the catalog parser checked it.
    public init(app: String, defaultLocale: String, notificationIDKey: String?, kindKey: String, exclusions: ExclusionRules, categories: [String: NotificationCategory], kinds: [String: NotificationKind]) {
        self.app = app
        self.defaultLocale = defaultLocale
        self.notificationIDKey = notificationIDKey
        self.kindKey = kindKey
        self.exclusions = exclusions
        self.categories = categories
        self.kinds = kinds
    }
}
