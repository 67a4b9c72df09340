import Testing

@testable import HeraldCore

@Suite struct OtherFailureTests {
    struct CurlError: Error, CustomStringConvertible { var description: String { "CURLE_HTTP2_STREAM (92)" } }

    @Test func transportErrorsRetryOnANewConnection() {
        let classification = classifyTransportError(CurlError())
        #expect(classification.outcome == .retry(afterSeconds: nil, reason: "transport_error: CURLE_HTTP2_STREAM (92)"))
        #expect(classification.reconnect)
        #expect(classification.status == nil)
        #expect(classification.isUnanswered, "no answer: counted against the provider's health (ADR 0015)")
        #expect(classifyTransportError(ConnectionRefused()).isUnanswered)
        #expect(!PushClassification.unavailable.isUnanswered && !PushClassification.delivered("m").isUnanswered)
    }

    @Test func payloadErrorsDeadLetter() {
        let classification = classifyPayloadError(.apnsPayloadTooLarge(bytes: 5000, limit: 4096))
        #expect(classification.outcome == .deadLetter(reason: "payload_too_large"))
        #expect(classification.rule == .deadLetterRequest)
    }

    /// NO-2: an expired push is its own outcome, not a dead letter whose reason reads "expired".
    @Test func anExpiredPayloadIsTheExpiredOutcome() {
        let classification = classifyPayloadError(.expired)
        #expect(classification == .expired)
        #expect(classification.outcome == .expired && classification.rule == nil && classification.status == nil)
        #expect(classification.outcome.metricLabel == "expired")
        #expect(!classification.isConfigurationError && !classification.reconnect)
    }

    /// The one check before a resend after a renewed credential: expired to the millisecond.
    @Test func aResendIsRefusedOnceTheNotificationExpired() {
        let notification = PushNotification(title: "t", expiresAt: 2, expiresAtMilliseconds: 1_500)
        #expect(PushClassification.refusingResend(of: notification, nowMilliseconds: 1_499) == nil)
        #expect(PushClassification.refusingResend(of: notification, nowMilliseconds: 1_500) == .expired)
        #expect(PushClassification.refusingResend(of: PushNotification(title: "t"), nowMilliseconds: .max) == nil)
    }

    /// The margin kept before a lease's end: a fifth, within 1-10 s, never over half the lease.
    @Test func theSendByMarginFollowsTheLease() {
        #expect(SendByDeadline.margin(leaseMilliseconds: 60_000) == 10_000)
        #expect(SendByDeadline.margin(leaseMilliseconds: 3_600_000) == 10_000)
        #expect(SendByDeadline.margin(leaseMilliseconds: 10_000) == 2_000)
        #expect(SendByDeadline.margin(leaseMilliseconds: 2_000) == 1_000)
        #expect(SendByDeadline.margin(leaseMilliseconds: 1_000) == 500)
        #expect(SendByDeadline(leaseUntil: 70_000, leaseMilliseconds: 60_000) == SendByDeadline(unixMilliseconds: 60_000))
        let deadline = SendByDeadline(unixMilliseconds: 1_000)
        #expect(!deadline.hasPassed(atMilliseconds: 999) && deadline.hasPassed(atMilliseconds: 1_000))
        #expect(deadline.millisecondsLeft(atMilliseconds: 400) == 600)
    }

    /// A request the transport dropped unsent at its deadline is not sent, retried uncounted; the
    /// check before a resend refuses one whose deadline passed (expiry first).
    @Test func aMissedSendByIsNotSentAndRetriedUncounted() {
        struct Dropped: PushTransportFailure {
            var mayHaveReachedProvider: Bool { false }
            var missedSendBy: Bool { true }
        }
        #expect(classifyTransportError(Dropped()) == .sendByPassed)
        #expect(!PushClassification.sendByPassed.isUnanswered, "never reached the provider: no sign of its health")
        #expect(PushClassification.sendByPassed.outcome == .notSent(afterSeconds: nil, reason: "send_by_passed: not sent before its lease ran out"))
        #expect(PushClassification.sendByPassed.rule == .retryUnsent(minimumDelay: nil))
        let deadline = SendByDeadline(unixMilliseconds: 1_000)
        #expect(PushClassification.refusingResend(of: PushNotification(title: "t"), nowMilliseconds: 999, sendBy: deadline) == nil)
        #expect(PushClassification.refusingResend(of: PushNotification(title: "t"), nowMilliseconds: 1_000, sendBy: deadline) == .sendByPassed)
        let expired = PushNotification(title: "t", expiresAt: 1, expiresAtMilliseconds: 500)
        #expect(PushClassification.refusingResend(of: expired, nowMilliseconds: 1_000, sendBy: deadline) == .expired)
    }
}
