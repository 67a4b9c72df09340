import Foundation
import Testing

@testable import HeraldCore

/// `PushNotification` keeps its fields in one shared box (copy on write): copies stay values.
@Suite struct PushNotificationStorageTests {
    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        let original = PushNotification(title: "t", body: "b", data: ["k": "v"], rootKey: "r")
        var copy = original
        #expect(copy == original)
        copy.title = "changed"
        copy.data["k2"] = "v2"
        copy.rootKey = nil
        #expect(original.title == "t")
        #expect(original.data == ["k": "v"])
        #expect(original.rootKey == "r")
        #expect(copy.title == "changed")
        #expect(copy.data == ["k": "v", "k2": "v2"])
        #expect(copy.rootKey == nil)
        #expect(copy != original)
    }

    @Test func notificationsBuiltApartCompareByTheirFields() {
        let a = PushNotification(kind: .wakeup, collapseKey: "c", data: ["id": "1"], priority: .high, expiresAtMilliseconds: 1_500)
        var b = PushNotification(kind: .wakeup, data: ["id": "1"], priority: .high)
        #expect(a != b)
        b.collapseKey = "c"
        b.expiresAtMilliseconds = 1_500
        #expect(a == b)
        b.interruptionLevel = .passive
        #expect(a != b)
    }

    @Test func theStoredFormReadsBackEqual() throws {
        var notification = PushNotification(title: "t", body: "b", badge: 2, data: ["k": "v"], ttlSeconds: 60)
        notification.interruptionLevel = .timeSensitive
        let text = try JSONEncoder().encode(notification)
        #expect(try JSONDecoder().decode(PushNotification.self, from: text) == notification)
    }
}
