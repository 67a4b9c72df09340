import HeraldCore

/// `AppRepository` over `AppStore`.
struct SQLiteAppRepository: AppRepository {
    let connection: SQLiteConnection

    func create(_ app: AppRecord) throws(StorageError) {
        try mapped { () throws(SQLiteError) in try AppStore.create(connection, app) }
    }

    func update(_ app: AppRecord) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try AppStore.update(connection, app) }
    }

    func find(_ id: AppID) throws(StorageError) -> AppRecord? {
        try mapped { () throws(SQLiteError) in try AppStore.find(connection, id) }
    }

    func list() throws(StorageError) -> [AppRecord] {
        try mapped { () throws(SQLiteError) in try AppStore.list(connection) }
    }

    func delete(_ id: AppID) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try AppStore.delete(connection, id) }
    }
}
