import Testing
@testable import Realtime

/// Issue 18: the reconnect advice is spread per connection, so a restart does not bring every
/// client back in the same instant.
@Suite struct RetryAdviceTests {
    /// Connection ids as `LoopContext.makeConnectionID` makes them: epoch, loop, counter.
    private let ids = (1...2000).map { "c6f1c2a9b0x\(String($0, radix: 36))" }

    @Test func eachConnectionGetsADelayWithinHalfToOneAndAHalfTimesTheBase() {
        let configuration = HTTPServerConfiguration()
        let delays = ids.map { configuration.retryMilliseconds(for: $0) }
        #expect(delays.allSatisfy { (1500...4500).contains($0) })
        // Deterministic per connection.
        #expect(ids.map { configuration.retryMilliseconds(for: $0) } == delays)
    }

    @Test func delaysAreSpreadAcrossTheWholeWindow() {
        let configuration = HTTPServerConfiguration()
        var buckets = [Int](repeating: 0, count: 10)
        for id in ids {
            let delay = configuration.retryMilliseconds(for: id)
            buckets[min((delay - 1500) * 10 / 3001, 9)] += 1
        }
        // 2000 ids over 10 buckets: about 200 each; a clustering hash would leave some nearly empty.
        #expect(buckets.allSatisfy { (120...280).contains($0) }, "\(buckets)")
        #expect(Set(ids.map { configuration.retryMilliseconds(for: $0) }).count > 1000)
    }

    @Test func theBaseIsConfigurable() {
        var configuration = HTTPServerConfiguration()
        configuration.retryMilliseconds = 1000
        #expect(ids.allSatisfy { (500...1500).contains(configuration.retryMilliseconds(for: $0)) })
        configuration.retryMilliseconds = 0
        #expect(configuration.retryMilliseconds(for: "c1") == 0)
    }
}
