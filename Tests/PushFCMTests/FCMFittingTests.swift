import Foundation
import HeraldCore
import PushHTTP
import Testing

@testable import PushFCM

/// FCM refuses a message whose data keys and values, title and body pass 4096 bytes: an alert over
/// it has its body, then its title, shortened at a whole character with "…" (as APNs and Web Push
/// do); data is never cut.
@Suite struct FCMFittingTests {
    let now = 1_754_563_200

    func notification(of request: PushHTTPRequest) throws -> [String: Any] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        let message = try #require(root["message"] as? [String: Any])
        return message["notification"] as? [String: Any] ?? [:]
    }

    func build(_ notification: PushNotification) throws -> PushHTTPRequest {
        try FCMRequestBuilder.request(for: notification, deviceToken: "fcm-token-1", projectID: "herald-test", accessToken: "t", now: now)
    }

    @Test func anAlertOverTheLimitIsCutToExactlyTheLimit() throws {
        // "k" + "v" (2) + title "t" (1) + body: 4093 fits exactly; one more is cut to 4090 + "…".
        let fits = PushNotification(title: "t", body: String(repeating: "x", count: 4093), data: ["k": "v"])
        #expect(try notification(of: build(fits))["body"] as? String == fits.body)
        let over = PushNotification(title: "t", body: String(repeating: "x", count: 4094), data: ["k": "v"])
        let cut = try notification(of: build(over))
        #expect(cut["body"] as? String == String(repeating: "x", count: 4090) + "…")
        #expect(cut["title"] as? String == "t")
    }

    @Test func emojiAreCutWhole() throws {
        // 1 + 4k + 3 ≤ 4096: 1023 emoji, exactly 4096 bytes.
        let n = PushNotification(title: "t", body: String(repeating: "😀", count: 1100))
        #expect(try notification(of: build(n))["body"] as? String == String(repeating: "😀", count: 1023) + "…")
        // Past the body, the title: a flag is one character of 8 bytes.
        let flags = PushNotification(title: String(repeating: "🇧🇷", count: 600))
        let title = try #require(try notification(of: build(flags))["title"] as? String)
        #expect(title == String(repeating: "🇧🇷", count: 511) + "…")
    }

    @Test func dataOverTheLimitIsStillRefused() {
        #expect(throws: PushPayloadError.fcmPayloadTooLarge(bytes: 4097, limit: 4096)) {
            try build(PushNotification(title: "t", data: ["k": String(repeating: "v", count: 4095)]))
        }
        #expect(throws: PushPayloadError.fcmPayloadTooLarge(bytes: 4097, limit: 4096)) {
            try build(.wakeup(data: ["k": String(repeating: "v", count: 4096)]))
        }
    }
}
