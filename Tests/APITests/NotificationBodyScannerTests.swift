import Foundation
import Testing
@testable import API
import Realtime

/// The notification fast path reads what `JSONDecoder` would, and steps aside for everything else.
@Suite struct NotificationBodyScannerTests {
    private func scanned(_ text: String) throws(HTTPError) -> NotificationBody? {
        let bytes = Array(text.utf8)
        #expect(JSONSyntax.check(bytes, maxDepth: 64, rejectDuplicateKeys: true, rejectNumbersBeyondDouble: false) == nil,
                "test bodies pass the route's check: \(text)")
        return try NotificationBodyScanner.scan(bytes)
    }

    private func decoded(_ text: String) throws -> NotificationBody {
        try JSONDecoder().decode(NotificationBody.self, from: Data(text.utf8))
    }

    @Test(arguments: [
        // The choke-point benchmark's body.
        #"{"recipients":{"user_ids":["r0"]},"kind":"bench.created","title":"Benchmark","body":"A notification through the choke point","data":{"source":"bench"}}"#,
        // Every field, whitespace, escapes and non-ASCII text, nulls for optional fields.
        """
        { "recipients" : { "scope" : "store:1", "permission" : "orders.read", "user_ids" : null },
          "kind": "orders.paid", "scope": null, "title": {"en": "Paid \\"now\\"", "pt-BR": "Pago \\u00e9 \\ud83d\\ude00"},
          "body": "line\\nbreak \\/ slash", "args": {"n": "3"}, "data": {}, "collapse_key": "c", "thread_id": "t",
          "sound": "ding", "android_channel_id": "ch", "priority": "high", "ttl_seconds": 3600, "badge": "unread",
          "persist": false, "push": {"policy": "unless_acked", "ack_window_ms": 1500, "type": null},
          "audience": "staff", "track_opens": true, "idempotency_key": "k-1",
          "live": null }
        """,
        #"{"recipients":{"scope":"s","assignee":null},"kind":"k","expires_at":1767225600000,"badge":7}"#,
        #"{"recipients":{"scope":"s","assignee":"u9"},"kind":"k","expires_at":"2026-12-01T10:00:00Z","badge":-3}"#,
        #"{"kind":"k","recipients":{"user_ids":[]},"ttl_seconds":0,"push":{}}"#,
        #"{"recipients":{"user_ids":["a","b","a"]},"kind":"k","ttl_seconds":-9223372036854775808}"#,
        #"{"recipients":{},"kind":"","title":"\u0000"}"#,
        // Escaped keys are decoded.
        #"{"recipients":{"user_ids":["a"]},"kin\u0064":"k","data":{"d\u0061":"x"},"idempotency\u005fkey":"i"}"#,
    ])
    func readsWhatTheDecoderReads(_ text: String) throws {
        let body = try #require(try scanned(text), "the scanner takes it")
        #expect(body == (try decoded(text)))
    }

    @Test func escapedKeysReadAsTheirDecodedNames() throws {
        let body = try #require(try scanned(#"{"recipients":{"user_ids":["a"]},"ki\u006ed":"k","data":{"\u0061":"1"},"idempotency\u005fkey":"i"}"#))
        #expect(body.kind == "k" && body.data == ["a": "1"] && body.idempotency_key == "i")
    }

    /// Whole-number fields refuse a fractional part and numbers past 64 bits, naming the field,
    /// on every body: also one the decoder reads (`live`) and one whose `push` has another member
    /// the decoder must judge.
    @Test(arguments: [
        (#""ttl_seconds":1.5"#, "ttl_seconds"),
        (#""ttl_seconds":1000.5"#, "ttl_seconds"),
        (#""ttl_seconds":1e-3"#, "ttl_seconds"),
        (#""ttl_seconds":18446744073709551616"#, "ttl_seconds"),
        (#""ttl_seconds":9.3e18"#, "ttl_seconds"),
        (#""expires_at":99999999999999999999"#, "expires_at"),
        (#""expires_at":1.7000000000005e12"#, "expires_at"),
        (#""badge":2.5"#, "badge"),
        (#""badge":0.1e1000"#, "badge"),
        (#""badge":1e400"#, "badge"),
        (#""badge":true"#, "badge"),
        (#""badge":{}"#, "badge"),
        (#""push":{"ack_window_ms":1e30,"policy":"unless_acked"}"#, "push.ack_window_ms"),
        (#""push":{"policy":5,"ack_window_ms":2.5}"#, "push.ack_window_ms"),
        (#""live":{"channel":"c","data":1},"ttl_seconds":1.5"#, "ttl_seconds"),
        (#""title":5,"badge":1.25"#, "badge"),
    ])
    func fractionsAndHugeNumbersNameTheField(_ member: String, _ field: String) {
        let text = #"{"recipients":{"user_ids":["a"]},"kind":"k","# + member + "}"
        do {
            _ = try scanned(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.status == 400 && error.extra["field"] == field, "\(text): \(error)")
        }
    }

    /// api14 (ADR 0029): a whole-number field takes any number whose value is whole, however
    /// written, as JSON Schema's `integer` does; the scanner gives the value the digits give.
    @Test(arguments: [
        (#""ttl_seconds":60.0,"badge":1e2,"expires_at":1.7E12,"push":{"ack_window_ms":1.5e3}"#, 60, 100, 1_700_000_000_000, 1500),
        (#""ttl_seconds":6e+1,"badge":100.000,"expires_at":17000000000000e-1,"push":{"ack_window_ms":1500}"#, 60, 100, 1_700_000_000_000, 1500),
        (#""ttl_seconds":-0.0,"badge":0e99,"expires_at":9223372036854775807.0,"push":{"ack_window_ms":0.0}"#, 0, 0, Int64.max, 0),
    ])
    func wholeValuesHoweverWrittenAreTaken(_ members: String, _ ttl: Int, _ badge: Int, _ expires: Int64, _ window: Int) throws {
        let body = try #require(try scanned(#"{"recipients":{"user_ids":["a"]},"kind":"k","# + members + "}"))
        #expect(body.ttl_seconds == ttl && body.badge == .number(badge) && body.expires_at == .milliseconds(expires)
                && body.push?.ack_window_ms == window, "\(members): \(body)")
    }

    /// A body the decoder reads (`live`) gets the same values: the route hands it the digits.
    @Test func theDecodersPathTakesWholeValuesToo() throws {
        let text = #"{"recipients":{"user_ids":["a"]},"kind":"k","live":{"channel":"c"},"ttl_seconds":6e1,"expires_at":9223372036854775807.0,"push":{"ack_window_ms":2.0e3}}"#
        #expect(try scanned(text) == nil, "left to the decoder")
        let body = try NotificationRoutes.body(HTTPRequest(method: .post, target: "/v1/notifications", headers: ["Content-Type": "application/json"], body: Array(text.utf8)))
        #expect(body.ttl_seconds == 60 && body.expires_at == .milliseconds(Int64.max) && body.push?.ack_window_ms == 2000, "\(body)")
    }

    /// A member `NotificationBody` does not have is a 400 naming it, found as the scanner meets
    /// it, whatever its value (`null` included) and wherever the members are fixed.
    @Test(arguments: [
        (#""tilte":"x""#, "tilte"),
        (#""pirority":null"#, "pirority"),
        (#""title":"t","extra":{"deep":[1]}"#, "extra"),
        (#""push":{"policy":"unless_acked","polcy":"x"}"#, "push.polcy"),
        (#""push":{"future":null}"#, "push.future"),
        (#""title":5,"tilte":"x""#, "tilte"),
    ])
    func unknownMembersAreRefusedNamingThem(_ member: String, _ field: String) {
        let text = #"{"recipients":{"user_ids":["a"]},"kind":"k","# + member + "}"
        do {
            _ = try scanned(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.status == 400 && error.extra["field"] == field && error.message.contains("unknown member"), "\(text): \(error)")
        }
    }

    @Test(arguments: [
        (#"{"recipients":{"user_ids":["a"],"extra":1},"kind":"k"}"#, "recipients.extra"),
        (#"{"recipients":{"scope":"s","asignee":null},"kind":"k"}"#, "recipients.asignee"),
    ])
    func unknownRecipientsMembersAreRefused(_ text: String, _ field: String) {
        do {
            _ = try scanned(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.status == 400 && error.extra["field"] == field, "\(text): \(error)")
        }
    }

    @Test func assigneeNullIsNotAnAbsentAssignee() throws {
        let nobody = try #require(try scanned(#"{"recipients":{"scope":"s","assignee":null},"kind":"k"}"#))
        let absent = try #require(try scanned(#"{"recipients":{"scope":"s"},"kind":"k"}"#))
        #expect(nobody.recipients.assignee == .some(nil))
        #expect(absent.recipients.assignee == nil)
    }

    @Test(arguments: [
        #"{"recipients":{"user_ids":["a"]},"kind":"k","live":{"channel":"c","data":{"b":1,"a":2}}}"#,  // live: decoder's JSONValue
        #"{"recipients":{"user_ids":["a"]},"kind":"k","ttl_seconds":true}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","push":{"policy":5,"ack_window_ms":10}}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","title":5}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","data":{"n":1}}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","args":{"n":null}}"#,
        #"{"recipients":{"user_ids":["a", 2]},"kind":"k"}"#,
        #"{"recipients":null,"kind":"k"}"#,
        #"{"recipients":{"user_ids":["a"]}}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":null}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","persist":"yes"}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","push":[]}"#,
        #"["not an object"]"#,
    ])
    func leavesEverythingElseToTheDecoder(_ text: String) throws {
        #expect(try scanned(text) == nil)
    }
}
