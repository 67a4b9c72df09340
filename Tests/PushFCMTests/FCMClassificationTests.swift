import Foundation
import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushFCM

struct FCMCase: Sendable, CustomTestStringConvertible {
    let name: String
    let status: Int
    let body: String
    let headers: [(String, String)]
    let expected: PushOutcome
    let rule: PushRule?

    init(_ name: String, _ status: Int, _ body: String, _ expected: PushOutcome, _ rule: PushRule?, headers: [(String, String)] = []) {
        self.name = name
        self.status = status
        self.body = body
        self.headers = headers
        self.expected = expected
        self.rule = rule
    }

    var response: PushHTTPResponse { PushHTTPResponse(status: status, headers: headers, body: Array(body.utf8)) }
    var testDescription: String { name }
}

private let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
private let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

/// A google.rpc.Status body; `details` are raw JSON objects in the given order.
private func status(_ code: Int, _ status: String, _ message: String, _ details: [String] = []) -> String {
    #"{"error":{"code":\#(code),"message":"\#(message)","status":"\#(status)","details":[\#(details.joined(separator: ","))]}}"#
}
private func fcmError(_ code: String) -> String { #"{"@type":"\#(fcmErrorType)","errorCode":"\#(code)"}"# }
private func badRequest(_ field: String) -> String { #"{"@type":"\#(badRequestType)","fieldViolations":[{"field":"\#(field)","description":"Invalid registration token"}]}"# }
private func delete(_ reason: String) -> PushOutcome { .deleteDevice(reason: reason, providerTimestampMs: nil) }
private func retry(_ reason: String, _ after: Int? = nil) -> PushOutcome { .retry(afterSeconds: after, reason: reason) }
private func dead(_ reason: String) -> PushOutcome { .deadLetter(reason: reason) }

let google502 = """
<!DOCTYPE html><html lang=en><meta charset=utf-8><title>Error 502 (Server Error)!!1</title><p><b>502.</b> <ins>That’s an error.</ins><p>The server encountered a temporary error and could not complete your request.<p>Please try again in 30 seconds.  <ins>That’s all we know.</ins>
"""

let fcmCases: [FCMCase] = [
    FCMCase("200 name", 200, #"{"name":"projects/herald-test/messages/0:1500415314455276%31bd1c9631bd1c96"}"#,
            .delivered(providerMessageID: "projects/herald-test/messages/0:1500415314455276%31bd1c9631bd1c96"), nil),
    FCMCase("200 without JSON", 200, "", .delivered(providerMessageID: nil), nil),
    // The name is read without a decoder only from exactly {"name":"…"}; every other body through
    // JSONDecoder, with the same result.
    FCMCase("200 name, spaced and on lines", 200, "{\n  \"name\" : \"projects/p/messages/1\"\n}\n",
            .delivered(providerMessageID: "projects/p/messages/1"), nil),
    FCMCase("200 name with an escape", 200, #"{"name":"projects\/p/messages/\u0032"}"#,
            .delivered(providerMessageID: "projects/p/messages/2"), nil),
    FCMCase("200 name and another member", 200, #"{"name":"projects/p/messages/3","x":1}"#,
            .delivered(providerMessageID: "projects/p/messages/3"), nil),
    FCMCase("200 another member first", 200, #"{"x":[1],"name":"projects/p/messages/4"}"#,
            .delivered(providerMessageID: "projects/p/messages/4"), nil),
    FCMCase("200 name not a string", 200, #"{"name":4}"#, .delivered(providerMessageID: nil), nil),
    FCMCase("200 other key of four letters", 200, #"{"nome":"projects/p/messages/5"}"#, .delivered(providerMessageID: nil), nil),
    FCMCase("200 unterminated", 200, #"{"name":"projects/p/messages/6""#, .delivered(providerMessageID: nil), nil),
    FCMCase("200 trailing garbage", 200, #"{"name":"projects/p/messages/7"} x"#, .delivered(providerMessageID: nil), nil),
    FCMCase("200 non-ASCII name", 200, #"{"name":"projects/p/messages/é"}"#,
            .delivered(providerMessageID: "projects/p/messages/é"), nil),
    // INVALID_ARGUMENT about the token: both recorded forms, details in either order.
    FCMCase("400 invalid token (Firebase docs form)", 400,
            status(400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", [fcmError("INVALID_ARGUMENT")]),
            delete("INVALID_ARGUMENT"), .deleteDevice),
    FCMCase("400 invalid token (BadRequest first)", 400,
            status(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", [badRequest("message.token"), fcmError("INVALID_ARGUMENT")]),
            delete("INVALID_ARGUMENT"), .deleteDevice),
    FCMCase("400 invalid token (FcmError first)", 400,
            status(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", [fcmError("INVALID_ARGUMENT"), badRequest("message.token")]),
            delete("INVALID_ARGUMENT"), .deleteDevice),
    FCMCase("400 invalid token without FcmError", 400,
            status(400, "INVALID_ARGUMENT", "Request contains an invalid argument.", [badRequest("message.token")]),
            delete("INVALID_ARGUMENT"), .deleteDevice),
    // INVALID_ARGUMENT about the payload: keep the device.
    FCMCase("400 invalid data value", 400,
            status(400, "INVALID_ARGUMENT", "Invalid value at 'message.data[0].value' (TYPE_STRING), 12", [badRequest("message.data[0].value"), fcmError("INVALID_ARGUMENT")]),
            dead("INVALID_ARGUMENT"), .deadLetterRequest),
    FCMCase("400 too big, no details", 400, status(400, "INVALID_ARGUMENT", "Request contains an invalid argument."),
            dead("INVALID_ARGUMENT"), .deadLetterRequest),
    // Other FcmError codes.
    FCMCase("404 UNREGISTERED", 404, status(404, "NOT_FOUND", "Requested entity was not found.", [fcmError("UNREGISTERED")]),
            delete("UNREGISTERED"), .deleteDevice),
    FCMCase("403 SENDER_ID_MISMATCH", 403, status(403, "PERMISSION_DENIED", "SenderId mismatch", [fcmError("SENDER_ID_MISMATCH")]),
            delete("SENDER_ID_MISMATCH"), .deleteDevice),
    FCMCase("429 QUOTA_EXCEEDED, no Retry-After", 429, status(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", [fcmError("QUOTA_EXCEEDED")]),
            retry("QUOTA_EXCEEDED", 60), .retry(minimumDelay: 60)),
    FCMCase("429 QUOTA_EXCEEDED, Retry-After 120", 429, status(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", [fcmError("QUOTA_EXCEEDED")]),
            retry("QUOTA_EXCEEDED", 120), .retry(minimumDelay: 60), headers: [("Retry-After", "120")]),
    FCMCase("429 QUOTA_EXCEEDED, Retry-After 10 raised to 60", 429, status(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", [fcmError("QUOTA_EXCEEDED")]),
            retry("QUOTA_EXCEEDED", 60), .retry(minimumDelay: 60), headers: [("retry-after", "10")]),
    FCMCase("429 QUOTA_EXCEEDED, Retry-After HTTP-date", 429, status(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", [fcmError("QUOTA_EXCEEDED")]),
            retry("QUOTA_EXCEEDED", 90), .retry(minimumDelay: 60), headers: [("retry-after", "Thu, 07 Aug 2025 10:41:30 GMT")]),
    FCMCase("503 UNAVAILABLE, Retry-After 5", 503, status(503, "UNAVAILABLE", "The service is currently unavailable.", [fcmError("UNAVAILABLE")]),
            retry("UNAVAILABLE", 5), .retry(minimumDelay: nil), headers: [("retry-after", "5")]),
    FCMCase("500 INTERNAL", 500, status(500, "INTERNAL", "Internal error encountered.", [fcmError("INTERNAL")]),
            retry("INTERNAL"), .retry(minimumDelay: nil)),
    FCMCase("401 THIRD_PARTY_AUTH_ERROR", 401, status(401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service", [fcmError("THIRD_PARTY_AUTH_ERROR")]),
            dead("THIRD_PARTY_AUTH_ERROR"), .deadLetterConfiguration),
    FCMCase("401 APNS_AUTH_ERROR (old name)", 401, status(401, "UNAUTHENTICATED", "x", [fcmError("APNS_AUTH_ERROR")]),
            dead("APNS_AUTH_ERROR"), .deadLetterConfiguration),
    // No FcmError: by status.
    FCMCase("401 bad OAuth token", 401, status(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
            .refreshAuthAndRetryOnce(reason: "UNAUTHENTICATED"), .refreshAuthAndRetryOnce,
            headers: [("WWW-Authenticate", #"Bearer realm="https://accounts.google.com/", error="invalid_token""#)]),
    FCMCase("403 IAM", 403, status(403, "PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied"),
            dead("PERMISSION_DENIED"), .deadLetterConfiguration),
    FCMCase("404 wrong project (no FcmError): never delete", 404, status(404, "NOT_FOUND", "Requested entity was not found."),
            dead("NOT_FOUND"), .deadLetterConfiguration),
    FCMCase("429 RESOURCE_EXHAUSTED without FcmError", 429, status(429, "RESOURCE_EXHAUSTED", "overload"),
            retry("RESOURCE_EXHAUSTED", 60), .retry(minimumDelay: 60)),
    FCMCase("502 HTML", 502, google502, retry("http_502"), .retry(minimumDelay: nil)),
    FCMCase("400 UNSPECIFIED_ERROR", 400, status(400, "INVALID_ARGUMENT", "x", [fcmError("UNSPECIFIED_ERROR")]),
            dead("UNSPECIFIED_ERROR"), .deadLetterRequest),
    FCMCase("503 unknown code kept", 503, status(503, "UNAVAILABLE", "x", [fcmError("NEW_CODE")]), retry("NEW_CODE"), .retry(minimumDelay: nil)),
    FCMCase("418 plain text", 418, "teapot", dead("http_418"), .deadLetterRequest),
    FCMCase("302 redirect", 302, "", dead("http_302"), .deadLetterConfiguration),
    FCMCase("600 nonsense status", 600, "", retry("http_600"), .retry(minimumDelay: nil)),
]

@Suite struct FCMClassificationTests {
    static let now = 1_754_563_200  // 2025-08-07 10:40:00 UTC

    @Test(arguments: fcmCases) func row(_ testCase: FCMCase) {
        let classification = classifyFCM(response: testCase.response, now: Self.now)
        #expect(classification.outcome == testCase.expected)
        #expect(classification.rule == testCase.rule)
        #expect(classification.status == testCase.status)
    }

    @Test func everyRowIsExercised() {
        var covered = Set<Int>()
        for testCase in fcmCases where testCase.status >= 300 {
            let body = (try? JSONDecoder().decode(FCMErrorEnvelope.self, from: Data(testCase.response.body)))?.error
            if let index = FCMClassificationTable.matchingRow(body: body, status: testCase.status) { covered.insert(index) }
        }
        #expect(covered == Set(FCMClassificationTable.rows.indices))
        let codesInTable = Set(FCMClassificationTable.rows.compactMap { row -> FCMErrorCode? in
            if case .errorCode(let code) = row.match { return code } else { return nil }
        })
        #expect(codesInTable.union([.unspecifiedError]) == Set(FCMErrorCode.known), "every code but UNSPECIFIED_ERROR has a row")
    }

    @Test func providerMessageIsKeptForLogs() {
        let classification = classifyFCM(response: response(404, status(404, "NOT_FOUND", "Requested entity was not found.", [fcmError("UNREGISTERED")])))
        #expect(classification.providerMessage == "Requested entity was not found.")
        #expect(classifyFCM(response: response(502, google502)).providerMessage == nil)
    }

    @Test func oddDetailShapesAreSkipped() {
        let body = #"{"error":{"code":404,"status":"NOT_FOUND","details":[{"@type":"x","errorCode":7},"junk",{"@type":"\#(fcmErrorType)","errorCode":"UNREGISTERED"}]}}"#
        #expect(classifyFCM(response: response(404, body)).outcome == delete("UNREGISTERED"))
        let noFcmError = #"{"error":{"code":404,"status":"NOT_FOUND","details":["junk",{"@type":"x"}]}}"#
        #expect(classifyFCM(response: response(404, noFcmError)).outcome == dead("NOT_FOUND"))
        let numeric = #"{"error":{"code":404,"status":"NOT_FOUND","details":[{"@type":"x","errorCode":7},{"@type":"\#(fcmErrorType)","errorCode":"UNREGISTERED"}]}}"#
        #expect(classifyFCM(response: response(404, numeric)).outcome == delete("UNREGISTERED"))
    }
}

@Suite struct FCMTokenErrorTests {
    @Test func tokenEndpointErrors() {
        let refused = classifyFCMTokenError(.rejected(status: 400, error: "invalid_grant", description: "Invalid JWT Signature."))
        #expect(refused.outcome == .deadLetter(reason: "oauth_invalid_grant"))
        #expect(refused.isConfigurationError)
        // Issue 18: no token means nothing reached FCM: retried without counting the attempt.
        #expect(classifyFCMTokenError(.unavailable(status: 503, detail: "x")).outcome == .notSent(afterSeconds: nil, reason: "oauth_unavailable"))
        #expect(classifyFCMTokenError(.failed(detail: "timeout")).outcome == .notSent(afterSeconds: nil, reason: "oauth_failed: timeout"))
        #expect(classifyFCMTokenError(.coolingDown(secondsLeft: 7, detail: "x")).outcome == .notSent(afterSeconds: 7, reason: "oauth_cooldown: x"))
        // ADR 0015: only a token request without an answer is a request FCM left unanswered.
        #expect(!classifyFCMTokenError(.failed(detail: "timeout")).isUnanswered)
        #expect(!classifyFCMTokenError(.coolingDown(secondsLeft: 7, detail: "x")).isUnanswered)
        let unreachable = classifyFCMTokenError(.unanswered(detail: "token request failed: timeout", rejectedCertificate: nil))
        #expect(unreachable.outcome == .notSent(afterSeconds: nil, reason: "oauth_unreachable: token request failed: timeout"))
        #expect(unreachable.isUnanswered && !unreachable.isCertificateRejection)
        let rejected = classifyFCMTokenError(.unanswered(detail: "x", rejectedCertificate: "certificate has expired (oauth2.googleapis.com port 443)"))
        #expect(rejected.outcome == .notSent(afterSeconds: 60, reason:
            "tls_certificate_rejected: certificate has expired (oauth2.googleapis.com port 443) (the OAuth token endpoint)"))
        #expect(rejected.isUnanswered && rejected.isCertificateRejection)
    }

    /// The standard fetcher tells a token request that got no answer from one that could not be
    /// made, and keeps a refused certificate's words.
    @Test func aTokenRequestWithoutAnAnswerIsUnanswered() async throws {
        let credentials = FCMCredentials(projectID: "herald-test", clientEmail: "pushbridge-test@herald-test.iam.gserviceaccount.com",
                                         tokenURI: "https://oauth2.googleapis.com/token", privateKeyID: "test-key-1",
                                         signer: try RS256Signer(pem: TestKeys.rsa2048))
        func fetched(_ failure: PushTransportError) async -> FCMTokenError? {
            let fetch = FCMAccessTokenCache.fetcher(credentials: credentials) { _, done in done(.failure(failure)) }
            let result = await withCheckedContinuation { continuation in fetch { continuation.resume(returning: $0) } }
            guard case .failure(let error) = result else { return nil }
            return error as? FCMTokenError
        }
        #expect(await fetched(.connect("refused")) == .unanswered(detail: "token request failed: connect(\"refused\")", rejectedCertificate: nil))
        #expect(await fetched(.certificateRejected("unable to get local issuer certificate"))
                == .unanswered(detail: "token request failed: certificateRejected(\"unable to get local issuer certificate\")",
                               rejectedCertificate: "unable to get local issuer certificate"))
    }
}
