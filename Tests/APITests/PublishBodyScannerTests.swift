import Foundation
import Testing
@testable import API

/// The publish fast path reads what the decoder would, and steps aside for everything else.
@Suite struct PublishBodyScannerTests {
    func scan(_ text: String) -> PublishBodyScanner.Message? {
        let bytes = Array(text.utf8)
        #expect(JSONSyntax.check(bytes, maxDepth: 64) == nil, "test bodies are valid JSON: \(text)")
        guard case .value(let message) = PublishBodyScanner.message(bytes) else { return nil }
        return message
    }

    func batch(_ text: String) -> [PublishBodyScanner.Message]? {
        guard case .value(let messages) = PublishBodyScanner.batch(Array(text.utf8)) else { return nil }
        return messages
    }

    /// Same JSON value, compared through the decoder's `JSONValue` (keys sorted, strings unescaped).
    func sameJSON(_ a: String, _ b: String) throws -> Bool {
        try JSONDecoder().decode(JSONValue.self, from: Data(a.utf8)) == JSONDecoder().decode(JSONValue.self, from: Data(b.utf8))
    }

    @Test func readsTheCommonShape() throws {
        let m = try #require(scan(#" { "channel" : "user:42", "event":"status", "data" : { "a" : [1, 2.5, "x y", {"b": null}], "c": "q\"uo\\te" } , "retain" : true } "#))
        #expect(m.channel == "user:42" && m.event == "status" && m.retain == true)
        #expect(m.data == #"{"a":[1,2.5,"x y",{"b":null}],"c":"q\"uo\\te"}"#)
        #expect(!m.data.contains("\n") && !m.data.contains("\r"))
    }

    @Test func scalarsAndNullEvent() throws {
        for (body, data) in [(#"{"channel":"c","data":42}"#, "42"), (#"{"channel":"c","data":"s p"}"#, #""s p""#),
                             (#"{"channel":"c","data":null,"event":null}"#, "null"),
                             (#"{"data":[ ],"channel":"c"}"#, "[]"), (#"{"channel":"c","data":-1.5e3}"#, "-1.5e3")] {
            let m = try #require(scan(body), "\(body)")
            #expect(m.data == data && m.event == nil, "\(body)")
            #expect(try sameJSON(m.data, data))
        }
    }

    @Test func anythingUnusualTakesTheSlowPath() {
        for body in [#"{"data":1}"#,                          // no channel: the decoder names the field
                     #"{"channel":"c"}"#,                     // no data
                     #"{"channel":1,"data":1}"#,              // wrong type
                     #"{"channel":"c","data":1,"retain":"yes"}"#,
                     #"{"channel":"c","data":1,"event":3}"#,
                     #"[{"channel":"c","data":1}]"#, #"{}"#] {
            #expect(scan(body) == nil, "\(body)")
        }
    }

    @Test func batchesAndTheirSlowPath() throws {
        let found = try #require(batch(#"{ "messages" : [ {"channel":"a","data":{"n":1}} , {"channel":"b","event":"e","data":[1, 2]} ] }"#))
        #expect(found.map(\.channel) == ["a", "b"] && found.map(\.data) == [#"{"n":1}"#, "[1,2]"])
        #expect(batch(#"{"messages":[]}"#)?.isEmpty == true)
        #expect(batch(#"{"messages":[{"channel":"a"}]}"#) == nil)
        #expect(batch(#"{"messages":[],"x":1}"#) == nil)
    }

    @Test func escapesInNamesAreDecodedAndDuplicateKeysRefused() throws {
        let m = try #require(scan(#"{"channel":"user:\u0061\/b","event":"st\u00e9","data":1}"#))
        #expect(m.channel == "user:a/b" && m.event == "sté")
        let emoji = try #require(scan(#"{"channel":"\ud83d\ude00","data":1}"#))
        #expect(emoji.channel == "😀")
        guard case .duplicate(let field) = PublishBodyScanner.message(Array(#"{"channel":"c","data":1,"data":2}"#.utf8)) else {
            Issue.record("duplicate data accepted"); return
        }
        #expect(field == "data")
        guard case .duplicate(let inBatch) = PublishBodyScanner.batch(Array(#"{"messages":[{"channel":"c","data":1},{"channel":"c","channel":"d","data":1}]}"#.utf8)) else {
            Issue.record("duplicate channel accepted"); return
        }
        #expect(inBatch == "messages[1].channel")
    }

    /// A member a message does not have is refused as the scanner meets it, naming where.
    @Test func unknownMembersAreNamed() {
        guard case .unknown(let key, let path) = PublishBodyScanner.message(Array(#"{"channel":"g:1","data":1,"retian":true}"#.utf8)) else {
            Issue.record("retian accepted"); return
        }
        #expect(key == "retian" && path == "")
        guard case .unknown(let key2, let path2) = PublishBodyScanner.batch(Array(#"{"messages":[{"channel":"c","data":1},{"channel":"c","data":1,"x":null}]}"#.utf8)) else {
            Issue.record("x accepted in a batch"); return
        }
        #expect(key2 == "x" && path2 == "messages[1]")
        let error = RequestBody.unknownMember("retian", at: "", in: PublishRoutes.MessageBody.members)
        #expect(error.status == 400 && error.extra["field"] == "retian" && error.message.contains("channel, event, data, retain"))
        #expect(RequestBody.unknownMember("x", at: "messages[1]", in: PublishRoutes.MessageBody.members).extra["field"] == "messages[1].x")
    }

    @Test func dataIsCarriedAsSent() throws {
        let m = try #require(scan(#"{"channel":"c","data":{"b":1,"a":123456789012345678901234567890,"s":"\u00e9"}}"#))
        #expect(m.data == #"{"b":1,"a":123456789012345678901234567890,"s":"\u00e9"}"#)
    }

    /// Random documents: the compact text is the same JSON value as the original data.
    @Test func randomDataKeepsItsValue() throws {
        var rng = SystemRandomNumberGenerator()
        func value(_ depth: Int) -> String {
            let pick = depth > 3 ? Int.random(in: 0..<4, using: &rng) : Int.random(in: 0..<6, using: &rng)
            let space = [" ", "", "\n", "\t "][Int.random(in: 0..<4, using: &rng)]
            switch pick {
            case 0: return String(Int.random(in: -1_000_000...1_000_000, using: &rng))
            case 1: return ["true", "false", "null", "0.25", "1e-3"][Int.random(in: 0..<5, using: &rng)]
            case 2: return ["\"\"", "\"a b\"", "\"é \\n \\\" \\\\ \\u00e9\"", "\"{[,]}:\""][Int.random(in: 0..<4, using: &rng)]
            case 3: return "\"x\(Int.random(in: 0..<100, using: &rng))\""
            case 4: return "[" + space + (0..<Int.random(in: 0..<4, using: &rng)).map { _ in value(depth + 1) }.joined(separator: space + "," + space) + space + "]"
            default:
                return "{" + space + (0..<Int.random(in: 0..<4, using: &rng)).map { k in "\"k\(k)\"" + space + ":" + space + value(depth + 1) }
                    .joined(separator: "," + space) + space + "}"
            }
        }
        for _ in 0..<300 {
            let data = value(0)
            let m = try #require(scan("{\"channel\":\"c\",\"data\":" + data + "}"), "\(data)")
            #expect(try sameJSON(m.data, data), "\(data) -> \(m.data)")
            #expect(!m.data.contains("\n"))
        }
    }
}
