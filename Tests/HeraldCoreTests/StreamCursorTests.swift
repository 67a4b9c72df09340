import HeraldCore
import Testing

@Suite struct StreamCursorTests {
    @Test func roundTrips() {
        let cursor = StreamCursor(epoch: 0xab, sequence: 42)
        #expect(cursor.description == "000000ab-42")
        #expect(StreamCursor("000000ab-42") == cursor)
    }

    @Test(arguments: ["", "abc", "000000ab", "000000ab-", "000000ab--1", "0000000g-1", "000000AB-1", "00000ab-1",
                      "000000ab-1x", "000000ab-1-2", "000000ab-01", "000000ab-123456789012345678901", "000000ab- 1"])
    func rejectsWhatHeraldCouldNotHaveIssued(_ text: String) {
        #expect(StreamCursor(text) == nil)
    }
}
