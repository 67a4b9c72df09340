/// A user's membership of a scope with their permissions, as the app backend synced it (NO-6).
public struct ScopeMember: Sendable, Equatable {
    public var app: String
    public var scope: String
    public var userID: String
    /// Permission names; stored sorted and without duplicates, so a read gives them that way.
    public var permissions: [String]
    /// Unix ms.
    public var updatedAt: Int64

    public init(app: String = "default", scope: String, userID: String, permissions: [String], updatedAt: Int64) {
        self.app = app
        self.scope = scope
        self.userID = userID
        self.permissions = permissions
        self.updatedAt = updatedAt
    }
}
