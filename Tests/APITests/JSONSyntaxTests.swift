import Testing
@testable import API

@Suite struct JSONSyntaxTests {
    @Test(arguments: ["{}", "[]", "0", "-0.5e+10", "\"a\\u00e9\\n\"", "{\"a\":[1,2,{\"b\":null}],\"c\":true}", " \t\r\n{ \"a\" : 1 } \n",
                      "1E5", "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]"])
    func accepts(_ text: String) {
        #expect(JSONSyntax.check(Array(text.utf8), maxDepth: 64) == nil)
    }

    @Test(arguments: ["", "{\"a\":1,}", "[1,2,]", "[,]", "{,}", "{\"a\"}", "{\"a\":}", "{a:1}", "{'a':1}", "01", "1.", ".5", "-", "1e",
                      "+1", "NaN", "Infinity", "tru", "nul", "\"\\x\"", "\"\\u12g4\"", "\"a\nb\"", "{} {}", "[1 2]", "{\"a\":1 \"b\":2}",
                      "[", "{", "\"abc", "]", "/*c*/{}"])
    func refuses(_ text: String) {
        #expect(JSONSyntax.check(Array(text.utf8), maxDepth: 64) != nil)
    }

    @Test func depthIsBoundedWithoutRecursion() {
        let deep = Array(String(repeating: "[", count: 100_000).utf8)
        #expect(JSONSyntax.check(deep, maxDepth: 64) == .tooDeep)
        let ok = Array((String(repeating: "[", count: 64) + String(repeating: "]", count: 64)).utf8)
        #expect(JSONSyntax.check(ok, maxDepth: 64) == nil)
        let over = Array((String(repeating: "[", count: 65) + String(repeating: "]", count: 65)).utf8)
        #expect(JSONSyntax.check(over, maxDepth: 64) == .tooDeep)
    }

    @Test func reportsWhereItStopped() {
        #expect(JSONSyntax.check(Array("{\"a\":1,}".utf8), maxDepth: 64) == .invalid(offset: 7))
    }
}

@Suite struct JSONSyntaxDuplicateKeyTests {
    @Test func duplicateKeysAreFoundAtEveryDepthWhenAsked() {
        let cases: [(String, String?)] = [
            (#"{"a":1,"a":2}"#, "a"),
            (#"{"a":{"b":1,"b":2}}"#, "b"),
            (#"[{"a":1},{"a":2}]"#, nil),              // siblings are separate objects
            (#"{"a":{"a":1},"b":[{"a":1,"c":{"a":2}}]}"#, nil),
            (#"{"x":[1,{"k":1}],"y":{"k":2},"x":0}"#, "x"),
        ]
        for (text, duplicate) in cases {
            let result = JSONSyntax.check(Array(text.utf8), maxDepth: 64, rejectDuplicateKeys: true)
            if let duplicate {
                guard case .duplicateKey(_, let key)? = result else { Issue.record("\(text): \(String(describing: result))"); continue }
                #expect(key == duplicate)
            } else {
                #expect(result == nil, "\(text)")
            }
            #expect(JSONSyntax.check(Array(text.utf8), maxDepth: 64) == nil, "off by default: \(text)")
        }
    }
}

/// RFC 8259 §8.1: strings are UTF-8; a `\u` escape of a surrogate comes in a high-low pair.
@Suite struct JSONSyntaxTextTests {
    private func check(_ bytes: [UInt8]) -> JSONSyntax.Failure? {
        JSONSyntax.check(bytes, maxDepth: 64, rejectDuplicateKeys: true)
    }

    @Test(arguments: [
        Array(#"{"a":"é ✓ 😀"}"#.utf8),                           // 2, 3 and 4 byte sequences
        [0x22, 0xEF, 0xBF, 0xBD, 0x22],                            // U+FFFD written as itself
        [0x22, 0xF4, 0x8F, 0xBF, 0xBF, 0x22],                      // U+10FFFF
        [0x22, 0xED, 0x9F, 0xBF, 0x22],                            // U+D7FF, just below the surrogates
        Array(#""\ud83d\ude00 \uD83D\uDE00 \u00e9 \uffff""#.utf8),  // pairs in either case
    ])
    func acceptsUTF8AndPairedSurrogates(_ bytes: [UInt8]) {
        #expect(check(bytes) == nil)
    }

    @Test(arguments: [
        [0x22, 0x68, 0xFF, 0xFE, 0x69, 0x22],                      // "h\xff\xfei"
        [0x22, 0xC0, 0xAF, 0x22],                                  // overlong "/"
        [0x22, 0xE0, 0x80, 0xAF, 0x22],                            // overlong, three bytes
        [0x22, 0xED, 0xA0, 0x80, 0x22],                            // an encoded surrogate
        [0x22, 0xE2, 0x82, 0x22],                                  // truncated euro sign
        [0x22, 0xE2, 0x82],                                        // truncated at the end of the body
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],                      // past U+10FFFF
        [0x22, 0x80, 0x22],                                        // a lone continuation byte
        Array(#"{"data":{""#.utf8) + [0xFF] + Array(#"":"1"}}"#.utf8),  // in a key
        Array(#""h\ud83d""#.utf8),                                 // high surrogate at the end
        Array(#""h\ude00x""#.utf8),                                // a lone low surrogate
        Array(#""h\ud83d\u0041""#.utf8),                           // high then not a low
        Array(#""h\ud83dx\ude00""#.utf8),                          // high, a character, low
        Array(#""\ud83d\ud83d""#.utf8),                            // two highs
    ])
    func refusesInvalidUTF8AndLoneSurrogates(_ bytes: [UInt8]) {
        guard case .invalid? = check(bytes) else {
            Issue.record("accepted \(bytes)"); return
        }
    }

    @Test(arguments: [
        (#"{"ki\u006ed":"a","kind":"b"}"#, "kind"),
        (#"{"data":{"a":"1","\u0061":"2"}}"#, "a"),
        (#"{"idempotency_key":"a","idempotency\u005fkey":"b"}"#, "idempotency_key"),
        (#"{"\u00e9":1,"é":2}"#, "é"),
        (#"{"\ud83d\ude00":1,"😀":2}"#, "😀"),
        (#"{"a\/b":1,"a/b":2}"#, "a/b"),
    ])
    func duplicateKeysAreComparedDecoded(_ text: String, _ key: String) {
        guard case .duplicateKey(_, let found)? = check(Array(text.utf8)) else {
            Issue.record("accepted \(text)"); return
        }
        #expect(found == key)
    }

    /// Found by the fuzz loop (Tests/Fuzz/corpus/json-syntax/unicode-keys): keys spelled with
    /// different bytes that are one Swift `String` (canonical equivalence), which `JSONDecoder`
    /// and `JSONSerialization` merge into one dictionary entry.
    @Test(arguments: [
        "{\"\u{E9}\":1,\"e\u{301}\":2}",
        #"{"\u00e9":1,"e\u0301":2}"#,
        "{\"\u{212A}\":1,\"K\":2}",
        "{\"K\":1,\"\u{212A}\":2}",
        "{\"data\":{\"a\":\"1\",\"Ca\u{301}\":\"2\",\"C\u{E1}\":\"3\"}}",
    ])
    func canonicallyEquivalentKeysAreDuplicates(_ text: String) {
        guard case .duplicateKey? = check(Array(text.utf8)) else {
            Issue.record("accepted \(text)"); return
        }
    }

    @Test func canonicallyEquivalentKeysAreDuplicatesInLargeObjectsToo() {
        let keys = (0..<20).map { "\"k\($0)\":1" }.joined(separator: ",")
        #expect(check(Array("{\(keys),\"\u{E9}\":1,\"K\":2}".utf8)) == nil)
        guard case .duplicateKey? = check(Array("{\(keys),\"\u{E9}\":1,\"e\u{301}\":2}".utf8)) else {
            Issue.record("accepted past the linear limit"); return
        }
    }

    /// Found by the fuzz loop (Tests/Fuzz/corpus/publish-body/regression-number-overflow): the
    /// publish scanner passed `1.2e4567890` on as `data`, which Foundation refuses (and a
    /// subscriber would read as infinity).
    @Test(arguments: ["1e400", "-1e400", "[1E309]", "{\"n\":123456789012e4567890}", String(repeating: "9", count: 310)])
    func numbersBeyondADoubleAreRefused(_ text: String) {
        guard case .numberOutOfRange? = check(Array(text.utf8)) else {
            Issue.record("accepted \(text)"); return
        }
    }

    @Test(arguments: ["1e308", "-1.7976931348623157e308", "1e-400", "0." + String(repeating: "0", count: 400) + "1",
                      String(repeating: "9", count: 308), "123456789012345678901234567890"])
    func numbersWithinADoubleAreAccepted(_ text: String) {
        #expect(check(Array(text.utf8)) == nil)
    }

    /// Foundation ignores a leading byte order mark (RFC 8259 §8.1 lets a parser do so); the check
    /// refuses it, as senders must not add one (found by the fuzz loop, documented in docs/api.md).
    @Test func aByteOrderMarkIsRefused() {
        #expect(check([0xEF, 0xBB, 0xBF] + Array("{}".utf8)) == .invalid(offset: 0))
    }

    @Test func keysThatDecodeDifferentlyAreNotDuplicates() {
        #expect(check(Array(#"{"a":1,"\u0062":2,"a\\":3,"a\\\\":4}"#.utf8)) == nil)
    }

    @Test func largeObjectsAreCheckedToo() {
        // Past the linear-search size, and a nested object closing in between.
        let keys = (0..<200).map { "\"k\($0)\":{\"k\($0)\":1}" }
        let distinct = "{" + keys.joined(separator: ",") + "}"
        #expect(check(Array(distinct.utf8)) == nil)
        let twice = "{" + keys.joined(separator: ",") + ",\"k1\\u0037\":2}"
        guard case .duplicateKey(_, let key)? = check(Array(twice.utf8)) else {
            Issue.record("duplicate past the linear limit accepted"); return
        }
        #expect(key == "k17")
        let inner = "{\"o\":{" + (0..<40).map { "\"k\($0)\":1" }.joined(separator: ",") + ",\"k39\":2},\"k39\":1}"
        guard case .duplicateKey(_, "k39")? = check(Array(inner.utf8)) else {
            Issue.record("nested duplicate accepted"); return
        }
        let siblings = "[{" + (0..<40).map { "\"k\($0)\":1" }.joined(separator: ",") + "},{\"k1\":1}]"
        #expect(check(Array(siblings.utf8)) == nil)
    }
}
