import Foundation
import Testing
@testable import API
import Realtime

/// `POST /v1/notifications` reads its body before the syntax check (`NotificationBodyScanner.unchecked`):
/// it must take only what the check accepts, read it as the checked path does, and leave every
/// refusal to the checked path, so each 400 stays what it was.
@Suite struct NotificationBodyUncheckedTests {
    private static let bench = #"{"recipients":{"user_ids":["r0"]},"kind":"bench.created","title":"Benchmark","body":"A notification through the choke point","data":{"source":"bench"}}"#

    /// The route's reading before the unchecked path: check, scanner, decoder.
    private func checked(_ request: HTTPRequest) throws(HTTPError) -> NotificationBody {
        try RequestBody.check(request, rejectNumbersBeyondDouble: false)
        if let body = try NotificationBodyScanner.scan(request.body) { return body }
        return try RequestBody.decode(NotificationBody.self, from: request)
    }

    private func request(_ bytes: [UInt8], contentType: String? = "application/json") -> HTTPRequest {
        HTTPRequest(method: .post, target: "/v1/notifications", headers: contentType.map { ["Content-Type": $0] } ?? [:], body: bytes)
    }

    /// Same body, or the same error (status, code, message, field), as the checked path.
    private func expectSameAnswer(_ bytes: [UInt8], contentType: String? = "application/json",
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        let request = request(bytes, contentType: contentType)
        let text = String(decoding: bytes, as: UTF8.self)
        switch (Result { () throws(HTTPError) in try NotificationRoutes.body(request) }, Result { () throws(HTTPError) in try checked(request) }) {
        case (.success(let ours), .success(let before)):
            #expect(ours == before, "\(text)", sourceLocation: sourceLocation)
        case (.failure(let ours), .failure(let before)):
            #expect(ours == before, "\(text): \(ours) / \(before)", sourceLocation: sourceLocation)
        case (let ours, let before):
            Issue.record("\(text): \(ours) / before \(before)", sourceLocation: sourceLocation)
        }
    }

    @Test func theBenchmarkBodyTakesThePath() throws {
        let body = try #require(NotificationBodyScanner.unchecked(Array(Self.bench.utf8)))
        #expect(body.kind == "bench.created" && body.recipients.userIDs == ["r0"] && body.data?.strings == ["source": "bench"])
        expectSameAnswer(Array(Self.bench.utf8))
    }

    /// Bodies the check refuses: the unchecked path leaves each, and the route answers as before.
    @Test(arguments: [
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","title":"a\#u{01}b"}"#,            // a raw control character
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","title":"a\xb"}"#,                   // an unknown escape
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","title":"\ud800"}"#,                 // a lone surrogate
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","title":"\udc00\ud800"}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","title":"\u12"}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","badge":007}"#,                      // a leading zero
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","ttl_seconds":-01}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","ttl_seconds":-}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","kind":"j"}"#,                       // keys twice
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","kin\u0064":"j"}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","scope":null,"scope":"s"}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","scope":"s","scope":null}"#,
        #"{"recipients":{"user_ids":["r0"],"user_ids":["r1"]},"kind":"k"}"#,
        #"{"recipients":{"scope":"s","assignee":null,"assignee":"u"},"kind":"k"}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","push":{"type":"alert","type":null}}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","data":{"a":"1","a":"2"}}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","data":{"\u00e9":"1","e\u0301":"2"}}"#,   // canonically one key
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","title":{"en":"a","en":"b"}}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","data":{"K":"1","\#u{212A}":"2"}}"#,          // the Kelvin sign is K
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","data":{"a"b":"1","a"b":"2"}}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","data":{"# + (0..<20).map { "\"k\($0)\":\"v\"," }.joined() + #""k17":"again"}}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","args":{"n":"1","\u006e":"2"}}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k",}"#,                                 // trailing commas
        #"{"recipients":{"user_ids":["r0",]},"kind":"k"}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k"} x"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k"}}"#,
        "\u{FEFF}" + #"{"recipients":{"user_ids":["r0"]},"kind":"k"}"#,                  // a byte order mark
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","persist":tru}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","persist":truex}"#,
        #"{"recipients":{"user_ids":["r0"]},"kind":"k","title":nul}"#,
        #"{'recipients':{"user_ids":["r0"]},"kind":"k"}"#,
    ])
    func leavesWhatTheCheckRefuses(_ text: String) {
        #expect(NotificationBodyScanner.unchecked(Array(text.utf8)) == nil, "\(text)")
        #expect(JSONSyntax.check(Array(text.utf8), maxDepth: 64, rejectDuplicateKeys: true, rejectNumbersBeyondDouble: false) != nil)
        expectSameAnswer(Array(text.utf8))
    }

    /// Bytes that are not UTF-8 inside a string (a lone continuation byte, an overlong form, an
    /// encoded surrogate, a truncated sequence).
    @Test(arguments: [[0x80], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF4, 0x90, 0x80, 0x80], [0xFF]] as [[UInt8]])
    func leavesBytesThatAreNotUTF8(_ bad: [UInt8]) {
        let bytes = Array(#"{"recipients":{"user_ids":["r0"]},"kind":"k","title":"a"#.utf8) + bad + Array(#"b"}"#.utf8)
        #expect(NotificationBodyScanner.unchecked(bytes) == nil)
        expectSameAnswer(bytes)
    }

    /// Every prefix of a body is refused without reading past its end, as before.
    @Test func everyTruncationAnswersAsBefore() {
        let full = Array(#"{ "recipients" : { "scope" : "s", "assignee" : null }, "kind": "k", "title": {"en": "a\u00e9", "pt": "b"}, "ttl_seconds": 60, "persist": true, "push": {"policy": "always"}, "data": {"x": "y"} }"#.utf8)
        #expect(NotificationBodyScanner.unchecked(full) != nil)
        for end in 0..<full.count {
            let prefix = Array(full[..<end])
            #expect(NotificationBodyScanner.unchecked(prefix) == nil, "\(end)")
            expectSameAnswer(prefix)
        }
        for end in 0..<Self.bench.utf8.count { expectSameAnswer(Array(Self.bench.utf8.prefix(end))) }
    }

    /// Valid bodies of every kind answer as before: taken (the same body) or left (the same 400 or body).
    @Test(arguments: [
        bench,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","title":{"en":"Paid \"now\"","pt-BR":"Pago \u00e9 \ud83d\ude00 é"},"body":"line\nbreak \/"}"#,
        #"{"recipients":{"scope":"s","assignee":null},"kind":"k","expires_at":1767225600000,"badge":7,"persist":false}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","title":"t","push":{"policy":"unless_acked","ack_window_ms":0}}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","ttl_seconds":-0,"badge":"unread","data":{"\u00e9":"1","e":"2"}}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","data":{"a"b":"1","a"c":"2","ab":"3","é":"4","e":"5"}}"#,   // keys alike, all distinct
        #"{"recipients":{"user_ids":["a"]},"kind":"k","data":{"# + (0..<40).map { "\"k\($0)\":\"v\"," }.joined() + #""k":"v"}}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","ttl_seconds":1.5}"#,                  // 400 naming the field
        #"{"recipients":{"user_ids":["a"]},"kind":"k","tilte":"x"}"#,                        // 400 unknown member
        #"{"recipients":{"user_ids":["a"]},"kind":"k","title":5}"#,                          // the decoder's 400
        #"{"recipients":{"user_ids":["a"]},"kind":"k","live":{"channel":"c","data":[1,{"a":null}]}}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","scope":null,"title":"t"}"#,
        #"{"recipients":{"user_ids":["a"]},"kind":"k","badge":1e400}"#,
        "",
        "[]",
        "null",
    ])
    func answersAsBefore(_ text: String) {
        expectSameAnswer(Array(text.utf8))
    }

    /// Keys that only look alike are distinct: the body takes the one-pass path.
    @Test func distinctKeysThatLookAlikeTakeThePath() throws {
        let many = (0..<40).map { "\"k\($0)\":\"v\"" }.joined(separator: ",")
        for data in [#"{"a\"b":"1","a\"c":"2","ab":"3","é":"4","e":"5","\u00e9x":"6"}"#, "{\(many)}"] {
            let text = #"{"recipients":{"user_ids":["a"]},"kind":"k","data":"# + data + "}"
            #expect(NotificationBodyScanner.unchecked(Array(text.utf8)) != nil, "\(text)")
            expectSameAnswer(Array(text.utf8))
        }
    }

    @Test func theContentTypeIsCheckedFirst() {
        expectSameAnswer(Array(Self.bench.utf8), contentType: "text/plain")
        expectSameAnswer(Array(Self.bench.utf8), contentType: "application/merge-patch+json; charset=utf-8")
        expectSameAnswer(Array(Self.bench.utf8), contentType: nil)
        expectSameAnswer(Array("{".utf8), contentType: "text/plain")
    }
}
