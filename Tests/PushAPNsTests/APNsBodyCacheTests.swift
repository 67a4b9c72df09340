import HeraldCore
import Testing

@testable import PushAPNs

/// The APNs body cache makes a body once per run of equal notifications, copies built apart
/// included, and again for a changed one.
@Suite struct APNsBodyCacheTests {
    @Test func equalCopiesReuseTheBodyAndAChangedNotificationMakesItsOwn() throws {
        let cache = APNsBodyCache()
        var made = 0
        func body(_ notification: PushNotification) throws -> [UInt8] {
            try cache.body(for: notification) { () throws(PushPayloadError) in
                made += 1
                return [UInt8(made)]
            }
        }
        let first = PushNotification(title: "t")
        let again = PushNotification(title: "t")
        var changed = again
        changed.title = "u"
        #expect(try body(first) == [1])
        #expect(try body(again) == [1])
        #expect(try body(first) == [1])
        #expect(try body(changed) == [2])
        #expect(try body(again) == [3])
        #expect(made == 3)
    }
}
