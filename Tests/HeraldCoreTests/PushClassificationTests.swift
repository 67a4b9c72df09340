import Testing

@testable import HeraldCore

@Suite struct OtherFailureTests {
    struct CurlError: Error, CustomStringConvertible { var description: String { "CURLE_HTTP2_STREAM (92)" } }

    @Test func transportErrorsRetryOnANewConnection() {
        let classification = classifyTransportError(CurlError())
        #expect(classification.outcome == .retry(afterSeconds: nil, reason: "transport_error: CURLE_HTTP2_STREAM (92)"))
        #expect(classification.reconnect)
        #expect(classification.status == nil)
    }

    @Test func payloadErrorsDeadLetter() {
        let classification = classifyPayloadError(.apnsPayloadTooLarge(bytes: 5000, limit: 4096))
        #expect(classification.outcome == .deadLetter(reason: "payload_too_large"))
        #expect(classification.rule == .deadLetterRequest)
    }
}
