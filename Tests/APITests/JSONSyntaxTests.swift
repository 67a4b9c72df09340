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
