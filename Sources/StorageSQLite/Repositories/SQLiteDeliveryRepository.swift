import HeraldCore

/// `DeliveryRepository` over `DeliveryStore`.
struct SQLiteDeliveryRepository: DeliveryRepository {
    let connection: SQLiteConnection

    func record(_ entry: DeliveryEntry) throws(StorageError) -> Int64 {
        try mapped { () throws(SQLiteError) in try DeliveryStore.record(connection, entry) }
    }

    func list(notificationID: String) throws(StorageError) -> [DeliveryEntry] {
        try mapped { () throws(SQLiteError) in try DeliveryStore.list(connection, notificationID: notificationID) }
    }

    func queued(deliveryID: String) throws(StorageError) -> DeliveryEntry? {
        try mapped { () throws(SQLiteError) in try DeliveryStore.queued(connection, deliveryID: deliveryID) }
    }

    func exists(deliveryID: String, outcome: DeliveryOutcome) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try DeliveryStore.exists(connection, deliveryID: deliveryID, outcome: outcome) }
    }
}
