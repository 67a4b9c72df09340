/// What the delivery queue does with one push after the provider answered (or did not) —
/// SPEC PU-5, DV-6; push-providers.md §1.8, §2.5, §9.
public enum PushOutcome: Sendable, Equatable {
    /// Accepted. `providerMessageID`: APNs `apns-id` header / FCM `name` (opaque, not parsed).
    case delivered(providerMessageID: String?)
    /// The device token is dead: delete the device. `providerTimestampMs` is APNs's 410
    /// `timestamp` (ms since epoch) — keep the device if it re-registered after it (PU-5c).
    /// Subject to the mass-deletion guard (PU-5a).
    case deleteDevice(reason: String, providerTimestampMs: Int64?)
    /// Try again later. `afterSeconds`: the provider's `Retry-After` (or a documented minimum such as
    /// 60 s for FCM `QUOTA_EXCEEDED`), to be used as a floor under the queue's backoff; `nil` = backoff only.
    case retry(afterSeconds: Int?, reason: String)
    /// Nothing reached the provider: no connection could be made, or no auth token was available
    /// (FCM's OAuth endpoint failed or is in its cool-down, an APNs token refresh must wait). The
    /// queue tries again no sooner than `afterSeconds` (e.g. when the cool-down ends; `nil` =
    /// backoff only) and the attempt does not count toward the attempt cap — the retry time
    /// budget still applies (`RetryPolicy`).
    case notSent(afterSeconds: Int?, reason: String)
    /// Nothing was sent: the provider's own bound on requests in flight turned the push away
    /// before it left (Web Push's `origin_busy`, ADR 0024). Nothing is wrong with the push or the
    /// provider, only its turn: the queue tries again after `RetryPolicy.busyMilliseconds` with
    /// jitter, not after the backoff (which each turn-away would grow while the origin stays
    /// busy), and the attempt counts neither toward the cap nor toward a later failure's backoff
    /// (`JobAttempt.turnedAway`); the time budget still applies.
    case busy(reason: String)
    /// The provider refused our credential as stale (APNs `403 ExpiredProviderToken`, FCM `401`):
    /// refresh it (`APNsAuthToken.invalidate(rejected:)` / `FCMAccessTokenCache.invalidate(token:)`)
    /// and retry **once** right away. A `PushProvider` does that itself; when one still reports this
    /// outcome, its one retry was refused too and the queue treats it as a plain retry.
    case refreshAuthAndRetryOnce(reason: String)
    /// A retry cannot fix it (bad credentials, refused payload, our own bug): dead-letter now.
    case deadLetter(reason: String)
    /// Nothing was sent because the notification had expired (SPEC NO-2: expired notifications
    /// are never sent): found by the request builder (`PushPayloadError.expired`) or before the
    /// resend that follows a renewed credential (`PushClassification.refusingResend`). Not a
    /// failure: the queue completes the job with the delivery outcome `expired`, no dead letter;
    /// the test push answers `push_expired`.
    case expired
}

/// The rule a table row assigns; `PushClassification` turns it into a `PushOutcome` plus flags.
public enum PushRule: Sendable, Equatable {
    /// `.deleteDevice`.
    case deleteDevice
    /// `.retry`, honouring `Retry-After`, never sooner than `minimumDelay` seconds when given.
    case retry(minimumDelay: Int?)
    /// `.retry` on a **new connection** (the current one is unusable: GOAWAY, `Shutdown`,
    /// `IdleTimeout`, `UnrelatedKeyIdInToken`, `TooManyProviderTokenUpdates`).
    case reconnectAndRetry
    /// `.refreshAuthAndRetryOnce`.
    case refreshAuthAndRetryOnce
    /// `.notSent`: the attempt never reached the provider; retry, never sooner than
    /// `minimumDelay` seconds when given, without counting the attempt.
    case retryUnsent(minimumDelay: Int?)
    /// `.busy`: turned away for its turn (ADR 0024); retry soon, the attempt not counted.
    case retryWhenNotBusy
    /// `.deadLetter`, and tell operators: credentials, topic or project are wrong (PU-5, PU-6).
    case deadLetterConfiguration
    /// `.deadLetter`: the request itself was wrong (payload, headers) — a bug to fix, not to retry.
    case deadLetterRequest
}

/// The full verdict on one attempt.
public struct PushClassification: Sendable, Equatable, CustomStringConvertible {
    /// What the queue does next.
    public var outcome: PushOutcome
    /// The HTTP status, `nil` when no response arrived (transport error, refused payload).
    public var status: Int?
    /// The rule that decided, `nil` for `delivered` and `expired` (no table row decides those).
    public var rule: PushRule?
    /// Open a new connection before retrying.
    public var reconnect: Bool { rule == .reconnectAndRetry }
    /// Credentials/topic/project are wrong: log an error for operators (seed 000: a dead letter with
    /// `InvalidProviderToken` or `THIRD_PARTY_AUTH_ERROR` means the credentials are wrong).
    public var isConfigurationError: Bool { rule == .deadLetterConfiguration }
    /// The provider's human-readable text when it sent one (FCM `error.message`), for logs and the
    /// test-push `error` field (DV-7). Never used to decide, except FCM's token check.
    public var providerMessage: String?
    /// Set on a `delivered` answer of a provider that confirms delivery later (Expo's ticket id,
    /// PU-8a): the worker stores it and asks `PushReceiptProvider.checkReceipts` about it after
    /// `receiptDelayMilliseconds` through a `push.receipt` job. Nil: the answer is final.
    public var receiptID: String?
    /// The request got no answer from the provider: it failed at the transport (no answer by its
    /// deadline, connection refused, TLS failure, the connection broken), as
    /// `classifyTransportError(_:)` says. What `ProviderHealth` counts; a push dropped unsent at
    /// its send-by deadline is not (it never reached the provider).
    public var isUnanswered: Bool

    public init(outcome: PushOutcome, status: Int?, rule: PushRule?, providerMessage: String? = nil, receiptID: String? = nil,
                isUnanswered: Bool = false) {
        self.outcome = outcome
        self.status = status
        self.rule = rule
        self.providerMessage = providerMessage
        self.receiptID = receiptID
        self.isUnanswered = isUnanswered
    }

    /// Applies `rule` to a failed attempt.
    ///
    /// - Parameters:
    ///   - rule: the table's verdict.
    ///   - reason: the provider's string (`Unregistered`, `UNREGISTERED`) or ours (`http_502`).
    ///   - status: HTTP status, if any.
    ///   - retryAfter: parsed `Retry-After` seconds, if any.
    ///   - timestampMs: APNs 410 `timestamp`.
    public static func applying(_ rule: PushRule, reason: String, status: Int?, retryAfter: Int?, timestampMs: Int64? = nil) -> PushClassification {
        let outcome: PushOutcome
        switch rule {
        case .deleteDevice:
            outcome = .deleteDevice(reason: reason, providerTimestampMs: timestampMs)
        case .retry(let minimumDelay):
            let delay: Int? = switch (retryAfter, minimumDelay) {
            case (nil, nil): nil
            case (let after?, nil): after
            case (nil, let minimum?): minimum
            case (let after?, let minimum?): max(after, minimum)
            }
            outcome = .retry(afterSeconds: delay, reason: reason)
        case .reconnectAndRetry:
            outcome = .retry(afterSeconds: retryAfter, reason: reason)
        case .refreshAuthAndRetryOnce:
            outcome = .refreshAuthAndRetryOnce(reason: reason)
        case .retryUnsent(let minimumDelay):
            let delay: Int? = switch (retryAfter, minimumDelay) {
            case (nil, nil): nil
            case (let after?, nil): after
            case (nil, let minimum?): minimum
            case (let after?, let minimum?): max(after, minimum)
            }
            outcome = .notSent(afterSeconds: delay, reason: reason)
        case .retryWhenNotBusy:
            outcome = .busy(reason: reason)
        case .deadLetterConfiguration, .deadLetterRequest:
            outcome = .deadLetter(reason: reason)
        }
        return PushClassification(outcome: outcome, status: status, rule: rule)
    }

    public var description: String {
        "\(outcome)" + (status.map { " (HTTP \($0))" } ?? "") + (reconnect ? " [reconnect]" : "") + (isConfigurationError ? " [configuration]" : "")
    }
}
