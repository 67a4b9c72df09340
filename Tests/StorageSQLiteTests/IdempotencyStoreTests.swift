import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct IdempotencyStoreTests {
    private func record(_ key: String, hash: String = "h1", at: Int64) -> IdempotencyRecord {
        IdempotencyRecord(key: key, requestHash: hash, responseJSON: "{}", complete: false, createdAt: at)
    }

    @Test func reserveFindAndComplete() throws {
        try withMigratedDatabase { db in
            #expect(try IdempotencyStore.find(db, key: "order-1", notBefore: 0) == nil)
            try IdempotencyStore.reserve(db, record("order-1", at: 1_000))
            #expect(try IdempotencyStore.find(db, key: "order-1", notBefore: 1_000) == record("order-1", at: 1_000))
            #expect(try IdempotencyStore.find(db, app: "other", key: "order-1", notBefore: 0) == nil)
            try IdempotencyStore.complete(db, key: "order-1", responseJSON: #"{"id":"n1"}"#)
            let done = try #require(try IdempotencyStore.find(db, key: "order-1", notBefore: 0))
            #expect(done.complete && done.responseJSON == #"{"id":"n1"}"# && done.requestHash == "h1")
        }
    }

    @Test func anExpiredKeyIsAbsentAndCanBeReservedAgain() throws {
        try withMigratedDatabase { db in
            try IdempotencyStore.reserve(db, record("order-1", at: 1_000))
            try IdempotencyStore.complete(db, key: "order-1", responseJSON: "{}")
            #expect(try IdempotencyStore.find(db, key: "order-1", notBefore: 1_001) == nil)
            try IdempotencyStore.reserve(db, record("order-1", hash: "h2", at: 9_000))
            let again = try #require(try IdempotencyStore.find(db, key: "order-1", notBefore: 1_001))
            #expect(!again.complete && again.requestHash == "h2" && again.createdAt == 9_000)
        }
    }

    @Test func purgeDeletesOldKeys() throws {
        try withMigratedDatabase { db in
            try IdempotencyStore.reserve(db, record("old", at: 1_000))
            try IdempotencyStore.reserve(db, record("new", at: 5_000))
            #expect(try IdempotencyStore.purge(db, createdBefore: 5_000) == 1)
            #expect(try IdempotencyStore.find(db, key: "old", notBefore: 0) == nil)
            #expect(try IdempotencyStore.find(db, key: "new", notBefore: 0) != nil)
        }
    }
}
