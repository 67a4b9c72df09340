import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushFCM

/// The values a provider keeps between messages (the send URL, the `authorization` value) make
/// the very request the builder makes without them.
@Suite struct FCMRequestBuilderKeptValuesTests {
    @Test func keptURLAndAuthorizationMakeTheSameRequest() throws {
        let authorizations = AuthorizationValueCache(prefix: "Bearer ")
        let endpoint = FCMEndpoint(baseURL: "https://127.0.0.1:9443/")
        for token in ["ya29.one", "ya29.one", "ya29.two"] {
            let plain = try FCMRequestBuilder.request(for: .seed001, deviceToken: "fcm-token-1", projectID: "herald-test",
                                                      accessToken: token, endpoint: endpoint, now: 1_754_563_200)
            let kept = try FCMRequestBuilder.request(for: .seed001, deviceToken: "fcm-token-1", projectID: "herald-test",
                                                     accessToken: token, endpoint: endpoint, now: 1_754_563_200,
                                                     sendURL: endpoint.sendURL(projectID: "herald-test"), authorizations: authorizations)
            #expect(kept.url == plain.url)
            #expect(kept.url == "https://127.0.0.1:9443/v1/projects/herald-test/messages:send")
            #expect(kept.headerLines == plain.headerLines)
            #expect(kept.headerLines.first == "authorization: Bearer \(token)")
            #expect(kept.bodyText == plain.bodyText)
        }
    }
}
