import Foundation
import HeraldCore
import PushHTTP

/// What an FCM classification row matches.
public enum FCMMatch: Sendable, Equatable {
    /// A 400 `INVALID_ARGUMENT` (the `FcmError` code, or the canonical status when there is no
    /// `FcmError`) **about the registration token** — see `FCMErrorBody.isAboutToken`.
    case invalidToken
    /// The `FcmError.errorCode` found by `@type` in `details[]`.
    case errorCode(FCMErrorCode)
    /// The HTTP status, for answers without a decisive `FcmError` (401, 403 IAM, HTML 502…).
    case status(ClosedRange<Int>)
}

/// The FCM table; the first matching row wins (push-providers.md §2.5, §9; SPEC DV-6, PU-5).
/// Tests walk every row.
public enum FCMClassificationTable {
    public struct Row: Sendable, Equatable {
        public let match: FCMMatch
        public let rule: PushRule
    }

    public static let rows: [Row] = [
        // The token is dead or belongs elsewhere (DV-6).
        Row(match: .invalidToken, rule: .deleteDevice),
        Row(match: .errorCode(.unregistered), rule: .deleteDevice),
        Row(match: .errorCode(.senderIDMismatch), rule: .deleteDevice),
        // Any other bad argument is our payload: dead-letter, keep the device.
        Row(match: .errorCode(.invalidArgument), rule: .deadLetterRequest),
        // Quota: "minimum initial delay of 1 minute", Retry-After honoured above that.
        Row(match: .errorCode(.quotaExceeded), rule: .retry(minimumDelay: 60)),
        Row(match: .errorCode(.unavailable), rule: .retry(minimumDelay: nil)),
        Row(match: .errorCode(.internal), rule: .retry(minimumDelay: nil)),
        // Firebase's APNs/web-push credentials are wrong: operators must fix them (seed 000).
        Row(match: .errorCode(.thirdPartyAuthError), rule: .deadLetterConfiguration),
        Row(match: .errorCode(.apnsAuthError), rule: .deadLetterConfiguration),
        // No FcmError (or UNSPECIFIED_ERROR / an unknown code): by HTTP status.
        Row(match: .status(401...401), rule: .refreshAuthAndRetryOnce),   // our OAuth token was refused
        Row(match: .status(403...403), rule: .deadLetterConfiguration),   // IAM PERMISSION_DENIED / wrong project
        Row(match: .status(404...404), rule: .deadLetterConfiguration),   // NOT_FOUND without UNREGISTERED: never delete
        Row(match: .status(429...429), rule: .retry(minimumDelay: 60)),   // RESOURCE_EXHAUSTED
        Row(match: .status(500...599), rule: .retry(minimumDelay: nil)),  // incl. Google's HTML 502
        Row(match: .status(400...499), rule: .deadLetterRequest),
        Row(match: .status(300...399), rule: .deadLetterConfiguration),   // a HERALD_FCM_URL that redirects
    ]

    /// When no row matches: retry, bounded by the queue.
    public static let defaultRule = PushRule.retry(minimumDelay: nil)

    /// The rule of the first matching row.
    static func rule(body: FCMErrorBody?, status: Int) -> PushRule {
        matchingRow(body: body, status: status).map { rows[$0].rule } ?? defaultRule
    }

    /// The index of the first matching row, `nil` when none matches (tests use it to prove every row is exercised).
    static func matchingRow(body: FCMErrorBody?, status: Int) -> Int? {
        rows.firstIndex { row in
            switch row.match {
            case .invalidToken: status == 400 && body.map { $0.isInvalidArgument && $0.isAboutToken } == true
            case .errorCode(let wanted): body?.fcmErrorCode == wanted
            case .status(let range): range.contains(status)
            }
        }
    }
}

/// Classifies an FCM HTTP v1 answer (push-providers.md §2.5).
///
/// - 2xx → `delivered(name)` (`projects/…/messages/…`, kept whole: the format is opaque).
/// - otherwise the `google.rpc.Status` body is read — `details[]` searched by `@type`, never by
///   position; a non-JSON body (Google's HTML 502) is fine — and `FCMClassificationTable` applies.
///
/// The outcome's reason is the `FcmError` code, else the canonical `error.status`, else `http_<status>`.
///
/// - Parameters:
///   - response: the provider's answer.
///   - now: UNIX seconds, to read a `Retry-After` date.
public func classifyFCM(response: PushHTTPResponse, now: Int = systemUnixClock()) -> PushClassification {
    if (200...299).contains(response.status) {
        struct Sent: Decodable { let name: String? }
        let name = fcmMessageName(simple: response.body)
            ?? (try? JSONDecoder().decode(Sent.self, from: Data(response.body)))?.name
        return PushClassification(outcome: .delivered(providerMessageID: name), status: response.status, rule: nil)
    }
    let body = (try? JSONDecoder().decode(FCMErrorEnvelope.self, from: Data(response.body)))?.error
    let rule = FCMClassificationTable.rule(body: body, status: response.status)
    let reason = body?.fcmErrorCode?.rawValue ?? body?.status ?? "http_\(response.status)"
    var classification = PushClassification.applying(rule, reason: reason, status: response.status,
                                                     retryAfter: RetryAfter.seconds(from: response.header("retry-after"), now: now))
    classification.providerMessage = body?.message
    return classification
}

/// The `name` of FCM's usual success answer, `{"name":"projects/…/messages/…"}`, read without a
/// JSON decoder (issue 17: JSONDecoder cost ~17k instructions per push): only when the body is
/// exactly one object with the one member `name` whose string value is printable ASCII without
/// escapes, JSON whitespace allowed around the tokens. nil for any other body, which the caller
/// decodes as before (so both give the same name).
func fcmMessageName(simple body: [UInt8]) -> String? {
    body.withUnsafeBufferPointer { b -> String? in
        var i = 0
        func skipSpace() {
            while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 }
        }
        func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard i < b.count, b[i] == byte else { return false }
            i += 1
            return true
        }
        /// A string token's bytes (after its opening quote), nil if it has an escape or a byte outside 0x20...0x7E.
        func stringBody() -> Range<Int>? {
            let start = i
            while i < b.count {
                let c = b[i]
                if c == UInt8(ascii: "\"") { i += 1; return start..<(i - 1) }
                if c == UInt8(ascii: "\\") || c < 0x20 || c > 0x7E { return nil }
                i += 1
            }
            return nil
        }
        guard take(UInt8(ascii: "{")), take(UInt8(ascii: "\"")), let key = stringBody(),
              key.count == 4, b[key.lowerBound] == UInt8(ascii: "n"), b[key.lowerBound + 1] == UInt8(ascii: "a"),
              b[key.lowerBound + 2] == UInt8(ascii: "m"), b[key.lowerBound + 3] == UInt8(ascii: "e"),
              take(UInt8(ascii: ":")), take(UInt8(ascii: "\"")), let value = stringBody(),
              take(UInt8(ascii: "}")) else { return nil }
        skipSpace()
        guard i == b.count else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: b[value]), as: UTF8.self)
    }
}

struct FCMErrorEnvelope: Decodable {
    let error: FCMErrorBody
}

/// `{"error":{"code":404,"message":"…","status":"NOT_FOUND","details":[{"@type":…,"errorCode":…},…]}}`.
/// Every field optional; details of unknown shape are skipped, not fatal.
struct FCMErrorBody: Decodable {
    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

    struct Detail: Decodable {
        struct FieldViolation: Decodable {
            let field: String?
        }
        let type: String?
        let errorCode: String?
        let fieldViolations: [FieldViolation]?

        enum CodingKeys: String, CodingKey {
            case type = "@type", errorCode, fieldViolations
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            type = try? container.decodeIfPresent(String.self, forKey: .type)
            errorCode = try? container.decodeIfPresent(String.self, forKey: .errorCode)
            fieldViolations = try? container.decodeIfPresent([FieldViolation].self, forKey: .fieldViolations)
        }
    }

    let message: String?
    let status: String?
    let details: [Detail]

    enum CodingKeys: String, CodingKey { case message, status, details }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        message = try? container.decodeIfPresent(String.self, forKey: .message)
        status = try? container.decodeIfPresent(String.self, forKey: .status)
        // One by one, so a detail of an unexpected shape (even a bare string) is skipped, not fatal.
        var parsed: [Detail] = []
        if var list = try? container.nestedUnkeyedContainer(forKey: .details) {
            while !list.isAtEnd {
                if let detail = try? list.decode(Detail.self) {
                    parsed.append(detail)
                } else if (try? list.decode(Skipped.self)) == nil {
                    break
                }
            }
        }
        details = parsed
    }

    /// Consumes one JSON value of any shape.
    private struct Skipped: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    /// The `errorCode` of the detail whose `@type` is FcmError, wherever it sits in `details`.
    var fcmErrorCode: FCMErrorCode? {
        details.first { $0.type == Self.fcmErrorType }?.errorCode.map(FCMErrorCode.init(rawValue:))
    }

    /// INVALID_ARGUMENT by FcmError, or by canonical status when FcmError is absent.
    var isInvalidArgument: Bool {
        if let code = fcmErrorCode { return code == .invalidArgument }
        return status == "INVALID_ARGUMENT"
    }

    /// Whether the complaint is about the registration token rather than the payload — the two
    /// recorded forms (push-providers.md §2.5): a `google.rpc.BadRequest` field violation on
    /// `message.token`, or Google's message "The registration token is not a valid FCM
    /// registration token" (matched on "registration token", case-insensitive).
    var isAboutToken: Bool {
        let violatesToken = details.contains { detail in
            detail.type == Self.badRequestType && (detail.fieldViolations ?? []).contains { $0.field == "message.token" }
        }
        return violatesToken || (message?.lowercased().contains("registration token") ?? false)
    }
}

/// No FCM access token: Google refusing the assertion (`invalid_grant`: wrong key, clock skew) is a
/// configuration error; otherwise nothing was sent to FCM, so the push is `.notSent` (retried without
/// counting the attempt), no sooner than the cache's cool-down ends when it is in one.
///
/// A token request that got no answer (`.unanswered`: `oauth_unreachable: …`, or
/// `tls_certificate_rejected: …` when the endpoint's certificate was refused) is `isUnanswered`:
/// it is one of FCM's requests `ProviderHealth` counts (ADR 0015). Pushes refused during the
/// cool-down that follows made no request and count as nothing.
public func classifyFCMTokenError(_ error: FCMTokenError) -> PushClassification {
    switch error {
    case .unanswered(let detail, let rejectedCertificate):
        if let rejectedCertificate { return .certificateRejected("\(rejectedCertificate) (the OAuth token endpoint)") }
        var classification = PushClassification.applying(.retryUnsent(minimumDelay: nil), reason: "oauth_unreachable: \(detail)",
                                                          status: nil, retryAfter: nil)
        classification.isUnanswered = true
        return classification
    case .rejected(let status, let code, _):
        return .applying(.deadLetterConfiguration, reason: "oauth_\(code)", status: status, retryAfter: nil)
    case .unavailable(let status, _):
        return .applying(.retryUnsent(minimumDelay: nil), reason: "oauth_unavailable", status: status, retryAfter: nil)
    case .failed(let detail):
        return .applying(.retryUnsent(minimumDelay: nil), reason: "oauth_failed: \(detail)", status: nil, retryAfter: nil)
    case .coolingDown(let secondsLeft, let detail):
        return .applying(.retryUnsent(minimumDelay: secondsLeft), reason: "oauth_cooldown: \(detail)", status: nil, retryAfter: nil)
    }
}
