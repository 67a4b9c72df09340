import HeraldCore

/// `DeviceRepository` over `DeviceStore`.
struct SQLiteDeviceRepository: DeviceRepository {
    let connection: SQLiteConnection

    func register(_ registration: DeviceRegistration, sessionExpiresAt: Int64?, newID: String,
                  now: Int64) throws -> (device: DeviceRecord, created: Bool) {
        do {
            return try DeviceStore.register(connection, registration, sessionExpiresAt: sessionExpiresAt, newID: newID, now: now)
        } catch {
            throw StorageError.mapped(error)
        }
    }

    func find(id: String, now: Int64) throws(StorageError) -> DeviceRecord? {
        try mapped { () throws(SQLiteError) in try DeviceStore.find(connection, id: id, now: now) }
    }

    func find(ids: [String], now: Int64) throws(StorageError) -> [DeviceRecord] {
        try mapped { () throws(SQLiteError) in try DeviceStore.find(connection, ids: ids, now: now) }
    }

    func list(app: String, userID: String, now: Int64) throws(StorageError) -> [DeviceRecord] {
        try mapped { () throws(SQLiteError) in try DeviceStore.list(connection, userID: userID, app: app, now: now) }
    }

    func list(app: String, userIDs: [String], now: Int64) throws(StorageError) -> [DeviceRecord] {
        try mapped { () throws(SQLiteError) in try DeviceStore.list(connection, userIDs: userIDs, app: app, now: now) }
    }

    func planningReads(app: String, userIDs: [String], scope: String?, now: Int64) throws(StorageError) -> PlanningReads? {
        try mapped { () throws(SQLiteError) in try DeviceStore.planningReads(connection, userIDs: userIDs, app: app, scope: scope, now: now) }
    }

    // Each delete counts in the storage's PushAudienceChange, inside the writer's unit (ADR 0007's amendment).

    func delete(app: String, id: String, userID: String) throws(StorageError) -> Bool {
        defer { connection.pushAudience?.count() }
        return try mapped { () throws(SQLiteError) in try DeviceStore.delete(connection, app: app, id: id, userID: userID) }
    }

    func delete(app: String, token: String, userID: String) throws(StorageError) -> Int {
        defer { connection.pushAudience?.count() }
        return try mapped { () throws(SQLiteError) in try DeviceStore.delete(connection, app: app, token: token, userID: userID) }
    }

    func deleteInvalid(id: String, invalidSince: Int64?) throws(StorageError) -> Bool {
        defer { connection.pushAudience?.count() }
        return try mapped { () throws(SQLiteError) in try DeviceStore.deleteInvalid(connection, id: id, invalidSince: invalidSince) }
    }

    func purge(notSeenSince cutoff: Int64) throws(StorageError) -> Int {
        defer { connection.pushAudience?.count() }
        return try mapped { () throws(SQLiteError) in try DeviceStore.purge(connection, notSeenSince: cutoff) }
    }
}
