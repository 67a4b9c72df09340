import HeraldCore
import Testing

@Suite struct StreamCursorTests {
    @Test func roundTrips() {
        let cursor = StreamCursor(epoch: 0xab, sequence: 42)
        #expect(cursor.description == "000000ab-42")
        #expect(StreamCursor("000000ab-42") == cursor)
    }

    /// The text is written digit by digit: every hex digit of the epoch, the padding, and every
    /// length of sequence (one digit to UInt64.max's twenty, each power of ten's edge).
    @Test(arguments: [UInt32(0), 0x9, 0xa, 0xf0, 0x1234_5678, 0x9abc_def0, 0xffff_ffff])
    func textMatchesTheRadixConversions(epoch: UInt32) {
        var sequences: [UInt64] = [0, UInt64.max, UInt64.max - 1]
        var power: UInt64 = 1
        while power <= UInt64.max / 10 { sequences += [power - 1, power, power * 10 - 1]; power *= 10 }
        for sequence in sequences {
            let hex = String(epoch, radix: 16)
            let expected = String(repeating: "0", count: 8 - hex.count) + hex + "-" + String(sequence)
            let cursor = StreamCursor(epoch: epoch, sequence: sequence)
            #expect(cursor.description == expected)
            #expect(StreamCursor(cursor.description) == cursor)
        }
    }

    @Test(arguments: ["", "abc", "000000ab", "000000ab-", "000000ab--1", "0000000g-1", "000000AB-1", "00000ab-1",
                      "000000ab-1x", "000000ab-1-2", "000000ab-01", "000000ab-123456789012345678901", "000000ab- 1",
                      // Found by the fuzz loop (Tests/Fuzz/corpus/stream-cursor/regression-signed-epoch): a sign
                      // before the epoch's hex digits.
                      "+f1c2a9b-1042", "+0000000-0"])
    func rejectsWhatHeraldCouldNotHaveIssued(_ text: String) {
        #expect(StreamCursor(text) == nil)
    }
}
