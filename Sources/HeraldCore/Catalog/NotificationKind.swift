/// One kind of notification an app sends (`orders.paid`, `FREIGHT_TRANSIT_STOP`), as its catalog
/// describes it: who may receive it, whether it is on by default, and how its pushes read and group
/// (NO-4, NO-5, NO-6, NO-7).
public struct NotificationKind: Sendable {
    /// 1–64 of `A-Z a-z 0-9 _ . : -`.
    public let name: String
    /// The category's name (`orders`); nil for kinds outside any category, such as `test`.
    public let category: String?
    /// The Android channel of the kind's category (NO-7); nil without a category.
    public let androidChannelID: String?
    /// Whether a member who never saved preferences gets it (NO-4). Default true.
    public let defaultEnabled: Bool
    /// The scope permission a member needs to receive it (`orders.read`, NO-6); nil for everyone.
    public let requires: String?
    /// Who it is meant for (`everyone`, `staff`); kinds whose audience the app excludes are never
    /// pushed (NO-2). Default `everyone`.
    public let audience: String
    /// The kind's default priority, `normal`, `high` or `urgent`; nil leaves it to the call.
    public let priority: String?
    /// The push sound: the kind's, else its category's; nil for a silent push.
    public let sound: String?
    /// Whether it is listed in push preferences (`available_events`, NO-4). False for kinds that
    /// preferences do not govern, such as `test`. Default true.
    public let inPreferences: Bool
    /// The collapse key (`apns-collapse-id`, FCM `collapse_key`), e.g. `conv-{conversation_id}`.
    public let collapse: TextTemplate?
    /// The Android notification tag; the collapse key when absent.
    public let tag: TextTemplate?
    /// The iOS `thread-id`, e.g. `store-{store_id}`.
    public let thread: TextTemplate?
    /// The iOS subtitle, e.g. `{store_name}`; left out of a push whose arguments lack a placeholder.
    public let subtitle: TextTemplate?
    /// The title and body by language (NO-5).
    public let title: LocalizedText?
    public let body: LocalizedText?

    /// Every field as the catalog parser checked it.
    public init(name: String, category: String?, androidChannelID: String?, defaultEnabled: Bool, requires: String?, audience: String, priority: String?, sound: String?, inPreferences: Bool, collapse: TextTemplate?, tag: TextTemplate?, thread: TextTemplate?, subtitle: TextTemplate?, title: LocalizedText?, body: LocalizedText?) {
        self.name = name
        self.category = category
        self.androidChannelID = androidChannelID
        self.defaultEnabled = defaultEnabled
        self.requires = requires
        self.audience = audience
        self.priority = priority
        self.sound = sound
        self.inPreferences = inPreferences
        self.collapse = collapse
        self.tag = tag
        self.thread = thread
        self.subtitle = subtitle
        self.title = title
        self.body = body
    }
}

/// A group of kinds that share an Android notification channel, which users can mute on its own
/// (seed 001: orders, conversations, inventory; seed 002: five channels, one of them quiet).
public struct NotificationCategory: Sendable {
    /// The category's key in the catalog.
    public let name: String
    /// The channel the app creates on Android. Defaults to the category's name.
    public let androidChannelID: String
    /// The channel's importance as the app creates it: `min`, `low`, `default`, `high` or `max`.
    public let importance: String
    /// The default sound of its kinds; nil for a silent channel.
    public let sound: String?
    /// The channel's name as shown in Android's settings, for apps that create channels from the catalog.
    public let displayName: LocalizedText?

    /// Channel importances Android knows (`NotificationManager.IMPORTANCE_*`).
    public static let importances: Set<String> = ["min", "low", "default", "high", "max"]

    /// Every field as the catalog parser checked it.
    public init(name: String, androidChannelID: String, importance: String, sound: String?, displayName: LocalizedText?) {
        self.name = name
        self.androidChannelID = androidChannelID
        self.importance = importance
        self.sound = sound
        self.displayName = displayName
    }
}
