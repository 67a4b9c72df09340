import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushAPNs

/// The values a provider keeps between pushes (the `authorization` value, the gateway's device
/// path) make the very request the builder makes without them.
@Suite struct APNsRequestBuilderKeptValuesTests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
    let id = PushID("EABEAE54-14A8-11E5-B60B-1697F925EC7B")!

    @Test func keptAuthorizationMakesTheSameRequest() throws {
        let authorizations = AuthorizationValueCache(prefix: "bearer ")
        for (environment, jwt) in [(APNsGateway.production, "eyJ.jwt.one"), (.sandbox, "eyJ.jwt.one"),
                                   (APNsGateway(isSandbox: false, baseURL: "https://127.0.0.1:9443//"), "eyJ.jwt.two")] {
            let plain = try APNsRequestBuilder.request(for: .seed001, deviceToken: Self.token, environment: environment,
                                                       topic: "com.mobiari.merchant", authToken: jwt, apnsID: id, now: 1_754_563_200)
            let kept = try APNsRequestBuilder.request(for: .seed001, deviceToken: Self.token, environment: environment,
                                                      topic: "com.mobiari.merchant", authToken: jwt, apnsID: id, now: 1_754_563_200,
                                                      authorizations: authorizations)
            #expect(kept.url == plain.url)
            #expect(kept.headerLines == plain.headerLines)
            #expect(kept.bodyText == plain.bodyText)
            #expect(kept.headerLines.first == "authorization: bearer \(jwt)")
        }
    }

    @Test func devicePathPrefixIsTheBaseURLsDevicePath() {
        #expect(APNsGateway.production.devicePathPrefix == "https://api.push.apple.com/3/device/")
        #expect(APNsGateway.sandbox.devicePathPrefix == "https://api.sandbox.push.apple.com/3/device/")
        #expect(APNsGateway(isSandbox: true, baseURL: "https://127.0.0.1:9443/").devicePathPrefix == "https://127.0.0.1:9443/3/device/")
    }

    @Test func priorityHeaderValues() {
        #expect(APNsPriority.immediately.headerValue == "10")
        #expect(APNsPriority.consideringDevicePower.headerValue == "5")
        #expect(APNsPriority.prioritizingDevicePower.headerValue == "1")
    }
}
