import Foundation
import HeraldCore
import PushHTTP

/// Expo's per-message error codes (`details.error` of a ticket or a receipt; expo-webpush.md).
public enum ExpoErrorCode: Hashable, Sendable {
    /// The token is not (or no longer) registered: delete the device.
    case deviceNotRegistered
    /// The message is over 4096 bytes: never retry.
    case messageTooBig
    /// Too many messages to this device: back off and send again.
    case messageRateExceeded
    /// The app's FCM sender id does not match the token's: a configuration error at Expo.
    case mismatchSenderID
    /// The app's APNs/FCM credentials at Expo are wrong: a configuration error.
    case invalidCredentials
    /// Anything else, as Expo spelled it.
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "DeviceNotRegistered": self = .deviceNotRegistered
        case "MessageTooBig": self = .messageTooBig
        case "MessageRateExceeded": self = .messageRateExceeded
        case "MismatchSenderId": self = .mismatchSenderID
        case "InvalidCredentials": self = .invalidCredentials
        default: self = .unknown(rawValue)
        }
    }

    /// Expo's spelling.
    public var rawValue: String {
        switch self {
        case .deviceNotRegistered: "DeviceNotRegistered"
        case .messageTooBig: "MessageTooBig"
        case .messageRateExceeded: "MessageRateExceeded"
        case .mismatchSenderID: "MismatchSenderId"
        case .invalidCredentials: "InvalidCredentials"
        case .unknown(let text): text
        }
    }

    /// The rule for a ticket or receipt with this error (PU-8a). An unknown code is retried:
    /// bounded by the queue, and never a reason to delete a device.
    public var rule: PushRule {
        switch self {
        case .deviceNotRegistered: .deleteDevice
        case .messageTooBig: .deadLetterRequest
        case .messageRateExceeded: .retry(minimumDelay: nil)
        case .mismatchSenderID, .invalidCredentials: .deadLetterConfiguration
        case .unknown: .retry(minimumDelay: nil)
        }
    }
}

/// One ticket or receipt: `{"status":"ok","id":…}` / `{"status":"error","message":…,"details":{"error":…}}`.
struct ExpoItem: Decodable {
    struct Details: Decodable { let error: String? }
    let status: String?
    let id: String?
    let message: String?
    let details: Details?

    /// The verdict on this item; `receiptID` is set for an accepted ticket.
    func classification(asTicket: Bool) -> PushClassification {
        if status == "ok" {
            return PushClassification(outcome: .delivered(providerMessageID: id), status: 200, rule: nil,
                                      receiptID: asTicket ? id : nil)
        }
        let code = details?.error.map(ExpoErrorCode.init(rawValue:)) ?? .unknown(status == "error" ? "expo_error" : "expo_unreadable_item")
        var classification = PushClassification.applying(code.rule, reason: code.rawValue, status: 200, retryAfter: nil)
        classification.providerMessage = message
        return classification
    }
}

/// `{"errors":[{"code":"TOO_MANY_REQUESTS","message":…}]}`: a request-level refusal.
struct ExpoErrors: Decodable {
    struct Item: Decodable {
        let code: String?
        let message: String?
    }
    let errors: [Item]?
}

/// Classifies a send or receipts request that failed as a whole (every message in it gets the
/// same verdict; expo-webpush.md: "retry with exponential backoff on network errors, 429 and 5xx;
/// never retry a 400"):
///
/// | answer | rule |
/// |---|---|
/// | 429, `TOO_MANY_REQUESTS` | retry, honouring `Retry-After` |
/// | 5xx | retry |
/// | 401/403, `UNAUTHORIZED` | configuration dead letter (the access token) |
/// | 3xx | configuration dead letter (a `HERALD_EXPO_URL` that redirects) |
/// | other 4xx (`PUSH_TOO_MANY_NOTIFICATIONS`, `PUSH_TOO_MANY_EXPERIENCE_IDS` a regrouping did not solve, 413…) | request dead letter |
/// | 2xx that does not parse | retry on a new connection |
///
/// The reason is the first error's `code`, else `http_<status>`.
public func classifyExpoFailure(response: PushHTTPResponse, now: Int) -> PushClassification {
    let first = (try? JSONDecoder().decode(ExpoErrors.self, from: Data(response.body)))?.errors?.first
    let reason = first?.code ?? "http_\(response.status)"
    let rule: PushRule
    switch (response.status, first?.code) {
    case (429, _), (_, "TOO_MANY_REQUESTS"): rule = .retry(minimumDelay: nil)
    case (500...599, _): rule = .retry(minimumDelay: nil)
    case (401, _), (403, _), (_, "UNAUTHORIZED"): rule = .deadLetterConfiguration
    case (300...399, _): rule = .deadLetterConfiguration
    case (400...499, _): rule = .deadLetterRequest
    default: rule = .reconnectAndRetry
    }
    var classification = PushClassification.applying(rule, reason: reason, status: response.status,
                                                     retryAfter: RetryAfter.seconds(from: response.header("retry-after"), now: now))
    classification.providerMessage = first?.message
    return classification
}

/// Classifies a send answer: one classification per message, in order (`count` of them).
///
/// A 200 whose `data` is an array of exactly `count` tickets classifies each ticket
/// (`ExpoErrorCode.rule`; an `ok` ticket is `delivered` with its id as `receiptID`); anything
/// else is `classifyExpoFailure` for all.
public func classifyExpoSend(response: PushHTTPResponse, count: Int, now: Int) -> [PushClassification] {
    struct Tickets: Decodable { let data: [ExpoItem]? }
    if response.status == 200 {
        if let tickets = (try? JSONDecoder().decode(Tickets.self, from: Data(response.body)))?.data, tickets.count == count {
            return tickets.map { $0.classification(asTicket: true) }
        }
        let bad = PushClassification.applying(.reconnectAndRetry, reason: "expo_unreadable_tickets", status: 200, retryAfter: nil)
        return Array(repeating: bad, count: count)
    }
    return Array(repeating: classifyExpoFailure(response: response, now: now), count: count)
}

/// Classifies a receipts answer: `{"data":{"<id>":{<receipt>},…}}` → one classification per
/// id Expo knows (`delivered` for `ok`, else the error code's rule); a failed request is
/// `.failed` (`classifyExpoFailure`).
public func classifyExpoReceipts(response: PushHTTPResponse, now: Int) -> PushReceiptAnswer {
    struct Receipts: Decodable { let data: [String: ExpoItem]? }
    guard response.status == 200 else { return .failed(classifyExpoFailure(response: response, now: now)) }
    guard let receipts = (try? JSONDecoder().decode(Receipts.self, from: Data(response.body)))?.data else {
        return .failed(.applying(.reconnectAndRetry, reason: "expo_unreadable_receipts", status: 200, retryAfter: nil))
    }
    return .receipts(receipts.mapValues { $0.classification(asTicket: false) })
}

/// The pushes of a send request Expo refused with `PUSH_TOO_MANY_EXPERIENCE_IDS`, grouped by
/// Expo project, or nil for any other answer.
///
/// Expo's refusal says which tokens belong to which project: `{"errors": [{"code":
/// "PUSH_TOO_MANY_EXPERIENCE_IDS", "details": {"@owner/project-a": ["ExponentPushToken[…]", …],
/// "@owner/project-b": […]}}]}` (expo/expo#6771). The groups are indices into `tokens`, one per
/// project in the order of their first push, then one of the tokens `details` does not name.
/// Nil as well when `details` is missing or unreadable, or names a single group: sending again
/// could not help, so the refusal is classified as it is (`classifyExpoFailure`).
public func expoProjectGroups(response: PushHTTPResponse, tokens: [String]) -> [[Int]]? {
    guard response.status == 400,
          let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
          let errors = object["errors"] as? [[String: Any]],
          let refusal = errors.first(where: { $0["code"] as? String == "PUSH_TOO_MANY_EXPERIENCE_IDS" }),
          let details = refusal["details"] as? [String: Any] else { return nil }
    var projectOfToken: [String: String] = [:]
    for (project, listed) in details {
        for token in listed as? [String] ?? [] { projectOfToken[token] = project }
    }
    var groupOfProject: [String: Int] = [:]
    var groups: [[Int]] = []
    var unnamed: [Int] = []
    for (index, token) in tokens.enumerated() {
        guard let project = projectOfToken[token] else { unnamed.append(index); continue }
        if let group = groupOfProject[project] {
            groups[group].append(index)
        } else {
            groupOfProject[project] = groups.count
            groups.append([index])
        }
    }
    if !unnamed.isEmpty { groups.append(unnamed) }
    return groups.count > 1 ? groups : nil
}
