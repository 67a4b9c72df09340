/// Failures that have no provider answer to classify.

/// A transport failure that knows whether its request can have reached the provider. The push
/// transport's errors conform (PushHTTP `PushTransportError`: a connection that could not be
/// made never carried the request); other errors are taken as possibly delivered.
public protocol PushTransportFailure: Error {
    /// False when the request certainly never reached the provider (no connection could be made:
    /// refused, unreachable, DNS, reset during the TLS handshake).
    var mayHaveReachedProvider: Bool { get }
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
public func classifyTransportError(_ error: any Error) -> PushClassification {
    if let failure = error as? any PushTransportFailure, !failure.mayHaveReachedProvider {
        return .applying(.retryUnsent(minimumDelay: nil), reason: "provider_unreachable: \(error)", status: nil, retryAfter: nil)
    }
    return .applying(.reconnectAndRetry, reason: "transport_error: \(error)", status: nil, retryAfter: nil)
}

/// A notification refused before sending (`PushPayloadError`) is dead-lettered at once (PU-5:
/// "rejected payload"); the device is kept.
public func classifyPayloadError(_ error: PushPayloadError) -> PushClassification {
    .applying(.deadLetterRequest, reason: error.reason, status: nil, retryAfter: nil)
}

extension PushClassification {
    /// Whether the provider did not send because the notification had expired
    /// (`classifyPayloadError(.expired)`: found by the request builder, or before the resend that
    /// follows a credential refresh). The worker records it as the outcome `expired` with the job
    /// done, as when it finds the expiry itself, instead of dead-lettering it (SPEC NO-2).
    public var refusedAsExpired: Bool {
        rule == .deadLetterRequest && status == nil && outcome == .deadLetter(reason: PushPayloadError.expired.reason)
    }
}
