import HeraldCore
import Testing
@testable import Realtime

@Suite struct JSONTextTests {
    /// Scalar by scalar, as `quote` always escaped: the fast path must give the same text.
    private func reference(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    @Test(arguments: ["", "plain", "ntf_01hx", "quote \" and \\ back", "line\nbreak\r\ttab", "\u{0}\u{1}\u{1F}\u{7F}",
                      "…ellipsis ‘quotes’ €", "\u{2028}sep\u{2029}", "日本語 🎉", "a\u{2027}b\u{202A}"])
    func quoteEscapesExactlyWhatItDid(_ value: String) {
        #expect(JSONText.quote(value) == reference(value))
        var out = "x"
        JSONText.appendQuoted(value, to: &out)
        #expect(out == "x" + reference(value))
    }

    /// One entry is written without a writer when it needs no escape: the same text either way.
    @Test(arguments: [("*", "Benchmark"), ("", ""), ("é", "ü ✓ 😀"), ("k", "v\n"), ("a\"b", "c"), ("x", "\u{2028}"), ("source", String(repeating: "x", count: 300))])
    func oneEntryIsTheWritersText(_ key: String, _ value: String) {
        var writer = JSONWriter()
        writer.object([key: value])
        #expect(JSONText.object([key: value]) == writer.text)
        #expect(JSONText.object([key: value]) == "{" + reference(key) + ":" + reference(value) + "}")
    }

    @Test func objectsSortKeysAndArraysKeepOrder() {
        #expect(JSONText.object([:]) == "{}")
        #expect(JSONText.object(["k": "v\n"]) == #"{"k":"v\n"}"#)
        #expect(JSONText.object(["b": "2", "a": "1", "é": "3", "Z": "0"]) == #"{"Z":"0","a":"1","b":"2","é":"3"}"#)
        #expect(JSONText.array([]) == "[]")
        #expect(JSONText.array(["b", "a\""]) == #"["b","a\""]"#)
    }

    @Test(arguments: ["", "plain", "ntf_01hx", "quote \" and \\ back", "line\nbreak\r\ttab", "\u{0}\u{1}\u{1F}\u{7F}",
                      "…ellipsis ‘quotes’ €", "\u{2028}sep\u{2029}", "日本語 🎉", "a\u{2027}b\u{202A}", "\u{2028}", "x\u{2029}"])
    func writerQuotesAsQuoteDoes(_ value: String) {
        var writer = JSONWriter(capacity: 1)
        writer.raw("[")
        writer.quoted(value)
        writer.raw(",")
        writer.quotedOrNull(nil)
        writer.raw("]")
        #expect(writer.text == "[" + reference(value) + ",null]")
    }

    @Test func writerNumbersObjectsAndEmbeddedText() {
        var writer = JSONWriter()
        for n: Int64 in [0, 7, -7, 10, 1_733_000_000_123, .max, .min] {
            writer.number(n)
            writer.raw(" ")
        }
        writer.number(-99_999)
        writer.bool(true)
        writer.bool(false)
        writer.embed(#"{"a":1}"#)
        #expect(writer.text == "0 7 -7 10 1733000000123 9223372036854775807 -9223372036854775808 -99999truefalse{\"a\":1}")
        var object = JSONWriter()
        object.object(["b": "2", "a": "1\n", "é": "3", "Z": "0"])
        object.object([:])
        object.object(["k": "v"])
        #expect(object.text == #"{"Z":"0","a":"1\n","b":"2","é":"3"}{}{"k":"v"}"#)
    }
}
