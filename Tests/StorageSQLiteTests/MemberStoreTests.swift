import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct MemberStoreTests {
    private func makeMember(_ user: String, _ permissions: [String], scope: String = "store-1", at: Int64 = 1_000) -> ScopeMember {
        ScopeMember(scope: scope, userID: user, permissions: permissions, updatedAt: at)
    }

    @Test func putCreatesThenUpdatesAndStoresPermissionsSortedOnce() throws {
        try withMigratedDatabase { db in
            let created = try MemberStore.put(db, makeMember("u1", ["orders.read", "chat", "orders.read"]))
            #expect(created)
            #expect(try MemberStore.find(db, scope: "store-1", userID: "u1")?.permissions == ["chat", "orders.read"])
            #expect(!(try MemberStore.put(db, makeMember("u1", ["stock"], at: 2_000))))
            #expect(try MemberStore.find(db, scope: "store-1", userID: "u1") == makeMember("u1", ["stock"], at: 2_000))
            #expect(try MemberStore.find(db, scope: "store-2", userID: "u1") == nil)
            #expect(try MemberStore.delete(db, scope: "store-1", userID: "u1"))
            #expect(!(try MemberStore.delete(db, scope: "store-1", userID: "u1")))
        }
    }

    @Test func listPagesByUserID() throws {
        try withMigratedDatabase { db in
            for user in ["e", "a", "d", "b", "c"] { try MemberStore.put(db, makeMember(user, [])) }
            try MemberStore.put(db, makeMember("z", [], scope: "store-2"))
            let first = try MemberStore.list(db, scope: "store-1", after: nil, limit: 2)
            #expect(first.map(\.userID) == ["a", "b"])
            let second = try MemberStore.list(db, scope: "store-1", after: first.last?.userID, limit: 2)
            #expect(second.map(\.userID) == ["c", "d"])
            let last = try MemberStore.list(db, scope: "store-1", after: "d", limit: 2)
            #expect(last.map(\.userID) == ["e"])
            #expect(try MemberStore.list(db, scope: "store-1", after: "e", limit: 2).isEmpty)
        }
    }

    @Test func holdingMatchesWholePermissionNames() throws {
        try withMigratedDatabase { db in
            try MemberStore.put(db, makeMember("u3", ["orders.read"]))
            try MemberStore.put(db, makeMember("u1", ["chat", "orders.read"]))
            try MemberStore.put(db, makeMember("u2", ["orders"]))
            try MemberStore.put(db, makeMember("u4", ["orders.read"], scope: "store-2"))
            #expect(try MemberStore.holding(db, scope: "store-1", permission: "orders.read").map(\.userID) == ["u1", "u3"])
            #expect(try MemberStore.holding(db, scope: "store-1", permission: "orders").map(\.userID) == ["u2"])
            #expect(try MemberStore.holding(db, scope: "store-1", permission: "stock").isEmpty)
            #expect(try MemberStore.holding(db, scope: "store-1", permission: nil).map(\.userID) == ["u1", "u2", "u3"])
        }
    }
}
