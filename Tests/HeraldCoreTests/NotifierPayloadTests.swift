import Foundation
@testable import HeraldCore
import StorageSQLite
import Testing

/// AP-4 (the payload root key) and NO-5's user-language fallback, at the choke point: what the
/// `push.deliver` job of each device holds.
@Suite struct NotifierPayloadTests {
    typealias Harness = NotifierTests.Harness

    func call(_ users: [String], data: [String: String] = [:], type: NotificationPlan.PushType = .alert) -> NotificationCall {
        let title = ["en": "Paid", "pt-BR": "Pago", "es": "Pagado"]
        let plan = NotificationPlan(kind: "orders.paid", scope: nil, title: title, body: nil, arguments: [:], data: data,
                                    collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil, priority: "normal",
                                    expiresAt: nil, badge: nil, persist: true, policy: .always,
                                    ackWindowMilliseconds: 3_000, type: type, audience: "everyone", trackOpens: true)
        return NotificationCall(recipients: .users(users), plan: plan, live: nil, idempotencyKey: nil, requestHash: "",
                                planJSON: plan.jsonText(), titleJSON: JSONText.object(title), bodyJSON: nil,
                                argsJSON: nil, dataJSON: JSONText.object(data))
    }

    func notifications(_ h: Harness) throws -> [String: PushNotification] {
        var byDevice: [String: PushNotification] = [:]
        for job in try h.jobs() {
            let payload = try DeliveryJobPayload.decode(job.payloadJSON)
            byDevice[payload.deviceID] = payload.notification
        }
        return byDevice
    }

    @Test func theRootKeyHoldsTheDataAndHeraldsOwnKeys() async throws {
        let h = try Harness(payload: try PayloadOptions(rootKey: "respondo"))
        try h.device(user: "u1", session: "s1")
        h.connect("c1", user: "u1", session: "s1", state: .background)
        let body = try h.created(await h.send(call(["u1"], data: ["conversation_id": "a1"], type: .wakeup)))
        let id = try NotifierTests.firstID(body)
        let push = try #require(try notifications(h)["dev_u1_s1"])
        #expect(push.rootKey == "respondo")
        // Everything the SDK reads is in `data`, which each provider puts under the root key.
        #expect(push.data["conversation_id"] == "a1" && push.data["kind"] == "orders.paid" && push.data["notification_id"] == id)
        #expect(push.data["delivery_id"]?.hasPrefix("dlv") == true && push.data["cursor"] != nil)
    }

    /// ADR 0020: every device's push names the inbox notification, alerts and wake-ups alike, so
    /// a resend's providers replace the first copy; two calls never share one.
    @Test func everyPushNamesItsNotification() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "s1")
        try h.device(user: "u2", session: "s2")
        let first = try NotifierTests.firstID(try h.created(await h.send(call(["u1"]))))
        var pushes = try notifications(h)
        #expect(pushes["dev_u1_s1"]?.notificationID == first)
        #expect(pushes["dev_u1_s1"]?.effectiveCollapseID == first && pushes["dev_u1_s1"]?.effectiveTag == first)
        let second = try NotifierTests.firstID(try h.created(await h.send(call(["u2"], type: .wakeup))))
        pushes = try notifications(h)
        #expect(second != first && pushes["dev_u2_s2"]?.notificationID == second)
    }

    @Test func withoutARootKeyTheDataStaysFlat() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "s1")
        _ = try h.created(await h.send(call(["u1"], data: ["conversation_id": "a1"])))
        let push = try #require(try notifications(h)["dev_u1_s1"])
        #expect(push.rootKey == nil && push.data["conversation_id"] == "a1")
    }

    @Test func aDeviceWithoutALocaleIsWrittenInTheUsersLanguageBeforeTheDefault() async throws {
        let h = try Harness()
        try h.device(user: "u1", session: "s1")   // no locale
        try h.device(user: "u2", session: "s2")   // no locale, no profile
        let withLocale = try h.storage.writeSync { tx in
            try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: "s3", platform: "android", provider: "apns",
                                                       token: "cd01", locale: "es"),
                                    sessionExpiresAt: nil, newID: "dev_u1_s3", now: 1).device
        }
        try h.storage.writeSync { tx in
            try tx.users.put(UserProfile(userID: "u1", locale: "pt-BR", updatedAt: 1))
            try tx.users.put(UserProfile(userID: "u2", locale: nil, updatedAt: 1))
        }
        _ = try h.created(await h.send(call(["u1", "u2"])))
        let pushes = try notifications(h)
        #expect(pushes["dev_u1_s1"]?.title == "Pago")
        #expect(pushes[withLocale.id]?.title == "Pagado")   // the device's own locale wins
        #expect(pushes["dev_u2_s2"]?.title == "Paid")       // the app default
    }

    @Test func aDeviceLocaleTheTextsLackFallsToTheUsersLanguageBeforeTheDefault() async throws {
        let h = try Harness()
        let devices = try h.storage.writeSync { tx in
            // French: no French text; the user's profile says Brazilian Portuguese.
            let french = try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: "s1", platform: "ios", provider: "apns",
                                                                    token: "cd01", locale: "fr-FR"),
                                                 sessionExpiresAt: nil, newID: "dev_fr", now: 1).device
            // Spanish of Mexico: its language without the region (`es`) comes before the user's.
            let mexican = try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: "s2", platform: "ios", provider: "apns",
                                                                     token: "cd02", locale: "es-MX"),
                                                  sessionExpiresAt: nil, newID: "dev_mx", now: 1).device
            // Another user with a French device and no profile language: the app default.
            let other = try tx.devices.register(DeviceRegistration(userID: "u2", sessionID: "s3", platform: "ios", provider: "apns",
                                                                   token: "cd03", locale: "fr"),
                                                sessionExpiresAt: nil, newID: "dev_u2", now: 1).device
            try tx.users.put(UserProfile(userID: "u1", locale: "pt-BR", updatedAt: 1))
            return (french, mexican, other)
        }
        _ = try h.created(await h.send(call(["u1", "u2"])))
        let pushes = try notifications(h)
        #expect(pushes[devices.0.id]?.title == "Pago")
        #expect(pushes[devices.1.id]?.title == "Pagado")
        #expect(pushes[devices.2.id]?.title == "Paid")
    }
}
