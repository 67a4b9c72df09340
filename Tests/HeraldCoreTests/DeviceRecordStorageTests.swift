import Testing

@testable import HeraldCore

/// `DeviceRecord` keeps its fields in one shared box (copy on write): copies stay values.
@Suite struct DeviceRecordStorageTests {
    static func device(id: String = "d1", token: String = "t1") -> DeviceRecord {
        DeviceRecord(id: id, app: "default", userID: "u1", sessionID: "s1", platform: "ios", provider: "apns", token: token,
                     environment: "production", installationID: nil, locale: "pt-BR", appVersion: "1.0", deviceName: nil,
                     createdAt: 1, lastSeenAt: 2, sessionActive: true)
    }

    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        let original = Self.device()
        var copy = original
        #expect(copy == original)
        copy.token = "t2"
        copy.sessionActive = false
        copy.locale = nil
        #expect(original.token == "t1")
        #expect(original.sessionActive)
        #expect(original.locale == "pt-BR")
        #expect(copy.token == "t2")
        #expect(!copy.sessionActive)
        #expect(copy.locale == nil)
        #expect(copy != original)
    }

    @Test func recordsBuiltApartCompareByTheirFields() {
        #expect(Self.device() == Self.device())
        #expect(Self.device(token: "t2") != Self.device())
        var other = Self.device(id: "d2")
        #expect(other != Self.device())
        other.id = "d1"
        #expect(other == Self.device())
    }
}
