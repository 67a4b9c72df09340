import Testing

@testable import HeraldCore

@Suite struct PushValueTests {
    /// Issue 17 (NO-2): with the expiry in ms the time left is rounded down (never a provider
    /// lifetime past it); without it, the whole-second expiry as before.
    @Test func remainingTTLInMilliseconds() throws {
        let precise = PushNotification(title: "t", expiresAt: 1_001, expiresAtMilliseconds: 1_000_853)
        #expect(try precise.remainingTTL(nowMilliseconds: 1_000_000) == 0)
        #expect(try precise.remainingTTL(nowMilliseconds: 999_000) == 1)
        #expect(throws: PushPayloadError.expired) { try precise.remainingTTL(nowMilliseconds: 1_000_853) }
        let seconds = PushNotification(title: "t", expiresAt: 1_001)
        #expect(try seconds.remainingTTL(nowMilliseconds: 999_999) == 2)
        #expect(try seconds.remainingTTL(nowMilliseconds: 1_000_999) == 1)
        #expect(try PushNotification(title: "t", ttlSeconds: 60).remainingTTL(nowMilliseconds: 1_000_500) == 60)
    }

    @Test func interruptionLevels() {
        #expect([InterruptionLevel.passive, .active, .timeSensitive, .critical].map(\.rawValue) == ["passive", "active", "time-sensitive", "critical"])
    }

    @Test func pushIDs() throws {
        #expect(PushID("EABEAE54-14A8-11E5-B60B-1697F925EC7B")?.value == "eabeae54-14a8-11e5-b60b-1697f925ec7b")
        #expect(PushID("eabeae54-14a8-11e5-b60b-1697f925ec7") == nil)
        #expect(PushID("eabeae5414a811e5b60b1697f925ec7b") == nil)
        #expect(PushID("geabeae5-14a8-11e5-b60b-1697f925ec7b") == nil)
        let random = PushID.random()
        #expect(PushID(random.value) == random)
        #expect(random.value == random.value.lowercased())
        #expect(Array(random.value)[14] == "4")
        #expect(PushID.random() != random)
        // 36 bytes but not 36 ASCII characters, a dash out of place, a dash where a digit belongs.
        #expect(PushID("eabeae54-14a8-11e5-b60b-1697f925eé") == nil)
        #expect(PushID("eabeae541-4a8-11e5-b60b-1697f925ec7b") == nil)
        #expect(PushID("eabeae54-14a8-11e5-b60b-1697f925e-7b") == nil)
        // Every random id is canonical: version 4, variant 10 (8, 9, a or b), dashes at 8-4-4-4-12.
        for _ in 0..<200 {
            let id = Array(PushID.random().value)
            #expect(id.count == 36 && id[14] == "4" && "89ab".contains(id[19]))
            #expect([8, 13, 18, 23].allSatisfy { id[$0] == "-" })
            #expect(PushID(String(id)) != nil)
        }
    }
}
