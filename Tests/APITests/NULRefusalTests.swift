import Foundation
import HeraldCore
import Testing
@testable import API
import Realtime

/// api14: NUL (U+0000) is refused, naming the member, where a PostgreSQL text value could not
/// hold it (libpq ends a parameter there): the same rule on every storage, so SQLite and
/// PostgreSQL deployments accept the same calls.
@Suite struct NULRefusalTests {
    static let members = ["thread_id", "sound", "android_channel_id"]

    private func notification(_ member: String, _ value: String) throws -> NotificationRequest {
        let json = #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t","\#(member)":\#(JSONText.quote(value))}"#
        let body = try JSONDecoder().decode(NotificationBody.self, from: Data(json.utf8))
        return try NotificationRequest(body: body, now: 1_767_225_600_000, catalog: .empty, maxLiveDataBytes: 4096)
    }

    private func push(_ member: String, _ value: String) throws -> PushNotification {
        let json = #"{"title":"t","\#(member)":\#(JSONText.quote(value))}"#
        return try PushRoutes.notification(JSONDecoder().decode(PushRoutes.NotificationBody.self, from: Data(json.utf8)))
    }

    @Test(arguments: members)
    func aNotificationMemberWithNULIsRefusedNamingIt(_ member: String) throws {
        for value in ["a\u{0}b", "\u{0}", "ab\u{0}"] {
            #expect(throws: HTTPError.invalid(member, "\(member) is 1-200 characters without NUL (U+0000)")) { try notification(member, value) }
        }
        // Another control character is not a storage problem: these go inside JSON payloads.
        _ = try notification(member, "a\u{1}b")
        _ = try notification(member, "ding-é")
    }

    @Test(arguments: members)
    func aPushMemberWithNULIsRefusedNamingIt(_ member: String) throws {
        #expect(throws: HTTPError.invalid("notification.\(member)", "\(member) is 1-200 characters without NUL (U+0000)")) { try push(member, "a\u{0}b") }
        let taken = try push(member, "a\u{1}b")
        #expect([taken.threadID, taken.sound, taken.androidChannelID].contains("a\u{1}b"))
    }

    /// edges14: `POST /v1/push` took these of any length (and empty) while `POST /v1/notifications`
    /// held them to 1-200; one rule now. half14: counted in Unicode scalars, as the OpenAPI's
    /// `maxLength` counts (200 two-byte or four-byte characters were refused as over 200 bytes).
    @Test(arguments: members)
    func bothRoutesHoldAMemberTo1Through200Characters(_ member: String) throws {
        let message = "\(member) is 1-200 characters without NUL (U+0000)"
        for character in ["a", "é", "😀"] {
            let longest = String(repeating: character, count: 200)
            #expect(throws: HTTPError.invalid(member, message)) { try notification(member, longest + character) }
            #expect(throws: HTTPError.invalid("notification.\(member)", message)) { try push(member, longest + character) }
            _ = try notification(member, longest)
            let pushed = try push(member, longest)
            #expect([pushed.threadID, pushed.sound, pushed.androidChannelID].contains(longest))
        }
        #expect(throws: HTTPError.invalid(member, message)) { try notification(member, "") }
        #expect(throws: HTTPError.invalid("notification.\(member)", message)) { try push(member, "") }
    }

    /// half14: a call's `collapse_key` is 1-64 characters on both routes, as the OpenAPI's
    /// `maxLength` counts; one past APNs's 64 bytes is sent in the renderer's fitted form (first
    /// characters, `~`, a hash of the whole key), the same for the same key.
    @Test func aCollapseKeyIsHeldTo64CharactersAndSentIn64Bytes() throws {
        for character in ["a", "é", "😀"] {
            let longest = String(repeating: character, count: 64)
            #expect(throws: HTTPError.self) { try notification("collapse_key", longest + character) }
            #expect(throws: HTTPError.invalid("notification.collapse_key", "collapse_key is at most 64 characters, without control characters "
                                              + "or a space at either end (it is sent as the apns-collapse-id header)")) {
                try push("collapse_key", longest + character)
            }
            _ = try notification("collapse_key", longest)
            let sent = try #require(try push("collapse_key", longest).collapseKey)
            #expect(sent == NotificationRenderer.fitCollapseKey(longest))
            #expect(sent.utf8.count <= NotificationRenderer.maximumCollapseKeyBytes)
            #expect(character == "a" ? sent == longest : sent.hasPrefix(character) && sent != longest)
        }
    }

    /// half14: an app's issuer and audience, 1-1024 by the OpenAPI's `maxLength`, are counted in
    /// Unicode scalars too: 1,024 two-byte or four-byte characters are taken, one more refused.
    @Test(arguments: ["issuer", "audience"])
    func anAppsIssuerOrAudienceIsHeldTo1024Characters(_ member: String) throws {
        for character in ["a", "é", "😀"] {
            var settings = AppSettings()
            let longest = String(repeating: character, count: 1024)
            _ = try AppChange.read(["tokens": [member: longest]], into: &settings)
            #expect(throws: HTTPError.invalid("tokens.\(member)", "1-1024 characters without NUL (U+0000), or null")) {
                _ = try AppChange.read(["tokens": [member: longest + character]], into: &settings)
            }
        }
    }

    /// What push's OpenAPI `minLength: 1` on `collapse_key` states: "" is refused on both routes.
    @Test func anEmptyCollapseKeyIsRefusedOnBothRoutes() throws {
        #expect(throws: HTTPError.self) { try notification("collapse_key", "") }
        #expect(throws: HTTPError.self) { try push("collapse_key", "") }
        #expect(try push("collapse_key", "k").collapseKey == "k")
    }

    @Test(arguments: ["issuer", "audience"])
    func anAppsIssuerOrAudienceWithNULIsRefusedNamingIt(_ member: String) throws {
        var settings = AppSettings()
        #expect(throws: HTTPError.invalid("tokens.\(member)", "1-1024 characters without NUL (U+0000), or null")) {
            _ = try AppChange.read(["tokens": [member: "https://a.example\u{0}x"]], into: &settings)
        }
        _ = try AppChange.read(["tokens": [member: "https://a.example"]], into: &settings)
        #expect((member == "issuer" ? settings.tokens.issuer : settings.tokens.audience) == "https://a.example")
    }
}
