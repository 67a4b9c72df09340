import Testing
@testable import Realtime

/// Request ids are written as bytes (`LoopContext.text(_:base36:)`): the same text the
/// interpolation with `String(_:radix: 36)` gave.
@Suite struct RequestIDTests {
    @Test(arguments: [0, 1, 9, 10, 35, 36, 37, 1295, 1296, 46_655, 1 << 32, 123_456_789_012, UInt64.max - 1, UInt64.max] as [UInt64])
    func theCounterIsWrittenInBase36(_ value: UInt64) {
        let prefix = "r1a2b3c0x"
        #expect(LoopContext.text(Array(prefix.utf8), base36: value) == prefix + String(value, radix: 36))
        #expect(LoopContext.text([], base36: value) == String(value, radix: 36))
    }
}
