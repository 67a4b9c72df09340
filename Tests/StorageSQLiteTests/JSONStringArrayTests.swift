import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct JSONStringArrayTests {
    @Test(arguments: [
        [], ["a"], ["r0", "user-1", "a.b:c_d"], ["with space", "~!@#$%^&*()"],
        ["quote\"", "back\\slash"], ["a/b"], ["tab\t", "nul\u{0}"], ["ünï", "日本", "\u{2028}"], ["\u{7F}"],
        // Issue 17: ids longer than a small string, and a plain run ended by one that needs JSONEncoder.
        ["dev_0123456789abcdefghijklmnopqrstuv", "x", "dev_ZYXWVUTSRQPONMLKJIHGFEDCBA9876"], ["plain-long-id-0000000000000000", "then/slash"],
        (0..<300).map { "device-\($0)-0123456789abcdef" },
    ])
    func encodesAsJSONEncoderDoes(_ strings: [String]) throws {
        let expected = String(decoding: try JSONEncoder().encode(strings), as: UTF8.self)
        #expect(JSONStringArray.encode(strings) == expected)
        #expect(try JSONStringArray.decode(JSONStringArray.encode(strings), column: "c") == strings)
    }
}
