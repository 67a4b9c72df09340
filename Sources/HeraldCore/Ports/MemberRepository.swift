/// Scope membership with permissions, synced by the app backend (NO-6).
public protocol MemberRepository {
    /// Stores the member, replacing their permissions. - Returns: true when created.
    @discardableResult
    func put(_ member: ScopeMember) throws(StorageError) -> Bool

    /// Removes a member. - Returns: false when there was no such member.
    func delete(app: String, scope: String, userID: String) throws(StorageError) -> Bool

    /// One member, if known.
    func find(app: String, scope: String, userID: String) throws(StorageError) -> ScopeMember?

    /// One page of a scope's members by user id.
    /// - Parameter after: the previous page's last user id; nil for the first page.
    func list(app: String, scope: String, after: String?, limit: Int) throws(StorageError) -> [ScopeMember]

    /// The scope's members holding `permission` (every member when nil), by user id.
    func holding(app: String, scope: String, permission: String?) throws(StorageError) -> [ScopeMember]
}

extension MemberRepository {
    /// `delete(app:…)` for the default app.
    public func delete(scope: String, userID: String) throws(StorageError) -> Bool {
        try delete(app: "default", scope: scope, userID: userID)
    }

    /// `find(app:…)` for the default app.
    public func find(scope: String, userID: String) throws(StorageError) -> ScopeMember? {
        try find(app: "default", scope: scope, userID: userID)
    }

    /// `list(app:…)` for the default app.
    public func list(scope: String, after: String?, limit: Int) throws(StorageError) -> [ScopeMember] {
        try list(app: "default", scope: scope, after: after, limit: limit)
    }

    /// `holding(app:…)` for the default app.
    public func holding(scope: String, permission: String?) throws(StorageError) -> [ScopeMember] {
        try holding(app: "default", scope: scope, permission: permission)
    }
}
