import HeraldCore

/// `UserRepository` over `UserStore`.
struct SQLiteUserRepository: UserRepository {
    let connection: SQLiteConnection

    func put(_ profile: UserProfile) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try UserStore.put(connection, profile) }
    }

    func find(app: String, userID: String) throws(StorageError) -> UserProfile? {
        try mapped { () throws(SQLiteError) in try UserStore.find(connection, app: app, userID: userID) }
    }

    func locales(app: String, userIDs: [String]) throws(StorageError) -> [String: String] {
        try mapped { () throws(SQLiteError) in try UserStore.locales(connection, app: app, userIDs: userIDs) }
    }
}
