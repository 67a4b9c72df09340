import PushTestSupport
import Testing

@testable import PushHTTP

@Suite struct RetryAfterTests {
    static let now = 784_111_777  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test(arguments: [
        ("120", 120), (" 7 ", 7), ("0", 0), ("99999999999", 86_400), ("100000", 86_400),
        ("Sun, 06 Nov 1994 08:50:37 GMT", 60),        // IMF-fixdate
        ("Sunday, 06-Nov-94 08:51:37 GMT", 120),       // RFC 850
        ("Sun Nov  6 08:52:37 1994", 180),             // asctime
        ("Sun, 06 Nov 1994 08:00:00 GMT", 0),          // in the past
    ] as [(String, Int)])
    func readable(_ header: String, _ seconds: Int) {
        #expect(RetryAfter.seconds(from: header, now: Self.now) == seconds)
    }

    @Test(arguments: ["", "soon", "-5", "1.5", "Sun, 06 Nov 1994 25:00:00 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT"])
    func unreadable(_ header: String) {
        #expect(RetryAfter.seconds(from: header, now: Self.now) == nil)
    }

    @Test func absent() {
        #expect(RetryAfter.seconds(from: nil, now: Self.now) == nil)
    }

    @Test func calendar() {
        #expect(RetryAfter.httpDate("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(RetryAfter.httpDate("Tue, 29 Feb 2000 12:00:00 GMT") == 951_825_600)
        #expect(RetryAfter.httpDate("Thu, 07 Aug 2025 10:40:00 GMT") == 1_754_563_200)
    }
}
