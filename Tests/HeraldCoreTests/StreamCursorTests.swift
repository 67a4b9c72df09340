import HeraldCore
import Testing

@Suite struct StreamCursorTests {
    @Test func roundTrips() {
        let cursor = StreamCursor(epoch: 0xab, sequence: 42)
        #expect(cursor.description == "000000ab-42")
        #expect(StreamCursor("000000ab-42") == cursor)
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
