import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushAPNs

@Suite struct APNsWireValueTests {
    @Test func priorities() {
        #expect(APNsPriority.immediately.headerValue == "10")
        #expect(APNsPriority.consideringDevicePower.headerValue == "5")
        #expect(APNsPriority.prioritizingDevicePower.headerValue == "1")
    }

    @Test func pushTypesAndLimits() {
        #expect(APNsPushType.alert.rawValue == "alert")
        #expect(APNsPushType.background.rawValue == "background")
        #expect(APNsPushType.alert.maximumPayloadBytes == 4096)
        #expect(APNsPushType.voip.maximumPayloadBytes == 5120)
    }

    @Test func gatewaysFromSettings() {
        #expect(APNsGateways(settings: [:]) == APNsGateways(production: .production, sandbox: .sandbox))
        #expect(APNsGateway.production.baseURL == "https://api.push.apple.com")
        #expect(APNsGateway.sandbox.baseURL == "https://api.sandbox.push.apple.com")
        let gateways = APNsGateways(settings: ["HERALD_APNS_URL": "https://127.0.0.1:8443/", "HERALD_APNS_SANDBOX_URL": "https://127.0.0.1:8444"])
        #expect(gateways.production == APNsGateway(isSandbox: false, baseURL: "https://127.0.0.1:8443"))
        #expect(gateways.gateway(forDeviceEnvironment: "sandbox").baseURL == "https://127.0.0.1:8444")
        #expect(gateways.gateway(forDeviceEnvironment: nil).name == "production")
    }

    @Test func collapseIDLimitIsSixtyFourBytes() throws {
        #expect(try APNsCollapseID(String(repeating: "a", count: 64)).value.count == 64)
        #expect(throws: PushPayloadError.collapseIDTooLong(bytes: 65)) { try APNsCollapseID(String(repeating: "a", count: 65)) }
        #expect(throws: PushPayloadError.collapseIDTooLong(bytes: 66)) { try APNsCollapseID(String(repeating: "é", count: 33)) }  // bytes, not characters
        #expect(throws: PushPayloadError.emptyCollapseID) { try APNsCollapseID("") }
    }

    @Test func expiration() {
        #expect(APNsExpiration.immediately.headerValue == "0")
        #expect(APNsExpiration.after(ttlSeconds: 3600, now: 1_000).headerValue == "4600")
        #expect(APNsExpiration.after(ttlSeconds: 0, now: 1_000) == .immediately)
        #expect(APNsExpiration.at(99).epochSeconds == 99)
    }

    @Test func reasonStringsRoundTrip() {
        for reason in APNsErrorReason.known { #expect(APNsErrorReason(rawValue: reason.rawValue) == reason) }
        #expect(APNsErrorReason.known.count == 33)
        #expect(APNsErrorReason(rawValue: "BadEnvironmentKeyInToken") == .badEnvironmentKeyInToken)
        #expect(APNsErrorReason(rawValue: "SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsErrorReason.unknown("SomethingNew").rawValue == "SomethingNew")
        #expect(APNsErrorReason(rawValue: "unregistered") == .unknown("unregistered"))  // case-sensitive
    }
}
