import HeraldCore

/// `NotificationRepository` over `NotificationStore`.
struct SQLiteNotificationRepository: NotificationRepository {
    let connection: SQLiteConnection

    func insert(_ record: NotificationRecord) throws(StorageError) -> NotificationRecord {
        try mapped { () throws(SQLiteError) in try NotificationStore.insert(connection, record) }
    }

    func insert(_ record: NotificationRecord, carrying plan: PendingPlan) throws(StorageError) -> NotificationRecord? {
        try mapped { () throws(SQLiteError) in try NotificationStore.insert(connection, record, carrying: plan) }
    }

    func find(id: String) throws(StorageError) -> NotificationRecord? {
        try mapped { () throws(SQLiteError) in try NotificationStore.find(connection, id: id) }
    }

    func setCursor(sequence: Int64, cursor: String) throws(StorageError) {
        try mapped { () throws(SQLiteError) in try NotificationStore.setCursor(connection, sequence: sequence, cursor: cursor) }
    }

    func page(app: String, userID: String, unreadOnly: Bool, before: Int64?, limit: Int) throws(StorageError) -> [NotificationRecord] {
        try mapped { () throws(SQLiteError) in
            try NotificationStore.page(connection, app: app, userID: userID, unreadOnly: unreadOnly, before: before, limit: limit)
        }
    }

    func unreadCount(app: String, userID: String) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try NotificationStore.unreadCount(connection, app: app, userID: userID) }
    }

    func markRead(app: String, userID: String, id: String, now: Int64) throws(StorageError) -> MarkReadResult {
        try mapped { () throws(SQLiteError) in try NotificationStore.markRead(connection, app: app, userID: userID, id: id, now: now) }
    }

    func markAllRead(app: String, userID: String, now: Int64) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try NotificationStore.markAllRead(connection, app: app, userID: userID, now: now) }
    }

    func purge(createdBefore cutoff: Int64, limit: Int) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try NotificationStore.purge(connection, createdBefore: cutoff, limit: limit) }
    }

    func isPlanned(_ record: NotificationRecord) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try NotificationStore.isPlanned(connection, record) }
    }
}

/// `PlanRepository` over `NotificationStore`'s plan SQL.
struct SQLitePlanRepository: PlanRepository {
    let connection: SQLiteConnection

    func insert(_ plan: PendingPlan) throws(StorageError) -> Int64 {
        try mapped { () throws(SQLiteError) in try NotificationStore.insertPlan(connection, plan) }
    }

    func markPlanned(id: Int64, by node: String) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try NotificationStore.markPlanned(connection, id: id, by: node) }
    }

    func markPlanned(row sequence: Int64, cursor: String?, by node: String) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try NotificationStore.markPlanned(connection, row: sequence, cursor: cursor, by: node) }
    }

    func release(rows sequences: [Int64], by node: String) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try NotificationStore.releaseRowPlans(connection, sequences: sequences, by: node) }
    }

    func delete(id: Int64) throws(StorageError) {
        try mapped { () throws(SQLiteError) in try NotificationStore.deletePlan(connection, id: id) }
    }

    func claim(by node: String, after: Int64, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(StorageError) -> [PendingPlan] {
        try mapped { () throws(SQLiteError) in
            try NotificationStore.claimPlans(connection, by: node, after: after, limit: limit, leaseMilliseconds: leaseMilliseconds, now: now)
        }
    }

    func renew(ids: [Int64], by node: String, until: Int64) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try NotificationStore.renewPlans(connection, ids: ids, by: node, until: until) }
    }

    func release(ids: [Int64], by node: String) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try NotificationStore.releasePlans(connection, ids: ids, by: node) }
    }

    func releaseLeases(heldByOtherThan node: String) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try NotificationStore.releasePlanLeases(connection, heldByOtherThan: node) }
    }

    func list(after: Int64, limit: Int) throws(StorageError) -> [PendingPlan] {
        try mapped { () throws(SQLiteError) in try NotificationStore.pendingPlans(connection, after: after, limit: limit) }
    }

    func notifications(ofPlan id: Int64) throws(StorageError) -> [NotificationRecord] {
        try mapped { () throws(SQLiteError) in try NotificationStore.notifications(connection, ofPlan: id) }
    }

    func adoptLegacyPlans(now: Int64) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try NotificationStore.adoptLegacyPlans(connection, now: now) }
    }
}
