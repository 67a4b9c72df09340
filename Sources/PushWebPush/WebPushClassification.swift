import Foundation
import HeraldCore
import PushHTTP

/// The Web Push table: push services answer with a status and no standard error body, so the
/// status decides (RFC 8030 §5, §6.2, §8.3; RFC 8292 §4). The first matching row wins; tests
/// walk every row.
public enum WebPushClassificationTable {
    public struct Row: Sendable, Equatable {
        /// The statuses this row matches.
        public let statuses: ClosedRange<Int>
        public let rule: PushRule
        /// The reason recorded (`last_error`, delivery record).
        public let reason: String
    }

    public static let rows: [Row] = [
        // The subscription expired or was unsubscribed: the browser will never get it (RFC 8030 §7.3).
        Row(statuses: 404...404, rule: .deleteDevice, reason: "subscription_not_found"),
        Row(statuses: 410...410, rule: .deleteDevice, reason: "subscription_gone"),
        // Over the push service's size limit: the same body would fail again.
        Row(statuses: 413...413, rule: .deadLetterRequest, reason: "payload_too_large"),
        Row(statuses: 429...429, rule: .retry(minimumDelay: nil), reason: "too_many_requests"),
        // VAPID refused: our key or subject, or a subscription made for another application server key.
        Row(statuses: 401...401, rule: .deadLetterConfiguration, reason: "vapid_unauthorized"),
        Row(statuses: 403...403, rule: .deadLetterConfiguration, reason: "vapid_forbidden"),
        Row(statuses: 500...599, rule: .retry(minimumDelay: nil), reason: "push_service_error"),
        // Our request was wrong (headers, encoding): a bug, not something time fixes.
        Row(statuses: 400...499, rule: .deadLetterRequest, reason: "bad_request"),
        // An endpoint that redirects is not a push service endpoint.
        Row(statuses: 300...399, rule: .deadLetterConfiguration, reason: "redirect"),
    ]

    /// When no row matches: retry, bounded by the queue.
    public static let defaultRule = PushRule.retry(minimumDelay: nil)

    /// The index of the first row matching `status`, nil when none does.
    static func matchingRow(status: Int) -> Int? {
        rows.firstIndex { $0.statuses.contains(status) }
    }
}

/// Classifies a push service's answer: 2xx (`201 Created`, RFC 8030 §5) is delivered, with the
/// message's `Location` as its id; anything else by `WebPushClassificationTable`, with
/// `Retry-After` honoured for 429 and 5xx.
///
/// - Parameters:
///   - response: the push service's answer.
///   - now: UNIX seconds, to read a `Retry-After` date.
public func classifyWebPush(response: PushHTTPResponse, now: Int = systemUnixClock()) -> PushClassification {
    if (200...299).contains(response.status) {
        return PushClassification(outcome: .delivered(providerMessageID: response.header("location")), status: response.status, rule: nil)
    }
    let row = WebPushClassificationTable.matchingRow(status: response.status).map { WebPushClassificationTable.rows[$0] }
    var classification = PushClassification.applying(row?.rule ?? WebPushClassificationTable.defaultRule,
                                                     reason: row?.reason ?? "http_\(response.status)", status: response.status,
                                                     retryAfter: RetryAfter.seconds(from: response.header("retry-after"), now: now))
    // Push services answer errors in text or JSON of their own; kept for logs and the test push.
    let text = String(decoding: response.body.prefix(512), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    if !text.isEmpty { classification.providerMessage = text }
    return classification
}
