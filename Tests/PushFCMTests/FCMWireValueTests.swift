import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushFCM

@Suite struct FCMWireValueTests {
    @Test func priorities() {
        #expect(AndroidPriority.normal.rawValue == "normal")
        #expect(AndroidPriority.high.rawValue == "high")
    }

    @Test func endpointFromSettings() {
        #expect(FCMEndpoint(settings: [:]) == .production)
        #expect(FCMEndpoint(settings: ["HERALD_FCM_URL": "https://127.0.0.1:9443/"]).sendURL(projectID: "p") == "https://127.0.0.1:9443/v1/projects/p/messages:send")
    }

    @Test func errorCodesRoundTrip() {
        for code in FCMErrorCode.known { #expect(FCMErrorCode(rawValue: code.rawValue) == code) }
        #expect(FCMErrorCode(rawValue: "SENDER_ID_MISMATCH") == .senderIDMismatch)
        #expect(FCMErrorCode(rawValue: "NEW_CODE") == .unknown("NEW_CODE"))
    }
}
