/// Stored push preferences (NO-4); the catalog's defaults for a user who never chose are the
/// caller's. `scope` nil is the user's global switch.
public protocol PreferenceRepository {
    /// The user's stored preference for `scope`, if ever saved.
    func find(app: String, userID: String, scope: String?) throws(StorageError) -> PushPreferenceRecord?

    /// The stored preferences of many users at once, for planning a batch: each user's global
    /// switch and their preference for each of `scopes`, when saved.
    func list(app: String, userIDs: [String], scopes: [String]) throws(StorageError) -> [PushPreferenceRecord]

    /// Of `userIDs`, the users of `app` whose global switch (scope nil) is stored off: the users
    /// a direct push skips (NO-4). Empty when none is; the order of `userIDs` and repeats in it do
    /// not matter.
    /// The default reads `list(app:userIDs:scopes:)`; a store may answer from an index of
    /// such users alone (SQLite, issue 17).
    func switchedOff(app: String, userIDs: [String]) throws(StorageError) -> Set<String>

    /// Stores the preference, replacing the one for the same (app, user, scope).
    func save(_ record: PushPreferenceRecord) throws(StorageError)
}

extension PreferenceRepository {
    /// `switchedOff(app:userIDs:)` from `list(app:userIDs:scopes:)`: the global switches of
    /// `userIDs`, those stored off.
    public func switchedOff(app: String, userIDs: [String]) throws(StorageError) -> Set<String> {
        var users = Set<String>()
        for record in try list(app: app, userIDs: userIDs, scopes: []) where record.scope == nil && !record.isEnabled {
            users.insert(record.userID)
        }
        return users
    }

    /// `find(app:…)` for the default app.
    public func find(userID: String, scope: String?) throws(StorageError) -> PushPreferenceRecord? {
        try find(app: "default", userID: userID, scope: scope)
    }

    /// `list(app:…)` for the default app.
    public func list(userIDs: [String], scopes: [String]) throws(StorageError) -> [PushPreferenceRecord] {
        try list(app: "default", userIDs: userIDs, scopes: scopes)
    }
}
