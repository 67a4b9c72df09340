import Testing

@testable import HeraldCore

/// The stored-text cache keeps the last notification it was asked for, also when an equal copy
/// built apart (another request's) finds the text: what it gives stays the notification's text.
@Suite struct PayloadTextCacheCopiesTests {
    @Test func equalNotificationsBuiltApartShareTheTextAndAChangedOneGetsItsOwn() {
        let cache = PayloadTextCache(recentCapacity: 8)
        let first = PushNotification(title: "t", body: "b", data: ["k": "v"])
        let again = PushNotification(title: "t", body: "b", data: ["k": "v"])
        var changed = again
        changed.title = "other"
        let text = cache.text(of: first)
        #expect(text == PayloadTextCache.encoderText(first))
        #expect(cache.text(of: again) == text)
        #expect(cache.text(of: again) == text)
        #expect(cache.text(of: first) == text)
        #expect(cache.text(of: changed) == PayloadTextCache.encoderText(changed))
        #expect(cache.text(of: again) == text)
    }
}
