/// Users' profiles as the app backend sets them (their language: seed 000, NO-5).
public protocol UserRepository {
    /// Stores the profile, replacing the one there was.
    /// - Returns: true when the user had no profile yet.
    @discardableResult
    func put(_ profile: UserProfile) throws(StorageError) -> Bool

    /// One user's profile; nil when the app never set one.
    func find(app: String, userID: String) throws(StorageError) -> UserProfile?

    /// The language of each of `userIDs` that has one (users without a profile or locale are absent).
    func locales(app: String, userIDs: [String]) throws(StorageError) -> [String: String]
}

extension UserRepository {
    /// `find(app:…)` for the default app.
    public func find(userID: String) throws(StorageError) -> UserProfile? {
        try find(app: "default", userID: userID)
    }

    /// `locales(app:…)` for the default app.
    public func locales(userIDs: [String]) throws(StorageError) -> [String: String] {
        try locales(app: "default", userIDs: userIDs)
    }
}
