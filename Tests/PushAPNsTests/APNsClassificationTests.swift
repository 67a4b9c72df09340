import Foundation
import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushAPNs

/// One APNs answer and the verdict expected for it, written out independently of the table.
struct APNsCase: Sendable, CustomTestStringConvertible {
    let status: Int
    let reason: String?
    let extraBody: String
    let headers: [(String, String)]
    let expected: PushOutcome
    let rule: PushRule?

    init(_ status: Int, _ reason: String?, _ expected: PushOutcome, _ rule: PushRule?, extraBody: String = "", headers: [(String, String)] = []) {
        self.status = status
        self.reason = reason
        self.extraBody = extraBody
        self.headers = headers
        self.expected = expected
        self.rule = rule
    }

    var response: PushHTTPResponse {
        let body = reason.map { #"{"reason":"\#($0)""# + extraBody + "}" } ?? extraBody
        return PushHTTPResponse(status: status, headers: headers + [("content-type", "application/json")], body: Array(body.utf8))
    }

    var testDescription: String { "\(status) \(reason ?? "(no reason)")" }
}

private func delete(_ reason: String, _ timestamp: Int64? = nil) -> PushOutcome { .deleteDevice(reason: reason, providerTimestampMs: timestamp) }
private func retry(_ reason: String, _ after: Int? = nil) -> PushOutcome { .retry(afterSeconds: after, reason: reason) }
private func dead(_ reason: String) -> PushOutcome { .deadLetter(reason: reason) }

let apnsCases: [APNsCase] = [
    // Success.
    APNsCase(200, nil, .delivered(providerMessageID: "eabeae54-14a8-11e5-b60b-1697f925ec7b"), nil, headers: [("Apns-Id", "eabeae54-14a8-11e5-b60b-1697f925ec7b")]),
    // Dead tokens (DV-6), 410 timestamp carried (PU-5c).
    APNsCase(410, "Unregistered", delete("Unregistered", 1_754_563_200_000), .deleteDevice, extraBody: #","timestamp":1754563200000"#),
    APNsCase(410, "ExpiredToken", delete("ExpiredToken"), .deleteDevice),
    APNsCase(400, "BadDeviceToken", delete("BadDeviceToken"), .deleteDevice),
    APNsCase(400, "DeviceTokenNotForTopic", delete("DeviceTokenNotForTopic"), .deleteDevice),
    // Stale JWT.
    APNsCase(403, "ExpiredProviderToken", .refreshAuthAndRetryOnce(reason: "ExpiredProviderToken"), .refreshAuthAndRetryOnce),
    // Configuration.
    APNsCase(403, "InvalidProviderToken", dead("InvalidProviderToken"), .deadLetterConfiguration),
    APNsCase(403, "MissingProviderToken", dead("MissingProviderToken"), .deadLetterConfiguration),
    APNsCase(403, "BadEnvironmentKeyIdInToken", dead("BadEnvironmentKeyIdInToken"), .deadLetterConfiguration),
    APNsCase(403, "BadEnvironmentKeyInToken", dead("BadEnvironmentKeyInToken"), .deadLetterConfiguration),
    APNsCase(403, "BadCertificate", dead("BadCertificate"), .deadLetterConfiguration),
    APNsCase(403, "BadCertificateEnvironment", dead("BadCertificateEnvironment"), .deadLetterConfiguration),
    APNsCase(403, "Forbidden", dead("Forbidden"), .deadLetterConfiguration),
    APNsCase(400, "TopicDisallowed", dead("TopicDisallowed"), .deadLetterConfiguration),
    APNsCase(400, "BadTopic", dead("BadTopic"), .deadLetterConfiguration),
    APNsCase(400, "MissingTopic", dead("MissingTopic"), .deadLetterConfiguration),
    // New connection, then retry.
    APNsCase(403, "UnrelatedKeyIdInToken", retry("UnrelatedKeyIdInToken"), .reconnectAndRetry),
    APNsCase(429, "TooManyProviderTokenUpdates", retry("TooManyProviderTokenUpdates"), .reconnectAndRetry),
    APNsCase(400, "IdleTimeout", retry("IdleTimeout"), .reconnectAndRetry),
    APNsCase(503, "Shutdown", retry("Shutdown"), .reconnectAndRetry),
    // Transient, Retry-After honoured in both forms.
    APNsCase(429, "TooManyRequests", retry("TooManyRequests", 30), .retry(minimumDelay: nil), headers: [("retry-after", "30")]),
    APNsCase(500, "InternalServerError", retry("InternalServerError"), .retry(minimumDelay: nil)),
    APNsCase(503, "ServiceUnavailable", retry("ServiceUnavailable", 120), .retry(minimumDelay: nil), headers: [("Retry-After", "Thu, 07 Aug 2025 10:42:00 GMT")]),
    // Our bugs.
    APNsCase(400, "BadCollapseId", dead("BadCollapseId"), .deadLetterRequest),
    APNsCase(400, "BadExpirationDate", dead("BadExpirationDate"), .deadLetterRequest),
    APNsCase(400, "BadMessageId", dead("BadMessageId"), .deadLetterRequest),
    APNsCase(400, "BadPriority", dead("BadPriority"), .deadLetterRequest),
    APNsCase(400, "DuplicateHeaders", dead("DuplicateHeaders"), .deadLetterRequest),
    APNsCase(400, "InvalidPushType", dead("InvalidPushType"), .deadLetterRequest),
    APNsCase(400, "MissingDeviceToken", dead("MissingDeviceToken"), .deadLetterRequest),
    APNsCase(400, "PayloadEmpty", dead("PayloadEmpty"), .deadLetterRequest),
    APNsCase(413, "PayloadTooLarge", dead("PayloadTooLarge"), .deadLetterRequest),
    APNsCase(404, "BadPath", dead("BadPath"), .deadLetterRequest),
    APNsCase(405, "MethodNotAllowed", dead("MethodNotAllowed"), .deadLetterRequest),
    // Unknown reasons / no body: by status, raw reason kept.
    APNsCase(410, "SomethingNew", delete("SomethingNew", 5), .deleteDevice, extraBody: #","timestamp":5"#),
    APNsCase(403, "NewAuthProblem", dead("NewAuthProblem"), .deadLetterConfiguration),
    APNsCase(429, nil, retry("http_429"), .retry(minimumDelay: nil)),
    APNsCase(502, nil, retry("http_502"), .retry(minimumDelay: nil), extraBody: "<html>Bad Gateway</html>"),
    APNsCase(400, "NewBadThing", dead("NewBadThing"), .deadLetterRequest),
    APNsCase(301, nil, dead("http_301"), .deadLetterConfiguration),
    APNsCase(600, nil, retry("http_600"), .retry(minimumDelay: nil)),
]

@Suite struct APNsClassificationTests {
    /// 2025-08-07 10:40:00 UTC; the HTTP-date case is two minutes later.
    static let now = 1_754_563_200

    @Test(arguments: apnsCases) func row(_ testCase: APNsCase) {
        let classification = classifyAPNs(response: testCase.response, now: Self.now)
        #expect(classification.outcome == testCase.expected)
        #expect(classification.rule == testCase.rule)
        #expect(classification.status == testCase.status)
        #expect(classification.reconnect == (testCase.rule == .reconnectAndRetry))
        #expect(classification.isConfigurationError == (testCase.rule == .deadLetterConfiguration))
    }

    @Test func everyRowAndEveryKnownReasonIsExercised() {
        var covered = Set<Int>()
        for testCase in apnsCases where testCase.status >= 300 {
            let body = try? JSONDecoder().decode(APNsErrorBody.self, from: Data(testCase.response.body))
            if let index = APNsClassificationTable.matchingRow(reason: body?.reason.map(APNsErrorReason.init(rawValue:)), status: testCase.status) {
                covered.insert(index)
            }
        }
        #expect(covered == Set(APNsClassificationTable.rows.indices))
        let reasonsInTable = APNsClassificationTable.rows.compactMap { row -> APNsErrorReason? in
            if case .reason(let reason) = row.match { return reason } else { return nil }
        }
        #expect(Set(reasonsInTable) == Set(APNsErrorReason.known), "every documented reason has its own row")
    }

    @Test func timestampAsFloatOrStringIsRead() {
        #expect(classifyAPNs(response: response(410, #"{"reason":"Unregistered","timestamp":1.7545632e12}"#)).outcome == delete("Unregistered", 1_754_563_200_000))
        #expect(classifyAPNs(response: response(410, #"{"reason":"Unregistered","timestamp":"17"}"#)).outcome == delete("Unregistered", 17))
        #expect(classifyAPNs(response: response(410, #"{"reason":"Unregistered","timestamp":null}"#)).outcome == delete("Unregistered"))
    }
}
