import Testing

@testable import HeraldCore

/// The bulk-retry filter as the API body and `herald jobs retry` give it (issue 18).
@Suite struct DeadJobFilterTests {
    @Test func goodValuesMakeTheFilter() throws {
        let filter = try DeadJobFilter.validated(kind: "push.deliver", deadSince: 1_000, deadUntil: 2_000, provider: "apns",
                                                 reason: "ServiceUnavailable")
        #expect(filter == DeadJobFilter(kind: "push.deliver", deadSince: 1_000, deadUntil: 2_000, provider: "apns", reason: "ServiceUnavailable"))
        #expect(try DeadJobFilter.validated() == DeadJobFilter())
    }

    @Test(arguments: [
        (DeadJobFilter.Field.kind, DeadJobFilter(kind: "")),
        (.deadSince, DeadJobFilter(deadSince: -1)),
        (.deadUntil, DeadJobFilter(deadUntil: -1)),
        (.deadUntil, DeadJobFilter(deadSince: 5, deadUntil: 5)),
        (.provider, DeadJobFilter(provider: "gcm")),
        (.reason, DeadJobFilter(reason: "")),
        (.reason, DeadJobFilter(reason: "transport_error: x")),
        (.reason, DeadJobFilter(reason: String(repeating: "x", count: 129))),
        (.reason, DeadJobFilter(reason: "tab\there")),
    ])
    func badValuesNameTheirField(field: DeadJobFilter.Field, values: DeadJobFilter) {
        #expect(throws: DeadJobFilter.Invalid.self) {
            _ = try DeadJobFilter.validated(kind: values.kind, deadSince: values.deadSince, deadUntil: values.deadUntil,
                                            provider: values.provider, reason: values.reason)
        }
        do {
            _ = try DeadJobFilter.validated(kind: values.kind, deadSince: values.deadSince, deadUntil: values.deadUntil,
                                            provider: values.provider, reason: values.reason)
        } catch {
            #expect(error.field == field)
        }
    }

    @Test func theReasonCodeIsTheTextBeforeTheFirstColon() {
        #expect(DeadLetterCause.code(of: "transport_error: CURLE_HTTP2 (92)") == "transport_error")
        #expect(DeadLetterCause.code(of: "ServiceUnavailable") == "ServiceUnavailable")
        #expect(DeadLetterCause.code(of: "provider_misconfigured: Unregistered") == "provider_misconfigured")
        #expect(DeadLetterCause.code(of: String(repeating: "y", count: 300)).utf8.count == 128)
    }
}
