import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushAPNs

@Suite struct APNsRequestBuilderTests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
    let id = PushID("EABEAE54-14A8-11E5-B60B-1697F925EC7B")!
    let now = 1_754_563_200

    func build(_ notification: PushNotification, environment: APNsGateway = .production) throws -> PushHTTPRequest {
        try APNsRequestBuilder.request(for: notification, deviceToken: Self.token, environment: environment,
                                       topic: "com.mobiari.merchant", authToken: "eyJ.jwt.sig", apnsID: id, now: now)
    }

    /// Seed 001's iOS example, with high priority (no interruption level: only urgent is time-sensitive).
    static let seed001 = PushNotification.seed001

    @Test func seed001Alert() throws {
        let request = try build(Self.seed001)
        #expect(request.url == "https://api.push.apple.com/3/device/\(Self.token)")
        #expect(request.headerLines == [
            "authorization: bearer eyJ.jwt.sig",
            "apns-id: eabeae54-14a8-11e5-b60b-1697f925ec7b",
            "apns-push-type: alert",
            "apns-priority: 10",
            "apns-expiration: 1754566800",
            "apns-topic: com.mobiari.merchant",
            "apns-collapse-id: order-paid-0199b7e2",
            "content-type: application/json",
        ])
        #expect(request.bodyText == #"{"aps":{"alert":{"body":"R$ 1.234,56 · Ana Souza","subtitle":"Loja Azul","title":"Pedido #1042 pago"},"badge":3,"sound":"default","thread-id":"store-0199a0c4"},"kind":"orders.paid","order_id":"0199b7e2","store_id":"0199a0c4"}"#)
    }

    @Test func normalPriorityHasNoInterruptionLevelAndOverrideWins() throws {
        var notification = PushNotification(title: "t", body: "b")
        #expect(try build(notification).bodyText == #"{"aps":{"alert":{"body":"b","title":"t"}}}"#)
        #expect(try build(notification).headerLines.contains("apns-priority: 10"))  // alerts are always 10 (PU-1)
        notification.interruptionLevel = .passive
        notification.priority = .urgent
        #expect(try build(notification).bodyText == #"{"aps":{"alert":{"body":"b","title":"t"},"interruption-level":"passive"}}"#)
    }

    @Test func wakeupIsBackgroundPriorityFiveWithIdsOnly() throws {
        let wakeup = PushNotification.wakeup(data: ["generation_id": "g-1", "status": "succeeded"])
        let request = try build(wakeup, environment: .sandbox)
        #expect(request.url == "https://api.sandbox.push.apple.com/3/device/\(Self.token)")
        #expect(request.headerLines == [
            "authorization: bearer eyJ.jwt.sig",
            "apns-id: eabeae54-14a8-11e5-b60b-1697f925ec7b",
            "apns-push-type: background",
            "apns-priority: 5",
            "apns-expiration: 1754566800",
            "apns-topic: com.mobiari.merchant",
            "content-type: application/json",
        ])
        #expect(request.bodyText == #"{"aps":{"content-available":1},"generation_id":"g-1","status":"succeeded"}"#)
        // Alert fields never leak into a wake-up, and urgent does not lift its priority.
        var noisy = wakeup
        noisy.title = "x"; noisy.badge = 1; noisy.sound = "default"; noisy.priority = .urgent
        #expect(try build(noisy).bodyText == request.bodyText)
        #expect(try build(noisy).headerLines.contains("apns-priority: 5"))
    }

    /// ADR 0020: without a collapse key the notification's id is `apns-collapse-id`, on alerts and
    /// background pushes alike, so a push resent after a crash replaces its first copy; the
    /// caller's key wins; without either there is no header.
    @Test func theNotificationIDCollapsesAResendUnlessTheCallerGaveAKey() throws {
        var alert = PushNotification(title: "t", body: "b", notificationID: "ntf_01jf3k9q7m2x8c4v5b6n7")
        #expect(try build(alert).headerLines.contains("apns-collapse-id: ntf_01jf3k9q7m2x8c4v5b6n7"))
        let wakeup = PushNotification.wakeup(data: ["m": "1"], notificationID: "push_01jf3k9q7m2x8c4v5b6n7")
        #expect(try build(wakeup).headerLines.contains("apns-collapse-id: push_01jf3k9q7m2x8c4v5b6n7"))
        alert.collapseKey = "order-77"
        let lines = try build(alert).headerLines
        #expect(lines.filter { $0.hasPrefix("apns-collapse-id:") } == ["apns-collapse-id: order-77"])
        // An id APNs would refuse is left out rather than failing the push (ours always fit).
        alert.collapseKey = nil
        alert.notificationID = String(repeating: "n", count: 65)
        #expect(!(try build(alert).headerLines.contains { $0.hasPrefix("apns-collapse-id:") }))
        alert.notificationID = nil
        #expect(!(try build(alert).headerLines.contains { $0.hasPrefix("apns-collapse-id:") }))
    }

    @Test func rootKeyNamespacesTheData() throws {
        var notification = PushNotification(title: "Operatore", body: "Ciao", data: ["type": "message", "conversation_id": "a1"], rootKey: "respondo")
        #expect(try build(notification).bodyText == #"{"aps":{"alert":{"body":"Ciao","title":"Operatore"}},"respondo":{"conversation_id":"a1","type":"message"}}"#)
        notification = .wakeup(data: ["message_id": "m1"], rootKey: "respondo")
        #expect(try build(notification).bodyText == #"{"aps":{"content-available":1},"respondo":{"message_id":"m1"}}"#)
    }

    @Test func expirationFromTTLOrExpiresAt() throws {
        var notification = PushNotification(title: "t", ttlSeconds: 0)
        #expect(try build(notification).headerLines.contains("apns-expiration: 0"))
        notification.ttlSeconds = 60
        #expect(try build(notification).headerLines.contains("apns-expiration: \(now + 60)"))
        notification.expiresAt = now + 10
        #expect(try build(notification).headerLines.contains("apns-expiration: \(now + 10)"))
        notification.expiresAt = now
        #expect(throws: PushPayloadError.expired) { try build(notification) }
        notification.expiresAt = nil
        notification.ttlSeconds = -1
        #expect(throws: PushPayloadError.invalidTTL(-1)) { try build(notification) }
    }

    /// Issue 17 (NO-2): `ttl_seconds: 1` was sent as apns-expiration = send time + 1.68 s. With
    /// the expiry in ms, apns-expiration is now + the time left rounded down, `0` (now or never)
    /// with under a second left: APNs never keeps the push past the caller's expiry.
    @Test func expirationOfAMillisecondExpiryIsNeverPastIt() throws {
        let nowMs = Int64(now) * 1000 + 320
        func expiration(expiresInMs: Int) throws -> String? {
            let at = Int(nowMs) + expiresInMs
            let notification = PushNotification(title: "t", expiresAt: (at + 999) / 1000, expiresAtMilliseconds: at)
            return try APNsRequestBuilder.request(for: notification, deviceToken: Self.token, environment: .production, topic: "t",
                                                  authToken: "a", apnsID: id, now: now, nowMilliseconds: nowMs)
                .headerLines.first { $0.hasPrefix("apns-expiration: ") }
        }
        #expect(try expiration(expiresInMs: 980) == "apns-expiration: 0")
        #expect(try expiration(expiresInMs: 1_680) == "apns-expiration: \(now + 1)")
        #expect(try expiration(expiresInMs: 10_000) == "apns-expiration: \(now + 10)")
        #expect(throws: PushPayloadError.expired) { try expiration(expiresInMs: -1) }
        // Without the ms field: the stored whole second, as before.
        #expect(try build(PushNotification(title: "t", expiresAt: now + 2)).headerLines.contains("apns-expiration: \(now + 2)"))
    }

    @Test func refusals() throws {
        var notification = PushNotification(title: "t", collapseKey: String(repeating: "c", count: 65))
        #expect(throws: PushPayloadError.collapseIDTooLong(bytes: 65)) { try build(notification) }
        notification.collapseKey = nil
        #expect(throws: PushPayloadError.invalidDeviceToken) {
            try APNsRequestBuilder.request(for: notification, deviceToken: "zz", environment: .production, topic: "t", authToken: "a", apnsID: id, now: now)
        }
        #expect(throws: PushPayloadError.invalidDeviceToken) {
            try APNsRequestBuilder.request(for: notification, deviceToken: "", environment: .production, topic: "t", authToken: "a", apnsID: id, now: now)
        }
        notification.data = ["aps": "x"]
        #expect(throws: PushPayloadError.reservedDataKey("aps")) { try build(notification) }
    }

    /// `POST /v1/notifications` takes a title and a body of 1024 bytes each and 2048 bytes of data,
    /// which together can outgrow APNs's 4096: every iOS push of such a notification was
    /// dead-lettered `payload_too_large` after a 201 (breaker7). The alert's body, then its title,
    /// is shortened by whole characters and ends in "…" until the payload fits; data is never cut.
    @Test func anAlertOverTheLimitHasItsBodyShortenedToFit() throws {
        var data: [String: String] = [:]
        for i in 0..<22 { data["k\(i)"] = String(repeating: "v", count: 80) }
        let title = String(repeating: "T", count: 1024)
        let long = PushNotification(title: title, body: String(repeating: "é", count: 600) + String(repeating: "\"", count: 24), data: data)
        let request = try build(long)
        #expect(request.body.count <= 4096)
        #expect(request.body.count > 4096 - 4)  // cut by what was needed, not more
        #expect(request.bodyText.contains("\"title\":\"\(title)\""))
        #expect(request.bodyText.contains("éé…\""))
        for i in 0..<22 { #expect(request.bodyText.contains("\"k\(i)\":\"\(String(repeating: "v", count: 80))\"")) }
        // With no body left to cut, the title is shortened the same way.
        let titleOnly = PushNotification(title: String(repeating: "😀", count: 1000), data: ["k": String(repeating: "v", count: 100)])
        let shortTitle = try build(titleOnly)
        #expect(shortTitle.body.count <= 4096 && shortTitle.bodyText.contains("😀…\""))
        // An alert that fits is left as it is.
        #expect(try build(PushNotification(title: "t", body: "b")).bodyText == #"{"aps":{"alert":{"body":"b","title":"t"}}}"#)
    }

    @Test func payloadLimitIs4096BytesOfBody() throws {
        // {"aps":{},"k":"<v>"} is 17 bytes + v.
        let fits = PushNotification(data: ["k": String(repeating: "v", count: 4096 - 17)])
        #expect(try build(fits).body.count == 4096)
        let over = PushNotification(data: ["k": String(repeating: "v", count: 4096 - 16)])
        #expect(throws: PushPayloadError.apnsPayloadTooLarge(bytes: 4097, limit: 4096)) { try build(over) }
    }
}
