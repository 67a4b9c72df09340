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
            #expect(throws: HTTPError.invalid(member, "\(member) is 1-200 bytes without NUL (U+0000)")) { try notification(member, value) }
        }
        // Another control character is not a storage problem: these go inside JSON payloads.
        _ = try notification(member, "a\u{1}b")
        _ = try notification(member, "ding-é")
    }

    @Test(arguments: members)
    func aPushMemberWithNULIsRefusedNamingIt(_ member: String) throws {
        #expect(throws: HTTPError.invalid("notification.\(member)", "\(member) is 1-200 bytes without NUL (U+0000)")) { try push(member, "a\u{0}b") }
        let taken = try push(member, "a\u{1}b")
        #expect([taken.threadID, taken.sound, taken.androidChannelID].contains("a\u{1}b"))
    }

    /// edges14: `POST /v1/push` took these of any length (and empty) while `POST /v1/notifications`
    /// held them to 1-200 bytes; one rule now, counted in UTF-8 bytes on both routes.
    @Test(arguments: members)
    func bothRoutesHoldAMemberTo1Through200Bytes(_ member: String) throws {
        let longest = String(repeating: "é", count: 100)
        for refused in ["", String(repeating: "a", count: 201), longest + "a", String(repeating: "é", count: 101)] {
            #expect(throws: HTTPError.invalid(member, "\(member) is 1-200 bytes without NUL (U+0000)")) { try notification(member, refused) }
            #expect(throws: HTTPError.invalid("notification.\(member)", "\(member) is 1-200 bytes without NUL (U+0000)")) { try push(member, refused) }
        }
        for taken in ["a", longest, String(repeating: "a", count: 200)] {
            _ = try notification(member, taken)
            let pushed = try push(member, taken)
            #expect([pushed.threadID, pushed.sound, pushed.androidChannelID].contains(taken))
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
