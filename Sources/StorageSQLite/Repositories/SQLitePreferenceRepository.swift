import HeraldCore

/// `PreferenceRepository` over `PreferenceStore`.
struct SQLitePreferenceRepository: PreferenceRepository {
    let connection: SQLiteConnection

    func find(app: String, userID: String, scope: String?) throws(StorageError) -> PushPreferenceRecord? {
        try mapped { () throws(SQLiteError) in try PreferenceStore.find(connection, app: app, userID: userID, scope: scope) }
    }

    func list(app: String, userIDs: [String], scopes: [String]) throws(StorageError) -> [PushPreferenceRecord] {
        try mapped { () throws(SQLiteError) in try PreferenceStore.list(connection, app: app, userIDs: userIDs, scopes: scopes) }
    }

    func switchedOff(app: String, userIDs: [String]) throws(StorageError) -> Set<String> {
        try mapped { () throws(SQLiteError) in try PreferenceStore.switchedOff(connection, app: app, userIDs: userIDs) }
    }

    func save(_ record: PushPreferenceRecord) throws(StorageError) {
        defer { connection.pushAudience?.count() }  // inside the writer's unit (ADR 0007's amendment)
        try mapped { () throws(SQLiteError) in try PreferenceStore.save(connection, record) }
    }
}
