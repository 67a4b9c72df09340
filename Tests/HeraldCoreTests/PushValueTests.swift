import Testing

@testable import HeraldCore

@Suite struct PushValueTests {
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
