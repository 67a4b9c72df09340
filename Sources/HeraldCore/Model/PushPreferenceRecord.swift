/// A user's push switch for one scope, or their global switch (NO-4, seed 002). It applies to
/// every device of the user.
public struct PushPreferenceRecord: Sendable, Equatable {
    public var app: String
    public var userID: String
    /// The scope (e.g. a store); nil is the user's global switch, stored as scope `''`.
    public var scope: String?
    public var isEnabled: Bool
    /// The kinds the user wants pushed; nil means the app catalog's defaults.
    public var enabledEvents: [String]?
    /// Unix ms.
    public var updatedAt: Int64

    public init(app: String = "default", userID: String, scope: String? = nil, isEnabled: Bool, enabledEvents: [String]? = nil,
                updatedAt: Int64) {
        self.app = app
        self.userID = userID
        self.scope = scope
        self.isEnabled = isEnabled
        self.enabledEvents = enabledEvents
        self.updatedAt = updatedAt
    }
}
