import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct JSONStringArrayTests {
    @Test(arguments: [
        [], ["a"], ["r0", "user-1", "a.b:c_d"], ["with space", "~!@#$%^&*()"],
        ["quote\"", "back\\slash"], ["a/b"], ["tab\t", "nul\u{0}"], ["ünï", "日本", "\u{2028}"], ["\u{7F}"],
    ])
    func encodesAsJSONEncoderDoes(_ strings: [String]) throws {
        let expected = String(decoding: try JSONEncoder().encode(strings), as: UTF8.self)
        #expect(JSONStringArray.encode(strings) == expected)
        #expect(try JSONStringArray.decode(JSONStringArray.encode(strings), column: "c") == strings)
    }
}
