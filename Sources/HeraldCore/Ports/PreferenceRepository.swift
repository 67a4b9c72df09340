/// Stored push preferences (NO-4); the catalog's defaults for a user who never chose are the
/// caller's. `scope` nil is the user's global switch.
public protocol PreferenceRepository {
    /// The user's stored preference for `scope`, if ever saved.
    func find(app: String, userID: String, scope: String?) throws(StorageError) -> PushPreferenceRecord?

    /// The stored preferences of many users at once, for planning a batch: each user's global
    /// switch and their preference for each of `scopes`, when saved.
    func list(app: String, userIDs: [String], scopes: [String]) throws(StorageError) -> [PushPreferenceRecord]

    /// Stores the preference, replacing the one for the same (app, user, scope).
    func save(_ record: PushPreferenceRecord) throws(StorageError)
}

extension PreferenceRepository {
    /// `find(app:…)` for the default app.
    public func find(userID: String, scope: String?) throws(StorageError) -> PushPreferenceRecord? {
        try find(app: "default", userID: userID, scope: scope)
    }

    /// `list(app:…)` for the default app.
    public func list(userIDs: [String], scopes: [String]) throws(StorageError) -> [PushPreferenceRecord] {
        try list(app: "default", userIDs: userIDs, scopes: scopes)
    }
}
