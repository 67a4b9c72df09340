import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct UserStoreTests {
    @Test func putCreatesThenUpdatesAndClears() throws {
        try withMigratedDatabase { db in
            let before = try UserStore.find(db, app: "default", userID: "u1")
            #expect(before == nil)
            let created = try UserStore.put(db, UserProfile(userID: "u1", locale: "pt-BR", updatedAt: 1_000))
            let first = try UserStore.find(db, app: "default", userID: "u1")
            #expect(created && first == UserProfile(userID: "u1", locale: "pt-BR", updatedAt: 1_000))
            let createdAgain = try UserStore.put(db, UserProfile(userID: "u1", locale: nil, updatedAt: 2_000))
            let cleared = try UserStore.find(db, app: "default", userID: "u1")
            #expect(!createdAgain && cleared == UserProfile(userID: "u1", locale: nil, updatedAt: 2_000))
        }
    }

    @Test func localesAreThoseOfTheGivenUsersThatHaveOneInTheirApp() throws {
        try withMigratedDatabase { db in
            try UserStore.put(db, UserProfile(userID: "a", locale: "pt-BR", updatedAt: 1))
            try UserStore.put(db, UserProfile(userID: "b", locale: nil, updatedAt: 1))
            try UserStore.put(db, UserProfile(userID: "c", locale: "es", updatedAt: 1))
            try UserStore.put(db, UserProfile(app: "other", userID: "a", locale: "en", updatedAt: 1))
            let defaults = try UserStore.locales(db, app: "default", userIDs: ["a", "b", "d", "a"])
            let other = try UserStore.locales(db, app: "other", userIDs: ["a", "c"])
            let none = try UserStore.locales(db, app: "default", userIDs: [])
            #expect(defaults == ["a": "pt-BR"] && other == ["a": "en"] && none == [:])
        }
    }
}
