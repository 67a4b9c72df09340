import Foundation
import HeraldCore
import PushHTTP
import Testing

@testable import PushExpo

/// Expo refuses a message over 4096 bytes (its JSON without `to`): an alert over it has its body,
/// then its title, shortened at a whole character with "…", as APNs and Web Push do; data is never cut.
@Suite struct ExpoFittingTests {
    let now = 1_754_563_200
    static let token = "ExponentPushToken[a]"
    static let limit = ExpoRequestBuilder.maximumPayloadBytes

    /// The message's JSON bytes without its `"to"` member (what Expo's limit counts), and the object.
    func build(_ notification: PushNotification) throws -> (bytes: Int, object: [String: Any]) {
        let text = try ExpoRequestBuilder.message(for: notification, token: Self.token, now: now).bytes
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text)) as? [String: Any])
        return (text.count - #""to":"ExponentPushToken[a]","#.utf8.count, object)
    }

    @Test func anAlertOneByteOverIsCutToExactlyTheLimit() throws {
        var n = PushNotification(title: "Hi", body: "")
        let room = Self.limit - (try build(n).bytes)
        n.body = String(repeating: "x", count: room)
        #expect(try build(n).bytes == Self.limit)
        #expect(try build(n).object["body"] as? String == n.body, "at the limit: as it is")
        n.body = String(repeating: "x", count: room + 1)
        let cut = try build(n)
        #expect(cut.bytes == Self.limit)
        #expect(cut.object["body"] as? String == String(repeating: "x", count: room - 3) + "…")
        #expect(cut.object["title"] as? String == "Hi" && cut.object["to"] as? String == Self.token)
    }

    @Test func emojiAndMultiByteCharactersAreCutWhole() throws {
        let data = Dictionary(uniqueKeysWithValues: (0..<20).map { ("k\($0)", String(repeating: "v", count: 80)) })
        let n = PushNotification(title: String(repeating: "😀", count: 256), body: String(repeating: "ü", count: 1000), data: data)
        let cut = try build(n)
        #expect(cut.bytes <= Self.limit && cut.bytes >= Self.limit - 1)
        let body = try #require(cut.object["body"] as? String)
        #expect(body.hasSuffix("ü…") && body.dropLast().allSatisfy { $0 == "ü" })
        #expect(cut.object["title"] as? String == n.title)
        #expect(cut.object["data"] as? [String: String] == data)
        // No body to cut: the title, at a whole emoji.
        let titleOnly = try build(PushNotification(title: String(repeating: "😀", count: 1100)))
        let title = try #require(titleOnly.object["title"] as? String)
        #expect(title.hasSuffix("😀…") && titleOnly.bytes > Self.limit - 4)
    }

    @Test func dataOverTheLimitIsStillRefused() {
        let data = ["k": String(repeating: "v", count: Self.limit)]
        #expect(throws: PushPayloadError.self) { try build(PushNotification(title: "t", body: "b", data: data)) }
        #expect(throws: PushPayloadError.self) { try build(.wakeup(data: data)) }
    }
}
