import Foundation
import HeraldCore
import PushHTTP
import Testing

@testable import PushWebPush

/// RFC 8291: a Web Push body is one 4096-byte record, 3993 bytes of JSON. An alert over it has its
/// body, then its title, shortened at a whole character with "…" (as APNs does), instead of being
/// dead-lettered `payload_too_large` after the call answered 201; data is never cut.
@Suite struct WebPushFittingTests {
    let pushID = PushID.random()
    static let limit = WebPushEncryption.maxPlaintextBytes

    func plaintext(_ notification: PushNotification) throws -> [UInt8] {
        try WebPushRequestBuilder.plaintext(for: notification, pushID: pushID)
    }

    func json(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    /// The overhead of a notification's JSON around a body of `count` ASCII characters.
    func overhead(_ notification: PushNotification) -> Int {
        WebPushRequestBuilder.payload(for: notification, pushID: pushID).bytes.count - (notification.body?.utf8.count ?? 0)
    }

    @Test func thePlaintextLimitIsTheRecordLessItsHeaderPaddingAndTag() {
        #expect(Self.limit == 4096 - 86 - 1 - 16)
    }

    /// Exactly at the limit: sent as it is. One byte over: 4 characters go for the 3 of "…", so the
    /// shortened JSON is exactly at the limit again.
    @Test func anAlertOneByteOverIsCutToExactlyTheLimit() throws {
        var n = PushNotification(title: "Hi", body: "")
        let room = Self.limit - overhead(n)
        n.body = String(repeating: "x", count: room)
        #expect(try plaintext(n) == WebPushRequestBuilder.payload(for: n, pushID: pushID).bytes)
        n.body = String(repeating: "x", count: room + 1)
        let cut = try plaintext(n)
        #expect(cut.count == Self.limit)
        #expect(try json(cut)["body"] as? String == String(repeating: "x", count: room - 3) + "…")
        #expect(try json(cut)["title"] as? String == "Hi")
    }

    @Test func multiByteCharactersAndEmojiAreCutWhole() throws {
        let data = Dictionary(uniqueKeysWithValues: (0..<20).map { ("k\($0)", String(repeating: "v", count: 80)) })
        let title = String(repeating: "T", count: 1024)
        let accented = PushNotification(title: title, body: String(repeating: "é", count: 1000), data: data)
        let cut = try plaintext(accented)
        #expect(cut.count <= Self.limit && cut.count >= Self.limit - 1, "é is 2 bytes: at most one byte unused")
        let object = try json(cut)
        let body = try #require(object["body"] as? String)
        #expect(body.hasSuffix("é…") && body.dropLast().allSatisfy { $0 == "é" })
        #expect(object["title"] as? String == title)
        #expect(object["data"] as? [String: String] == data, "data is never cut")

        let family = "👩‍👩‍👧‍👦"   // one character, 25 bytes
        let emoji = PushNotification(title: String(repeating: family, count: 200), data: data)
        let shortened = try json(try plaintext(emoji))
        let shortTitle = try #require(shortened["title"] as? String)
        #expect(shortTitle.hasSuffix("…") && shortTitle.dropLast().allSatisfy { $0 == Character(family) })
        #expect(try plaintext(emoji).count > Self.limit - 25 - 1)
    }

    /// Data that does not fit with no text at all is refused before sending, as before.
    @Test func dataOverTheLimitIsStillRefused() throws {
        let data = ["k": String(repeating: "v", count: Self.limit)]
        #expect(throws: PushPayloadError.self) { try plaintext(PushNotification(title: "t", body: "b", data: data)) }
        #expect(throws: PushPayloadError.self) { try plaintext(.wakeup(data: data)) }
        do {
            _ = try plaintext(PushNotification(title: "t", data: data))
            Issue.record("refused expected")
        } catch let error as PushPayloadError {
            #expect(error.reason == "payload_too_large")
        }
    }
}
