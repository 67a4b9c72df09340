import Foundation
import HeraldCore
import Testing
@testable import API
import Realtime

/// What one idempotency key compares (NO-1): the request's meaning, not the clock it arrived by.
@Suite struct NotificationRequestTests {
    private func request(_ json: String, now: Int64) throws -> NotificationRequest {
        let body = try JSONDecoder().decode(NotificationBody.self, from: Data(json.utf8))
        return try NotificationRequest(body: body, now: now, catalog: .empty, maxLiveDataBytes: 4096)
    }

    @Test("a relative ttl_seconds retried seconds later is the same call; its expiry still moves with the clock")
    func relativeTTLIsTimeless() throws {
        let json = #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t","ttl_seconds":3600,"idempotency_key":"ttl-1"}"#
        let first = try request(json, now: 1_767_225_600_000)
        let retried = try request(json, now: 1_767_225_601_500)
        #expect(first.canonicalText == retried.canonicalText)
        #expect(first.plan.expiresAt != retried.plan.expiresAt)
    }

    @Test("an absolute expires_at, or a different ttl, is a different call")
    func differentMeaningDiffers() throws {
        let base = #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t","ttl_seconds":3600}"#
        let other = #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t","ttl_seconds":60}"#
        #expect(try request(base, now: 1_000).canonicalText != request(other, now: 1_000).canonicalText)
        let users = #"{"recipients":{"user_ids":["u2"]},"kind":"k","title":"t","ttl_seconds":3600}"#
        #expect(try request(base, now: 1_000).canonicalText != request(users, now: 1_000).canonicalText)
    }

    /// breaker10: a backend that builds `user_ids` from a set (Python's order changes with each
    /// process) and retries a timed-out call with its key got 409 `idempotency_key_reused`: the
    /// recipients are a set (repeats count once), so their order is not the call's meaning.
    @Test("user_ids in another order, or repeated, are the same call; another user is not")
    func recipientOrderIsNotMeaning() throws {
        func users(_ ids: String) throws -> String {
            try request(#"{"recipients":{"user_ids":[\#(ids)]},"kind":"k","title":"t"}"#, now: 1_000).canonicalText
        }
        #expect(try users(#""a","b","c""#) == users(#""c","a","b""#))
        #expect(try users(#""a","b""#) == users(#""b","a","b""#))
        #expect(try users(#""a","b""#) != users(#""a","c""#))
        #expect(try users(#""a","b""#) != users(#""a""#))
    }

    /// An RFC 3339 `expires_at` is read strictly (RFC 3339 §5.6-§5.7): a date that does not exist
    /// (February 30th) or an offset past 23:59 was rolled over into another instant by the
    /// lenient reader and the notification stored with an expiry nobody asked for; now 400.
    @Test("expires_at: a date that does not exist or an offset out of range is refused")
    func expiresAtIsReadStrictly() throws {
        let now: Int64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
        func body(_ expires: String) -> String {
            #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t","expires_at":"\#(expires)"}"#
        }
        for bad in ["2026-01-01T10:00:00+25:00", "2026-02-30T10:00:00Z", "2026-02-29T10:00:00Z", "2026-04-31T10:00:00Z",
                    "2026-01-01T24:00:00Z", "2026-01-01T10:60:00Z", "2026-01-01T10:00:00+05:60", "2026-01-01T10:00:00.Z",
                    "2026-1-01T10:00:00Z", "2026-01-01T10:00:00", "2026-01-01 10:00:00Z", "+2026-01-01T10:00:00Z"] {
            do {
                _ = try request(body(bad), now: now)
                Issue.record("\(bad) was accepted")
            } catch let error as HTTPError {
                #expect(error.status == 400 && error.extra["field"] == "expires_at", "\(bad)")
            }
        }
        #expect(try request(body("2026-01-02T00:00:00Z"), now: now).plan.expiresAt == now + 86_400_000)
        #expect(try request(body("2026-01-02T01:30:00.5+01:30"), now: now).plan.expiresAt == now + 86_400_500)
        #expect(try request(body("2026-01-01T20:00:00-04:00"), now: now).plan.expiresAt == now + 86_400_000)
        #expect(try request(body("2026-01-01T23:59:59.999999Z"), now: now).plan.expiresAt == now + 86_399_999)
        // 2028 is a leap year: its February 29th exists.
        #expect(try request(body("2028-02-29T00:00:00Z"), now: 1_835_049_600_000).plan.expiresAt == 1_835_395_200_000)
    }

    /// Language tags are compared without regard to case (RFC 5646 §2.1.1): a title or body that
    /// gives `pt-br` and `pt-BR` gives one locale two texts, and which one a device got depended
    /// on the map's order; refused naming both, as a key given twice is.
    @Test("title or body naming one locale twice in another case is refused")
    func oneLocaleTwiceIsRefused() throws {
        for (member, map) in [("title", #"{"pt-br": "a", "pt-BR": "b"}"#), ("body", #"{"en": "x", "EN": "y"}"#),
                              ("title", #"{"zh-hant-tw": "a", "zh-Hant-TW": "b"}"#)] {
            let json = #"{"recipients":{"user_ids":["u1"]},"kind":"k","title":"t",""# + member + #"":"# + map + "}"
            do {
                _ = try request(json.replacingOccurrences(of: #""title":"t","title""#, with: #""title""#), now: 1_000)
                Issue.record("\(map) was accepted")
            } catch let error as HTTPError {
                #expect(error.status == 400 && error.extra["field"] == member, "\(map)")
                #expect(error.message.contains("one locale"), "\(error.message)")
            }
        }
        _ = try request(#"{"recipients":{"user_ids":["u1"]},"kind":"k","title":{"pt": "a", "pt-BR": "b", "en": "c"}}"#, now: 1_000)
    }

    /// half14: a title or body is 1-1024 characters (Unicode scalars), as the OpenAPI's `maxLength`
    /// counts: 1,024 two-byte or four-byte characters are taken, alone or in a locale map; one
    /// more is refused naming the text.
    @Test("a text is held to 1024 characters, not bytes")
    func aTextIsHeldTo1024Characters() throws {
        func json(_ member: String, _ value: String) -> String {
            #"{"recipients":{"user_ids":["u1"]},"kind":"k",""# + member + #"":"# + value + "}"
        }
        for character in ["a", "é", "😀"] {
            let longest = String(repeating: character, count: 1024)
            for member in ["title", "body"] {
                _ = try request(json(member, JSONText.quote(longest)), now: 1_000)
                _ = try request(json(member, #"{"pt":"# + JSONText.quote(longest) + "}"), now: 1_000)
                #expect(throws: HTTPError.invalid(member, "each \(member) is 1-1024 characters")) {
                    try request(json(member, JSONText.quote(longest + character)), now: 1_000)
                }
                #expect(throws: HTTPError.invalid("\(member).pt", "each \(member) is 1-1024 characters")) {
                    try request(json(member, #"{"pt":"# + JSONText.quote(longest + character) + "}"), now: 1_000)
                }
            }
        }
    }
}
