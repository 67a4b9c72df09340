import FuzzSupport
import Testing

/// Seeded mutation loops over the checked-in corpora (Tests/Fuzz/corpus), about two seconds per
/// target, with Foundation as the oracle for the JSON readers (`JSONSyntaxFuzzOracle`,
/// `PublishBodyFuzzOracle`, `NotificationBodyFuzzOracle`) and for the access-token verifier's
/// claims (`JWTFuzzOracle`). `HERALD_FUZZ_SECONDS` / `HERALD_FUZZ_SEED` lengthen or vary a run
/// (docs/conformance.md "Fuzzing").
@Suite struct APIFuzzTests {
    static let jsonDictionary = ["{", "}", "[", "]", ",", ":", "\"", "\\\"", "\\\\", "\\u0000", "\\ud83d\\ude00", "\\ud800", "\\udc00",
                                 "\\u00e9", "e\\u0301", "\u{212A}", "K", "true", "false", "null", "-0", "1e400", "1.5", "0.0", "1E2",
                                 "12345678901234567890123", "-9223372036854775808", "9223372036854775807", ",]", ",}", "é", "\u{FEFF}"]
    static let bodyDictionary = jsonDictionary + ["\"channel\":", "\"event\":", "\"data\":", "\"retain\":", "\"messages\":",
                                                  "\"recipients\":", "\"user_ids\":", "\"kind\":", "\"title\":", "\"body\":",
                                                  "\"args\":", "\"ttl_seconds\":", "\"expires_at\":", "\"badge\":", "\"push\":",
                                                  "\"ack_window_ms\":", "\"live\":", "\"assignee\":", "\"scope\":", "\"persist\":",
                                                  "\"unread\"", "\"data\":{\"e\\u0301\":\"1\",\"\\u00e9\":\"2\"}"]
    static let jwtDictionary = ["\"alg\":", "\"HS256\"", "\"RS256\"", "\"none\"", "\"NONE\"", "\"crit\":[]", "\"sub\":", "\"exp\":",
                                "\"nbf\":", "\"iat\":", "\"sid\":", "\"channels\":", "\"session_exp\":", "1700000000", "1.7e9",
                                "9223372036854775807", "-9223372036854775809", "1e300", "0.5", "\"\"", "null", "true", "[\"a\"]", ".", "=", "-", "_"]

    private func run(_ target: String, dictionary: [String], check: ([UInt8]) -> (failure: String?, keep: Bool)) {
        let report = runFuzzLoop(target: target, mutator: FuzzMutator(corpus: FuzzCorpus.load(target), dictionary: dictionary), check: check)
        print(report)
        #expect(report.seeds >= 4, "the seed corpus Tests/Fuzz/corpus/\(report.target) is missing")
        #expect(report.executions > 100)
        #expect(report.failure == nil, "\(report)")
    }

    @Test func jsonSyntaxAgainstFoundation() { run("json-syntax", dictionary: Self.jsonDictionary, check: JSONSyntaxFuzzOracle.check) }

    @Test func publishBodyScannerAgainstDecoder() { run("publish-body", dictionary: Self.bodyDictionary, check: PublishBodyFuzzOracle.check) }

    @Test func notificationBodyScannerAgainstDecoder() {
        run("notification-body", dictionary: Self.bodyDictionary, check: NotificationBodyFuzzOracle.check)
    }

    @Test func accessTokenVerifier() { run("jwt", dictionary: Self.jwtDictionary, check: JWTFuzzOracle.check) }
}
