import Foundation
import Testing
@testable import API

/// The notification fast path reads what `JSONDecoder` would, and steps aside for everything else.
@Suite struct NotificationBodyScannerTests {
    private func scanned(_ text: String) -> NotificationBody? {
        let bytes = Array(text.utf8)
        #expect(JSONSyntax.check(bytes, maxDepth: 64, rejectDuplicateKeys: true) == nil, "test bodies are valid JSON: \(text)")
        return NotificationBodyScanner.scan(bytes)
    }

    private func decoded(_ text: String) throws -> NotificationBody {
        try JSONDecoder().decode(NotificationBody.self, from: Data(text.utf8))
    }

    @Test(arguments: [
        // The choke-point benchmark's body.
        #"{"recipients":{"user_ids":["r0"]},"kind":"bench.created","title":"Benchmark","body":"A notification through the choke point","data":{"source":"bench"}}"#,
        // Every field, whitespace, escapes and non-ASCII text, nulls for optional fields.
        """
        { "recipients" : { "scope" : "store:1", "permission" : "orders.read", "user_ids" : null, "extra": [1, {"a": null}] },
          "kind": "orders.paid", "scope": null, "title": {"en": "Paid \\"now\\"", "pt-BR": "Pago \\u00e9 \\ud83d\\ude00"},
          "body": "line\\nbreak \\/ slash", "args": {"n": "3"}, "data": {}, "collapse_key": "c", "thread_id": "t",
          "sound": "ding", "android_channel_id": "ch", "priority": "high", "ttl_seconds": 3600, "badge": "unread",
          "persist": false, "push": {"policy": "unless_acked", "ack_window_ms": 1500, "type": null, "future": true},
          "audience": "staff", "track_opens": true, "idempotency_key": "k-1", "unknown": {"deep": [true, false, null]},
          "live": null }
        """,
        #"{"recipients":{"scope":"s","assignee":null},"kind":"k","expires_at":1767225600000,"badge":7}"#,
        #"{"recipients":{"scope":"s","assignee":"u9"},"kind":"k","expires_at":"2026-12-01T10:00:00Z","badge":-3}"#,
        #"{"kind":"k","recipients":{"user_ids":[]},"ttl_seconds":0,"push":{}}"#,
        #"{"recipients":{"user_ids":["a","b","a"]},"kind":"k","ttl_seconds":-9223372036854775808}"#,
        #"{"recipients":{},"kind":"","title":"\u0000"}"#,
    ])
    func readsWhatTheDecoderReads(_ text: String) throws {
        let body = try #require(scanned(text), "the scanner takes it")
        #expect(body == (try decoded(text)))
    }

    @Test func assigneeNullIsNotAnAbsentAssignee() throws {
        let nobody = try #require(scanned(#"{"recipients":{"scope":"s","assignee":null},"kind":"k"}"#))
        let absent = try #require(scanned(#"{"recipients":{"scope":"s"},"kind":"k"}"#))
        #expect(nobody.recipients.assignee == .some(nil))
        #expect(absent.recipients.assignee == nil)
    }

    @Test(arguments: [
        #"{"recipients":{"user_ids":["a"]},"kind":"k","live":{"channel":"c","data":{"b":1,"a":2}}}"#,  // live: decoder's JSONValue
        #"{"recipients":{"user_ids":["a"]},"kind":"k","ttl_seconds":1.0}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","ttl_seconds":1e3}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","expires_at":99999999999999999999}"#,
        #"{"recipients":{"user_ids":["a"]},"kin\u0064":"k"}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","data":{"d\u0061":"x"}}"#,
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
    func leavesEverythingElseToTheDecoder(_ text: String) {
        #expect(scanned(text) == nil)
    }
}
