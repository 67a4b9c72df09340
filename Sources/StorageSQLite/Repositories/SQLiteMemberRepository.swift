import HeraldCore

/// `MemberRepository` over `MemberStore`.
struct SQLiteMemberRepository: MemberRepository {
    let connection: SQLiteConnection

    func put(_ member: ScopeMember) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try MemberStore.put(connection, member) }
    }

    func delete(app: String, scope: String, userID: String) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try MemberStore.delete(connection, app: app, scope: scope, userID: userID) }
    }

    func find(app: String, scope: String, userID: String) throws(StorageError) -> ScopeMember? {
        try mapped { () throws(SQLiteError) in try MemberStore.find(connection, app: app, scope: scope, userID: userID) }
    }

    func list(app: String, scope: String, after: String?, limit: Int) throws(StorageError) -> [ScopeMember] {
        try mapped { () throws(SQLiteError) in try MemberStore.list(connection, app: app, scope: scope, after: after, limit: limit) }
    }

    func holding(app: String, scope: String, permission: String?) throws(StorageError) -> [ScopeMember] {
        try mapped { () throws(SQLiteError) in try MemberStore.holding(connection, app: app, scope: scope, permission: permission) }
    }
}
