/// Failures that have no provider answer to classify.

/// A transport failure that knows whether its request can have reached the provider. The push
/// transport's errors conform (PushHTTP `PushTransportError`: a connection that could not be
/// made never carried the request); other errors are taken as possibly delivered.
public protocol PushTransportFailure: Error {
    /// False when the request certainly never reached the provider (no connection could be made:
    /// refused, unreachable, DNS, reset during the TLS handshake).
    var mayHaveReachedProvider: Bool { get }
    /// True when the transport dropped the request unsent at its send-by deadline
    /// (`SendByDeadline`: it was still waiting for a stream). Default false.
    var missedSendBy: Bool { get }
    /// The certificate verifier's text when the server's TLS certificate was refused (unknown CA,
    /// name mismatch, expired: ADR 0018), e.g. "unable to get local issuer certificate"; nil for
    /// any other failure (default).
    var rejectedCertificate: String? { get }
    /// True when the transport gave the request back unsent because a write that can take a
    /// device out of pushes was counted while it waited for a stream (`SendByDeadline.audience`).
    /// Default false.
    var waitedPastAudienceChange: Bool { get }
}

extension PushTransportFailure {
    public var missedSendBy: Bool { false }
    public var rejectedCertificate: String? { nil }
    public var waitedPastAudienceChange: Bool { false }
}

/// A transport failure — connect/TLS error, timeout, reset, GOAWAY, `CURLE_HTTP2_STREAM` — is
/// retried on a new connection (push-providers.md §1.7, §6.3).
///
/// The first attempt may have reached the provider before the failure, so the retry must reuse the
/// job's `apns-id` and collapse key: the device then shows at most one notification (SPEC PU-5b).
/// A failure that certainly never reached it (`PushTransportFailure.mayHaveReachedProvider`
/// false: the provider is unreachable) is `.notSent`: retried without counting the attempt, so an
/// outage of the network path does not use up a job's attempts.
///
/// - Parameter error: whatever the transport threw; its description becomes the reason.
///
/// A request the transport dropped unsent at its send-by deadline (`missedSendBy`) is
/// `PushClassification.sendByPassed`; a refused server certificate is
/// `PushClassification.certificateRejected(_:)`; every other is `isUnanswered` (`ProviderHealth`).
public func classifyTransportError(_ error: any Error) -> PushClassification {
    if let failure = error as? any PushTransportFailure, failure.missedSendBy { return .sendByPassed }
    if let failure = error as? any PushTransportFailure, failure.waitedPastAudienceChange { return .audienceChanged }
    if let failure = error as? any PushTransportFailure, let text = failure.rejectedCertificate { return .certificateRejected(text) }
    var classification: PushClassification
    if let failure = error as? any PushTransportFailure, !failure.mayHaveReachedProvider {
        classification = .applying(.retryUnsent(minimumDelay: nil), reason: "provider_unreachable: \(error)", status: nil, retryAfter: nil)
    } else {
        classification = .applying(.reconnectAndRetry, reason: "transport_error: \(error)", status: nil, retryAfter: nil)
    }
    classification.isUnanswered = true
    return classification
}

/// A notification refused before sending (`PushPayloadError`) is dead-lettered at once (PU-5:
/// "rejected payload"); the device is kept. An expired one (`.expired`) is not refused but
/// `PushOutcome.expired`: never sent, and not a failure (SPEC NO-2).
public func classifyPayloadError(_ error: PushPayloadError) -> PushClassification {
    if error == .expired { return .expired }
    return .applying(.deadLetterRequest, reason: error.reason, status: nil, retryAfter: nil)
}

extension PushClassification {
    /// The reason's code of `certificateRejected(_:)`.
    public static let certificateRejectedCode = "tls_certificate_rejected"
    /// How long a push waits at least after its provider's certificate was refused, seconds: the
    /// fix (`HERALD_CA_FILE`, a proxy, the network path) is an operator's, not a backoff's.
    public static let certificateRejectedRetrySeconds = 60

    /// The provider's TLS certificate did not verify (ADR 0018): unknown CA (`HERALD_CA_FILE`
    /// missing, a TLS-intercepting proxy, someone in the middle), wrong name, expired. Nothing was
    /// sent — the handshake ended first —, so the push is `.notSent` (the attempt not counted),
    /// tried again no sooner than `certificateRejectedRetrySeconds` and within the retry budget,
    /// not dead-lettered: once the trust is fixed every kept push goes. It is `isUnanswered`, so
    /// `ProviderHealth` shows the provider degraded with this reason.
    ///
    /// - Parameter text: the verifier's words and, when known, the host.
    public static func certificateRejected(_ text: String) -> PushClassification {
        var classification = PushClassification.applying(.retryUnsent(minimumDelay: certificateRejectedRetrySeconds),
                                                         reason: "\(certificateRejectedCode): \(text)", status: nil, retryAfter: nil)
        classification.isUnanswered = true
        return classification
    }

    /// Whether this is `certificateRejected(_:)`'s verdict (read on failures only: the worker logs it).
    public var isCertificateRejection: Bool {
        guard isUnanswered, case .notSent(_, let reason) = outcome else { return false }
        return reason.hasPrefix(Self.certificateRejectedCode)
    }

    /// The notification expired before it could be sent (`PushOutcome.expired`; no HTTP status, no rule).
    public static let expired = PushClassification(outcome: .expired, status: nil, rule: nil)

    /// The push was not sent because its send-by deadline (`SendByDeadline`, from its job's
    /// lease) passed first: still waiting for an HTTP/2 stream, or not yet handed to the
    /// transport. Nothing reached the provider: `.notSent`, retried after the queue's backoff
    /// without counting the attempt, and no failure of the device or the provider.
    public static let sendByPassed = PushClassification.applying(
        .retryUnsent(minimumDelay: nil), reason: "send_by_passed: not sent before its lease ran out", status: nil, retryAfter: nil)

    /// The push was given back unsent: while it waited for an HTTP/2 stream, a write that can
    /// take a device out of pushes was counted (`SendByDeadline.audience`). The `DeliveryWorker`
    /// reads its device again and sends it (once; a second such answer is a plain `.notSent`,
    /// retried after the backoff, the attempt not counted).
    public static let audienceChanged = PushClassification.applying(
        .retryUnsent(minimumDelay: nil), reason: "audience_changed: a device may have left pushes while it waited for a stream",
        status: nil, retryAfter: nil)

    /// The check before a provider sends a push again at once after its refused credential was
    /// renewed (APNs `403 ExpiredProviderToken`, FCM `401`): the refused attempt took time, and a
    /// push that expired meanwhile is not sent again (SPEC NO-2, to the millisecond), nor one
    /// whose send-by deadline passed meanwhile.
    ///
    /// - Parameters:
    ///   - notification: the push about to be sent again.
    ///   - now: UNIX ms on the provider's clock.
    ///   - sendBy: the push's send-by deadline, if it has one.
    /// - Returns: what the provider answers instead of sending (`.expired`, `.sendByPassed`),
    ///   or nil: send it.
    public static func refusingResend(of notification: PushNotification, nowMilliseconds now: Int64,
                                      sendBy: SendByDeadline? = nil) -> PushClassification? {
        if notification.hasExpired(atMilliseconds: now) { return .expired }
        if let sendBy, sendBy.hasPassed(atMilliseconds: now) { return .sendByPassed }
        return nil
    }
}
