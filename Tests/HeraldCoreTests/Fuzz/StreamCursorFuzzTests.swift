import FuzzSupport
import Testing

/// A seeded mutation loop over the cursor corpus (Tests/Fuzz/corpus/stream-cursor), about a
/// second; the invariants are `StreamCursorFuzzOracle`'s.
@Suite struct StreamCursorFuzzTests {
    @Test func parsesOnlyWhatHeraldWrites() {
        let report = runFuzzLoop(target: "stream-cursor", seconds: 1,
                                 mutator: FuzzMutator(corpus: FuzzCorpus.load("stream-cursor"),
                                                      dictionary: ["-", "+", "0", "ffffffff", "18446744073709551615", "18446744073709551616", " "],
                                                      maxLength: 64),
                                 check: StreamCursorFuzzOracle.check)
        print(report)
        #expect(report.seeds >= 4, "the seed corpus Tests/Fuzz/corpus/\(report.target) is missing")
        #expect(report.executions > 100)
        #expect(report.failure == nil, "\(report)")
    }
}
