import Testing
@testable import API

/// `JSONScanner.wholeNumber`: a number's value, when whole and within 64 bits, however written
/// (ADR 0029), worked out exactly from the digits.
@Suite struct JSONScannerWholeNumberTests {
    /// The value and where the scan stopped, for `text` followed by a comma.
    func read(_ text: String) -> (Int64?, Int) {
        let bytes = Array((text + ",").utf8)
        var i = 0
        return (JSONScanner.wholeNumber(bytes, &i), i)
    }

    @Test(arguments: [
        ("1000", 1000), ("1000.0", 1000), ("1e3", 1000), ("1E3", 1000), ("1.0E3", 1000), ("1e+3", 1000), ("10000e-1", 1000),
        ("0.1e4", 1000), ("-2.50e1", -25), ("0", 0), ("-0", 0), ("-0.0", 0), ("0e99999999999999999999", 0), ("0.000e-7", 0),
        // Exact where a double is not: 2^53 + 1, and the ends of Int64.
        ("9007199254740993.0", 9_007_199_254_740_993), ("9.007199254740993e15", 9_007_199_254_740_993),
        ("9223372036854775807.000", Int64.max), ("-9.223372036854775808e18", Int64.min), ("-9223372036854775808", Int64.min),
    ] as [(String, Int64)])
    func aWholeValueIsItsDigits(_ text: String, _ value: Int64) {
        let (read, end) = read(text)
        #expect(read == value, "\(text)")
        #expect(end == text.utf8.count, "\(text): stops at the comma")
    }

    @Test(arguments: ["1000.5", "1e-3", "1.5", "0.1", "9223372036854775808", "9223372036854775807.5", "9.3e18", "-9223372036854775809.0",
                      "1e19", "1e400", "1e99999999999999999999", "-", "01", "01.0", "1.", ".5", "1e", "1e+", "\"1\"", "true", "null"])
    func anyOtherIsNilAndLeavesTheIndex(_ text: String) {
        let (read, end) = read(text)
        #expect(read == nil && end == 0, "\(text)")
    }
}

extension JSONScannerWholeNumberTests {
    /// A body's worth of zeros around one digit: judged exactly, and in one pass over the digits
    /// (leading zeros were dropped one array shift at a time, ~10^10 moves for this one).
    @Test func aLongRunOfZerosIsReadInOnePass() {
        let zeros = String(repeating: "0", count: 200_000)
        #expect(read("0.\(zeros)1").0 == nil)
        #expect(read("0.\(zeros)1e200001").0 == 1)
        #expect(read("1.\(zeros)").0 == 1)
    }
}
