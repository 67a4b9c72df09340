import Foundation
import Testing
@testable import API

/// The exposition's label values: escaped as the format asks, the usual plain ones as they are.
@Suite struct PrometheusTextTests {
    @Test("issue 17: a label value is escaped as the three replacements did, and a plain one is kept", arguments: [
        "apns", "", "0.05", "+Inf", #"a\b"#, #"say "hi""#, "two\nlines", #"\"\n"#, "ünïcode \"q\"",
    ])
    func labelValuesAreEscaped(_ value: String) {
        let reference = value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
        #expect(PrometheusText.escaped(value) == reference)
        #expect(Array(PrometheusText.escaped(value).utf8) == Array(reference.utf8))
    }

    @Test func aLineFeedIsEscapedWhereverItIsAndNothingElseChanges() {
        #expect(Array(PrometheusText.escaped("crlf\r\nend").utf8) == Array("crlf\r\\nend".utf8))
        #expect(Array(PrometheusText.escaped("e\u{301}\"").utf8) == Array("e\u{301}\\\"".utf8))
    }

    @Test func samplesCarryTheirEscapedLabels() {
        var text = PrometheusText()
        text.metric("herald_x", "help", type: "gauge", [(["state": "done"], 2), (["reason": "a\"b"], 1.5)])
        #expect(text.output == "# HELP herald_x help\n# TYPE herald_x gauge\nherald_x{state=\"done\"} 2\nherald_x{reason=\"a\\\"b\"} 1.5\n")
    }
}
