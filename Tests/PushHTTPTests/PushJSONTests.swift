import PushTestSupport
import Testing

@testable import PushHTTP

@Suite struct PushJSONTests {
    @Test func jsonIsCompactSortedAndEscaped() {
        let value = PushJSON.object(["b": .int(-1), "a": .array([.null, .bool(true), .string("x/y \"q\" \\ \n\t\u{1}é")]), "B": .object([:])])
        #expect(value.text == #"{"B":{},"a":[null,true,"x/y \"q\" \\ \n\t\u0001é"],"b":-1}"#)
    }
}
