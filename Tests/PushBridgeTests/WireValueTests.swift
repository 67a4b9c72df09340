import Testing

@testable import PushBridge

@Suite struct WireValueTests {
    @Test func priorities() {
        #expect(APNsPriority.immediately.headerValue == "10")
        #expect(APNsPriority.consideringDevicePower.headerValue == "5")
        #expect(APNsPriority.prioritizingDevicePower.headerValue == "1")
        #expect(AndroidPriority.normal.rawValue == "normal")
        #expect(AndroidPriority.high.rawValue == "high")
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
        #expect(FCMEndpoint(settings: [:]) == .production)
        #expect(FCMEndpoint(settings: ["HERALD_FCM_URL": "https://127.0.0.1:9443/"]).sendURL(projectID: "p") == "https://127.0.0.1:9443/v1/projects/p/messages:send")
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

    @Test func interruptionLevels() {
        #expect([InterruptionLevel.passive, .active, .timeSensitive, .critical].map(\.rawValue) == ["passive", "active", "time-sensitive", "critical"])
    }

    @Test func apnsIDs() throws {
        #expect(APNsID("EABEAE54-14A8-11E5-B60B-1697F925EC7B")?.value == "eabeae54-14a8-11e5-b60b-1697f925ec7b")
        #expect(APNsID("eabeae54-14a8-11e5-b60b-1697f925ec7") == nil)
        #expect(APNsID("eabeae5414a811e5b60b1697f925ec7b") == nil)
        #expect(APNsID("geabeae5-14a8-11e5-b60b-1697f925ec7b") == nil)
        let random = APNsID.random()
        #expect(APNsID(random.value) == random)
        #expect(random.value == random.value.lowercased())
        #expect(Array(random.value)[14] == "4")
        #expect(APNsID.random() != random)
        // 36 bytes but not 36 ASCII characters, a dash out of place, a dash where a digit belongs.
        #expect(APNsID("eabeae54-14a8-11e5-b60b-1697f925eé") == nil)
        #expect(APNsID("eabeae541-4a8-11e5-b60b-1697f925ec7b") == nil)
        #expect(APNsID("eabeae54-14a8-11e5-b60b-1697f925e-7b") == nil)
        // Every random id is canonical: version 4, variant 10 (8, 9, a or b), dashes at 8-4-4-4-12.
        for _ in 0..<200 {
            let id = Array(APNsID.random().value)
            #expect(id.count == 36 && id[14] == "4" && "89ab".contains(id[19]))
            #expect([8, 13, 18, 23].allSatisfy { id[$0] == "-" })
            #expect(APNsID(String(id)) != nil)
        }
    }

    @Test func jsonIsCompactSortedAndEscaped() {
        let value = PushJSON.object(["b": .int(-1), "a": .array([.null, .bool(true), .string("x/y \"q\" \\ \n\t\u{1}é")]), "B": .object([:])])
        #expect(value.text == #"{"B":{},"a":[null,true,"x/y \"q\" \\ \n\t\u0001é"],"b":-1}"#)
    }

    @Test func reasonStringsRoundTrip() {
        for reason in APNsErrorReason.known { #expect(APNsErrorReason(rawValue: reason.rawValue) == reason) }
        #expect(APNsErrorReason.known.count == 33)
        #expect(APNsErrorReason(rawValue: "BadEnvironmentKeyInToken") == .badEnvironmentKeyInToken)
        #expect(APNsErrorReason(rawValue: "SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsErrorReason.unknown("SomethingNew").rawValue == "SomethingNew")
        #expect(APNsErrorReason(rawValue: "unregistered") == .unknown("unregistered"))  // case-sensitive
        for code in FCMErrorCode.known { #expect(FCMErrorCode(rawValue: code.rawValue) == code) }
        #expect(FCMErrorCode(rawValue: "SENDER_ID_MISMATCH") == .senderIDMismatch)
        #expect(FCMErrorCode(rawValue: "NEW_CODE") == .unknown("NEW_CODE"))
    }
}
