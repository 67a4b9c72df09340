/// Failures that have no provider answer to classify.

/// A transport failure — connect/TLS error, timeout, reset, GOAWAY, `CURLE_HTTP2_STREAM` — is
/// retried on a new connection (push-providers.md §1.7, §6.3).
///
/// The first attempt may have reached the provider before the failure, so the retry must reuse the
/// job's `apns-id` and collapse key: the device then shows at most one notification (SPEC PU-5b).
///
/// - Parameter error: whatever the transport threw; its description becomes the reason.
public func classifyTransportError(_ error: any Error) -> PushClassification {
    .applying(.reconnectAndRetry, reason: "transport_error: \(error)", status: nil, retryAfter: nil)
}

/// A notification refused before sending (`PushPayloadError`) is dead-lettered at once (PU-5:
/// "rejected payload"); the device is kept.
public func classifyPayloadError(_ error: PushPayloadError) -> PushClassification {
    .applying(.deadLetterRequest, reason: error.reason, status: nil, retryAfter: nil)
}
