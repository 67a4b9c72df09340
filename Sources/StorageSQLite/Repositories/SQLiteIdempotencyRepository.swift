import HeraldCore

/// `IdempotencyRepository` over `IdempotencyStore`.
struct SQLiteIdempotencyRepository: IdempotencyRepository {
    let connection: SQLiteConnection

    func find(app: String, key: String, notBefore: Int64) throws(StorageError) -> IdempotencyRecord? {
        try mapped { () throws(SQLiteError) in try IdempotencyStore.find(connection, app: app, key: key, notBefore: notBefore) }
    }

    func reserve(_ record: IdempotencyRecord) throws(StorageError) {
        try mapped { () throws(SQLiteError) in try IdempotencyStore.reserve(connection, record) }
    }

    func complete(app: String, key: String, responseJSON: String) throws(StorageError) {
        try mapped { () throws(SQLiteError) in try IdempotencyStore.complete(connection, app: app, key: key, responseJSON: responseJSON) }
    }

    func purge(createdBefore cutoff: Int64) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try IdempotencyStore.purge(connection, createdBefore: cutoff) }
    }
}
