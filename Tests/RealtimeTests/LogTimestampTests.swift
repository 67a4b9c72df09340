import Foundation
@testable import Realtime
import Testing

/// The log's `ts` is formatted without Foundation's date styles (issue 17): it must stay the
/// string that style wrote.
@Suite struct LogTimestampTests {
    /// Foundation's string for the middle of that millisecond (it truncates, and a `Double` of
    /// the millisecond's start can fall a hair below it).
    private func foundation(_ milliseconds: Int64) -> String {
        Date(timeIntervalSince1970: (Double(milliseconds) + 0.5) / 1000)
            .formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    @Test func knownInstants() {
        #expect(Log.timestamp(unixMilliseconds: 0) == "1970-01-01T00:00:00.000Z")
        #expect(Log.timestamp(unixMilliseconds: 1_764_642_187_723) == "2025-12-02T02:23:07.723Z")
        #expect(Log.timestamp(unixMilliseconds: 1_709_251_199_999) == "2024-02-29T23:59:59.999Z", "a leap day's last ms")
        #expect(Log.timestamp(unixMilliseconds: 253_402_300_799_000) == "9999-12-31T23:59:59.000Z")
        #expect(Log.timestamp(unixMilliseconds: -1) == "1969-12-31T23:59:59.999Z")
    }

    @Test func matchesFoundationsISO8601StyleOverManyInstants() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let milliseconds = Int64.random(in: 0...4_102_444_800_000, using: &generator)   // 1970–2100
            #expect(Log.timestamp(unixMilliseconds: milliseconds) == foundation(milliseconds), "\(milliseconds)")
        }
    }
}
