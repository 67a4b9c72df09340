import Foundation
import HeraldCore
import PushHTTP

/// What an APNs classification row matches: Apple's `reason`, or — for reasons we do not know and
/// answers without a body — the HTTP status.
public enum APNsMatch: Sendable, Equatable {
    case reason(APNsErrorReason)
    case status(ClosedRange<Int>)
}

/// The APNs table: reason → rule, then status fallbacks; the first matching row wins
/// (push-providers.md §1.8 and §9, SPEC DV-6 and PU-5). Tests walk every row.
public enum APNsClassificationTable {
    public struct Row: Sendable, Equatable {
        public let match: APNsMatch
        public let rule: PushRule
    }

    public static let rows: [Row] = [
        // The token is dead (DV-6). 410 carries the timestamp (PU-5c). BadDeviceToken also means a
        // sandbox token sent to production; seed 000 says the device is deleted then too.
        Row(match: .reason(.unregistered), rule: .deleteDevice),
        Row(match: .reason(.expiredToken), rule: .deleteDevice),
        Row(match: .reason(.badDeviceToken), rule: .deleteDevice),
        Row(match: .reason(.deviceTokenNotForTopic), rule: .deleteDevice),
        // Our JWT is stale: new token, one retry.
        Row(match: .reason(.expiredProviderToken), rule: .refreshAuthAndRetryOnce),
        // Credentials or topic are wrong: stop and tell operators (seed 000).
        Row(match: .reason(.invalidProviderToken), rule: .deadLetterConfiguration),
        Row(match: .reason(.missingProviderToken), rule: .deadLetterConfiguration),
        Row(match: .reason(.badEnvironmentKeyIdInToken), rule: .deadLetterConfiguration),
        Row(match: .reason(.badEnvironmentKeyInToken), rule: .deadLetterConfiguration),
        Row(match: .reason(.badCertificate), rule: .deadLetterConfiguration),
        Row(match: .reason(.badCertificateEnvironment), rule: .deadLetterConfiguration),
        Row(match: .reason(.forbidden), rule: .deadLetterConfiguration),
        Row(match: .reason(.topicDisallowed), rule: .deadLetterConfiguration),
        Row(match: .reason(.badTopic), rule: .deadLetterConfiguration),
        Row(match: .reason(.missingTopic), rule: .deadLetterConfiguration),
        // The connection is the problem: retry on a new one. TooManyProviderTokenUpdates leaves the
        // connection unusable for a while (Apple forums); the backoff supplies the delay.
        Row(match: .reason(.unrelatedKeyIdInToken), rule: .reconnectAndRetry),
        Row(match: .reason(.tooManyProviderTokenUpdates), rule: .reconnectAndRetry),
        Row(match: .reason(.idleTimeout), rule: .reconnectAndRetry),
        Row(match: .reason(.shutdown), rule: .reconnectAndRetry),
        // Transient. Apple suggests waiting 15 min after a 5xx; the queue's backoff (capped, 5
        // attempts) decides instead, so the e2e suite need not wait that long.
        Row(match: .reason(.tooManyRequests), rule: .retry(minimumDelay: nil)),
        Row(match: .reason(.internalServerError), rule: .retry(minimumDelay: nil)),
        Row(match: .reason(.serviceUnavailable), rule: .retry(minimumDelay: nil)),
        // Our request was wrong: a bug, retrying cannot help ("Don't retry … PayloadTooLarge").
        Row(match: .reason(.badCollapseId), rule: .deadLetterRequest),
        Row(match: .reason(.badExpirationDate), rule: .deadLetterRequest),
        Row(match: .reason(.badMessageId), rule: .deadLetterRequest),
        Row(match: .reason(.badPriority), rule: .deadLetterRequest),
        Row(match: .reason(.duplicateHeaders), rule: .deadLetterRequest),
        Row(match: .reason(.invalidPushType), rule: .deadLetterRequest),
        Row(match: .reason(.missingDeviceToken), rule: .deadLetterRequest),
        Row(match: .reason(.payloadEmpty), rule: .deadLetterRequest),
        Row(match: .reason(.payloadTooLarge), rule: .deadLetterRequest),
        Row(match: .reason(.badPath), rule: .deadLetterRequest),
        Row(match: .reason(.methodNotAllowed), rule: .deadLetterRequest),
        // Unknown reasons and bodiless answers, by status class (the raw reason is kept).
        Row(match: .status(410...410), rule: .deleteDevice),  // "no longer active for the topic"
        Row(match: .status(403...403), rule: .deadLetterConfiguration),
        Row(match: .status(429...429), rule: .retry(minimumDelay: nil)),
        Row(match: .status(500...599), rule: .retry(minimumDelay: nil)),
        Row(match: .status(400...499), rule: .deadLetterRequest),
        Row(match: .status(300...399), rule: .deadLetterConfiguration),  // a gateway URL that redirects
    ]

    /// When no row matches (a status outside 300–599 that is not a success): retry, bounded by the queue.
    public static let defaultRule = PushRule.retry(minimumDelay: nil)

    /// The rule of the first row matching `reason` (if any) or `status`.
    static func rule(reason: APNsErrorReason?, status: Int) -> PushRule {
        matchingRow(reason: reason, status: status).map { rows[$0].rule } ?? defaultRule
    }

    /// The index of the first matching row, `nil` when none matches (tests use it to prove every row is exercised).
    static func matchingRow(reason: APNsErrorReason?, status: Int) -> Int? {
        rows.firstIndex { row in
            switch row.match {
            case .reason(let wanted): wanted == reason
            case .status(let range): range.contains(status)
            }
        }
    }
}

/// Classifies an APNs answer (push-providers.md §1.7–1.8).
///
/// - 2xx → `delivered(apns-id)`.
/// - otherwise the body `{"reason":…,"timestamp":ms}` is read (a missing or non-JSON body is
///   fine: the status decides) and `APNsClassificationTable` applies.
///
/// - Parameters:
///   - response: the provider's answer.
///   - now: UNIX seconds, to read a `Retry-After` date.
public func classifyAPNs(response: PushHTTPResponse, now: Int = systemUnixClock()) -> PushClassification {
    if (200...299).contains(response.status) {
        return PushClassification(outcome: .delivered(providerMessageID: response.header("apns-id")), status: response.status, rule: nil)
    }
    let body = try? JSONDecoder().decode(APNsErrorBody.self, from: Data(response.body))
    let reason = body?.reason.map(APNsErrorReason.init(rawValue:))
    let rule = APNsClassificationTable.rule(reason: reason, status: response.status)
    return .applying(rule, reason: reason?.rawValue ?? "http_\(response.status)", status: response.status,
                     retryAfter: RetryAfter.seconds(from: response.header("retry-after"), now: now),
                     timestampMs: body?.timestamp)
}

/// `{"reason":"Unregistered","timestamp":1754563200000}`; each field optional and tolerant.
struct APNsErrorBody: Decodable {
    let reason: String?
    let timestamp: Int64?

    enum CodingKeys: String, CodingKey { case reason, timestamp }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        reason = try? container.decodeIfPresent(String.self, forKey: .reason)
        if let whole = try? container.decodeIfPresent(Int64.self, forKey: .timestamp) {
            timestamp = whole
        } else if let real = try? container.decodeIfPresent(Double.self, forKey: .timestamp), real.isFinite, abs(real) < 9e18 {
            timestamp = Int64(real)
        } else if let text = try? container.decodeIfPresent(String.self, forKey: .timestamp) {
            timestamp = Int64(text)
        } else {
            timestamp = nil
        }
    }
}
