import Foundation
import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushFCM

@Suite struct FCMRequestBuilderTests {
    let now = 1_754_563_200

    func build(_ notification: PushNotification, endpoint: FCMEndpoint = .production) throws -> PushHTTPRequest {
        try FCMRequestBuilder.request(for: notification, deviceToken: "fcm-token-1", projectID: "herald-test",
                                      accessToken: "ya29.token", endpoint: endpoint, now: now)
    }

    @Test func seed001Alert() throws {
        var notification = PushNotification.seed001
        notification.title = "Order #1042 paid"
        notification.body = "R$1,234.56 · Ana Souza"
        let request = try build(notification)
        #expect(request.url == "https://fcm.googleapis.com/v1/projects/herald-test/messages:send")
        #expect(request.headerLines == ["authorization: Bearer ya29.token", "content-type: application/json"])
        #expect(request.bodyText == #"{"message":{"android":{"collapse_key":"order-paid-0199b7e2","notification":{"channel_id":"orders","notification_count":3,"sound":"default","tag":"order-paid-0199b7e2"},"priority":"high","ttl":"3600s"},"apns":{"headers":{"apns-collapse-id":"order-paid-0199b7e2","apns-expiration":"1754566800","apns-priority":"10","apns-push-type":"alert"},"payload":{"aps":{"badge":3,"sound":"default","thread-id":"store-0199a0c4"}}},"data":{"kind":"orders.paid","order_id":"0199b7e2","store_id":"0199a0c4"},"notification":{"body":"R$1,234.56 · Ana Souza","title":"Order #1042 paid"},"token":"fcm-token-1"}}"#)
    }

    @Test func normalPriorityAndExplicitTagAndCount() throws {
        let notification = PushNotification(title: "t", body: "b", badge: 3, collapseKey: "c", priority: .normal, ttlSeconds: 60, tag: "tag", notificationCount: 7)
        #expect(try build(notification).bodyText == #"{"message":{"android":{"collapse_key":"c","notification":{"notification_count":7,"tag":"tag"},"priority":"normal","ttl":"60s"},"apns":{"headers":{"apns-collapse-id":"c","apns-expiration":"1754563260","apns-priority":"10","apns-push-type":"alert"},"payload":{"aps":{"badge":3}}},"notification":{"body":"b","title":"t"},"token":"fcm-token-1"}}"#)
    }

    @Test func wakeupIsDataOnlyHighPriority() throws {
        let request = try build(.wakeup(data: ["generation_id": "g-1", "status": "succeeded"]), endpoint: FCMEndpoint(baseURL: "https://127.0.0.1:9443"))
        #expect(request.url == "https://127.0.0.1:9443/v1/projects/herald-test/messages:send")
        #expect(request.bodyText == #"{"message":{"android":{"priority":"high","ttl":"3600s"},"apns":{"headers":{"apns-expiration":"1754566800","apns-priority":"5","apns-push-type":"background"},"payload":{"aps":{"content-available":1}}},"data":{"generation_id":"g-1","status":"succeeded"},"token":"fcm-token-1"}}"#)
    }

    /// PU-8c: an FCM token on iOS wakes a backgrounded app only with APNs's background headers.
    @Test func wakeupCarriesTheAPNsBackgroundBlock() throws {
        let request = try build(.wakeup(data: ["generation_id": "g-1"], collapseKey: "gen-g-1", ttlSeconds: 0))
        let apns = try apnsBlock(request)
        #expect(apns["headers"] as? [String: String] == ["apns-push-type": "background", "apns-priority": "5", "apns-collapse-id": "gen-g-1",
                                                         "apns-expiration": "0"])
        // content-available alone: Apple refuses alert, badge or sound on a background push.
        #expect((apns["payload"] as? [String: Any]).flatMap { $0["aps"] as? [String: Int] } == ["content-available": 1])
    }

    /// PU-8c: an alert's APNs options travel in the apns block (FCM has no fields for them).
    @Test func alertCarriesItsAPNsOptions() throws {
        var notification = PushNotification.seed001
        notification.priority = .urgent
        notification.sound = nil
        let apns = try apnsBlock(try build(notification))
        let headers = try #require(apns["headers"] as? [String: String])
        #expect(headers["apns-push-type"] == "alert" && headers["apns-priority"] == "10")
        #expect(headers["apns-collapse-id"] == "order-paid-0199b7e2")
        let aps = try #require((apns["payload"] as? [String: Any])?["aps"] as? [String: Any])
        #expect(aps["badge"] as? Int == 3)
        #expect(aps["thread-id"] as? String == "store-0199a0c4")
        #expect(aps["interruption-level"] as? String == "time-sensitive")
        #expect(aps["sound"] == nil && aps["content-available"] == nil && aps["alert"] == nil)
    }

    /// A collapse key APNs would refuse (over 64 bytes) still collapses on Android but is not sent to APNs.
    @Test func longCollapseKeyStaysOffTheAPNsHeaders() throws {
        let key = String(repeating: "k", count: 65)
        let request = try build(PushNotification(title: "t", collapseKey: key))
        let headers = try #require(try apnsBlock(request)["headers"] as? [String: String])
        #expect(headers["apns-collapse-id"] == nil)
        #expect(request.bodyText.contains(#""collapse_key":"\#(key)""#))
    }

    /// ADR 0020: without a collapse key or tag the notification's id is the alert's Android `tag`
    /// (display replacement) and `apns-collapse-id` in the apns block (alerts and wake-ups), so a
    /// resend replaces its first copy; never `collapse_key` (FCM keeps 4 per device), and a wake-up
    /// gets no `android.notification` (that would make it a shown notification).
    @Test func theNotificationIDIsTheTagAndAPNsCollapseIDButNeverTheCollapseKey() throws {
        let id = "ntf_01jf3k9q7m2x8c4v5b6n7"
        var alert = PushNotification(title: "t", body: "b", priority: .normal, ttlSeconds: 60, notificationID: id)
        #expect(try build(alert).bodyText == #"{"message":{"android":{"notification":{"tag":"ntf_01jf3k9q7m2x8c4v5b6n7"},"priority":"normal","ttl":"60s"},"apns":{"headers":{"apns-collapse-id":"ntf_01jf3k9q7m2x8c4v5b6n7","apns-expiration":"1754563260","apns-priority":"10","apns-push-type":"alert"}},"notification":{"body":"b","title":"t"},"token":"fcm-token-1"}}"#)
        let wakeup = PushNotification.wakeup(data: ["m": "1"], ttlSeconds: 60, notificationID: id)
        #expect(try build(wakeup).bodyText == #"{"message":{"android":{"priority":"high","ttl":"60s"},"apns":{"headers":{"apns-collapse-id":"ntf_01jf3k9q7m2x8c4v5b6n7","apns-expiration":"1754563260","apns-priority":"5","apns-push-type":"background"},"payload":{"aps":{"content-available":1}}},"data":{"m":"1"},"token":"fcm-token-1"}}"#)
        // The caller's tag and collapse key win over the id, each where it applies.
        alert.tag = "chat-9"
        var headers = try #require(try apnsBlock(try build(alert))["headers"] as? [String: String])
        #expect(headers["apns-collapse-id"] == id)
        #expect(try build(alert).bodyText.contains(#""notification":{"tag":"chat-9"}"#))
        alert.collapseKey = "order-77"
        headers = try #require(try apnsBlock(try build(alert))["headers"] as? [String: String])
        #expect(headers["apns-collapse-id"] == "order-77")
        #expect(try build(alert).bodyText.contains(#""collapse_key":"order-77""#))
        #expect(!(try build(alert).bodyText.contains(id)))
    }

    func apnsBlock(_ request: PushHTTPRequest) throws -> [String: Any] {
        let outer = try #require(try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any])
        return try #require((outer["message"] as? [String: Any])?["apns"] as? [String: Any])
    }

    @Test func rootKeyHoldsOneJSONString() throws {
        let notification = PushNotification(title: "Operatore", body: "Ciao", data: ["type": "message", "deep_link": "respondo://conversation/a1"], priority: .high, rootKey: "respondo")
        let request = try build(notification)
        #expect(request.bodyText == #"{"message":{"android":{"priority":"high","ttl":"3600s"},"apns":{"headers":{"apns-expiration":"1754566800","apns-priority":"10","apns-push-type":"alert"}},"data":{"respondo":"{\"deep_link\":\"respondo://conversation/a1\",\"type\":\"message\"}"},"notification":{"body":"Ciao","title":"Operatore"},"token":"fcm-token-1"}}"#)
        // The string decodes back to the flat object (seed 004: data["respondo"] as a JSON string).
        let outer = try JSONSerialization.jsonObject(with: Data(request.body)) as! [String: Any]
        let data = (outer["message"] as! [String: Any])["data"] as! [String: String]
        let inner = try JSONSerialization.jsonObject(with: Data(data["respondo"]!.utf8)) as! [String: String]
        #expect(inner == ["type": "message", "deep_link": "respondo://conversation/a1"])
    }

    @Test func ttlFromExpiresAtAndClamped() throws {
        #expect(try build(PushNotification(title: "t", expiresAt: now + 90)).bodyText.contains(#""ttl":"90s""#))
        #expect(try build(PushNotification(title: "t", ttlSeconds: 10_000_000)).bodyText.contains(#""ttl":"2419200s""#))
        #expect(try build(PushNotification(title: "t", ttlSeconds: 0)).bodyText.contains(#""ttl":"0s""#))
        #expect(throws: PushPayloadError.expired) { try build(PushNotification(title: "t", expiresAt: now - 1)) }
    }

    /// Issue 17 (NO-2): `expires_at` 0.853 s ahead was sent as "2s" (the expiry rounded up to
    /// the second minus now rounded down). With the expiry in ms the time left is rounded down:
    /// never a TTL past the caller's expiry; under a second is "0s", now or never.
    @Test func ttlOfAMillisecondExpiryIsTheTimeLeftRoundedDown() throws {
        let nowMs = Int64(now) * 1000 + 400
        func build(expiresInMs: Int) throws -> String {
            let at = Int(nowMs) + expiresInMs
            let notification = PushNotification(title: "t", expiresAt: (at + 999) / 1000, expiresAtMilliseconds: at)
            return try FCMRequestBuilder.request(for: notification, deviceToken: "fcm-token-1", projectID: "herald-test",
                                                 accessToken: "ya29.token", now: now, nowMilliseconds: nowMs, bodies: FCMBodyCache()).bodyText
        }
        #expect(try build(expiresInMs: 853).contains(#""ttl":"0s""#))
        #expect(try build(expiresInMs: 853).contains(#""apns-expiration":"0""#))
        #expect(try build(expiresInMs: 1_999).contains(#""ttl":"1s""#))
        #expect(try build(expiresInMs: 1_999).contains(#""apns-expiration":"\#(now + 1)""#))
        #expect(try build(expiresInMs: 90_000).contains(#""ttl":"90s""#))
        #expect(throws: PushPayloadError.expired) { try build(expiresInMs: 0) }
        // One cache, one second, two expiries: the body follows the TTL, not only the second.
        let bodies = FCMBodyCache()
        let at = Int(nowMs) + 1_500
        let notification = PushNotification(title: "t", expiresAt: (at + 999) / 1000, expiresAtMilliseconds: at)
        let first = try FCMRequestBuilder.request(for: notification, deviceToken: "a", projectID: "p", accessToken: "x",
                                                  now: now, nowMilliseconds: nowMs, bodies: bodies).bodyText
        let second = try FCMRequestBuilder.request(for: notification, deviceToken: "a", projectID: "p", accessToken: "x",
                                                   now: now, nowMilliseconds: nowMs + 550, bodies: bodies).bodyText
        #expect(first.contains(#""ttl":"1s""#) && second.contains(#""ttl":"0s""#))
        // Jobs stored without the ms field keep the whole-second TTL.
        #expect(try self.build(PushNotification(title: "t", expiresAt: now + 2)).bodyText.contains(#""ttl":"2s""#))
    }

    @Test func reservedKeysRefused() throws {
        // `google` alone too: FCM answers INVALID_ARGUMENT "Invalid data payload key: google".
        for key in ["from", "message_type", "gcm", "google", "google.c.a.e", "gcm.notification.x"] {
            #expect(throws: PushPayloadError.reservedDataKey(key)) { try build(PushNotification(title: "t", data: [key: "v"])) }
        }
        #expect(try build(PushNotification(title: "t", data: ["googles": "ok", "fromage": "ok"])).body.count > 0)
        #expect(throws: PushPayloadError.reservedDataKey("from")) { try build(PushNotification(title: "t", data: ["x": "y"], rootKey: "from")) }
    }

    @Test func dataLimitIs4096Bytes() throws {
        // key "k" (1 byte) + value; plus title "t" (1 byte).
        #expect(try build(PushNotification(title: "t", data: ["k": String(repeating: "v", count: 4094)])).body.count > 4096)
        #expect(throws: PushPayloadError.fcmPayloadTooLarge(bytes: 4097, limit: 4096)) {
            try build(PushNotification(title: "t", data: ["k": String(repeating: "v", count: 4095)]))
        }
        // With a root key the JSON string is what counts: "respondo" (8) + {"k":"…"} (8 + 4088).
        #expect(throws: PushPayloadError.fcmPayloadTooLarge(bytes: 4104, limit: 4096)) {
            try build(.wakeup(data: ["k": String(repeating: "v", count: 4088)], rootKey: "respondo"))
        }
    }
}
