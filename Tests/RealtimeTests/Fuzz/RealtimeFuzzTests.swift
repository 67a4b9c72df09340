import FuzzSupport
import Testing

/// Seeded mutation loops over the checked-in corpora (Tests/Fuzz/corpus), about two seconds per
/// target; the invariants are the oracles' (`HTTPRequestFuzzOracle`, `WebSocketFuzzOracle`,
/// `UTF8FuzzOracle`). `HERALD_FUZZ_SECONDS` / `HERALD_FUZZ_SEED` lengthen or vary a run
/// (docs/conformance.md "Fuzzing").
@Suite struct RealtimeFuzzTests {
    static let httpDictionary = ["\r\n", "\n", "\r\n\r\n", " HTTP/1.1", " HTTP/1.0", "HTTP/2", "Host: a\r\n", "Content-Length: ",
                                 "Transfer-Encoding: chunked\r\n", "chunked", "gzip", "Expect: 100-continue\r\n",
                                 "Connection: close\r\n", "Connection: keep-alive\r\n", "0\r\n\r\n", "ffffffffffffffff", ";ext=\"v\"",
                                 ":", " : ", "\t", "?", "#", "*", "http://", "@", ",", "OPTIONS ", "GET / ", "POST /v1/publish "]

    @Test func httpRequestParser() {
        let report = runFuzzLoop(target: "http-request",
                                 mutator: FuzzMutator(corpus: FuzzCorpus.load("http-request"), dictionary: Self.httpDictionary, maxLength: 2048),
                                 check: HTTPRequestFuzzOracle.check)
        print(report)
        #expect(report.seeds >= 4, "the seed corpus Tests/Fuzz/corpus/\(report.target) is missing")
        #expect(report.executions > 100)
        #expect(report.failure == nil, "\(report)")
    }

    @Test func webSocketFrameParser() {
        let report = runFuzzLoop(target: "websocket-frames",
                                 mutator: FuzzMutator(corpus: FuzzCorpus.load("websocket-frames"), maxLength: 2048),
                                 check: WebSocketFuzzOracle.check)
        print(report)
        #expect(report.seeds >= 4, "the seed corpus Tests/Fuzz/corpus/\(report.target) is missing")
        #expect(report.executions > 100)
        #expect(report.failure == nil, "\(report)")
    }

    @Test func utf8Validator() {
        let report = runFuzzLoop(target: "utf8",
                                 mutator: FuzzMutator(corpus: FuzzCorpus.load("utf8"), dictionary: ["\u{10FFFF}", "\u{FFFD}", "é", "😀"]),
                                 check: UTF8FuzzOracle.check)
        print(report)
        #expect(report.seeds >= 4, "the seed corpus Tests/Fuzz/corpus/\(report.target) is missing")
        #expect(report.executions > 100)
        #expect(report.failure == nil, "\(report)")
    }
}
