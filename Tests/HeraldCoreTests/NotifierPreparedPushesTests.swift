import Foundation
@testable import HeraldCore
import StorageSQLite
import Testing

/// A call's pushes made before its planning unit (issue 17: off the serial writer) are the ones
/// the unit would make for each device, and only made when no device's language or read can
/// change them.
@Suite struct NotifierPreparedPushesTests {
    typealias Harness = NotifierTests.Harness

    /// A registered iOS device of `user` whose language is `locale`.
    static func device(_ h: Harness, user: String, session: String, locale: String?) throws {
        let now = h.clock.unixMilliseconds
        _ = try h.storage.writeSync { tx in
            try tx.devices.register(DeviceRegistration(userID: user, sessionID: session, platform: "ios", provider: "apns",
                                                       token: "cd" + session.utf8.map { String($0, radix: 16) }.joined(), locale: locale),
                                    sessionExpiresAt: nil, newID: "dev_\(user)_\(session)", now: now).device
        }
    }

    /// `h.call` with its own texts by language and options the preparation looks at.
    static func call(_ h: Harness, _ users: [String], title: [String: String], badge: NotificationPlan.Badge? = nil,
                     trackOpens: Bool = false) -> NotificationCall {
        let plan = NotificationPlan(kind: "k", scope: nil, title: title, body: ["*": "B {who}"], arguments: ["who": "Ann"], data: ["x": "1"],
                                    collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil, priority: "normal",
                                    expiresAt: nil, badge: badge, persist: true, policy: .always, ackWindowMilliseconds: 0, type: .alert,
                                    audience: "everyone", trackOpens: trackOpens)
        return NotificationCall(recipients: .users(users), plan: plan, live: nil, idempotencyKey: nil, requestHash: "",
                                planJSON: plan.jsonText(), titleJSON: JSONText.object(title), bodyJSON: JSONText.object(["*": "B {who}"]),
                                argsJSON: JSONText.object(["who": "Ann"]), dataJSON: "{\"x\":\"1\"}")
    }

    /// The stored jobs' notifications, by device id.
    static func pushes(_ h: Harness) throws -> [String: PushNotification] {
        var out: [String: PushNotification] = [:]
        for job in try h.jobs() {
            let payload = try DeliveryJobPayload.decode(job.payloadJSON)
            out[payload.deviceID] = payload.notification
        }
        return out
    }

    @Test("one text for every language: each device's job holds the push the unit would render for it, its stored text the encoder's")
    func preparedPushesAreTheOnesEachDeviceWouldGet() async throws {
        let h = try Harness()
        try Self.device(h, user: "u1", session: "de", locale: "de")
        try Self.device(h, user: "u1", session: "none", locale: nil)
        try Self.device(h, user: "u2", session: "fr", locale: "fr")
        let call = Self.call(h, ["u1", "u2"], title: ["*": "Hello {who}"])
        let body = try h.created(await h.send(call))
        #expect(body["push_queued"] as? Int == 3)
        let stored = try #require(body["notifications"] as? [[String: Any]])
        let ids = Dictionary(uniqueKeysWithValues: stored.map { ($0["user_id"] as? String ?? "", $0["id"] as? String ?? "") })
        let pushes = try Self.pushes(h)
        #expect(pushes.count == 3)
        let texts = Notifier.Texts(title: try NotificationPlan.localized(call.plan.title!), body: try NotificationPlan.localized(call.plan.body!))
        for (device, user, locale) in [("dev_u1_de", "u1", "de"), ("dev_u1_none", "u1", nil), ("dev_u2_fr", "u2", "fr")] {
            let record = try #require(h.storage.readSync { try $0.notifications.find(id: ids[user] ?? "") })
            let expected = try h.notifier.pushNotification(call.plan, profile: h.notifier.defaultProfile, texts: texts, record: record,
                                                           deviceLocale: locale, eventID: nil, unread: nil, deliveryID: nil, now: 0)
            let push = try #require(pushes[device])
            #expect(push.title == "Hello Ann" && push.body == "B Ann")
            #expect(push.notificationID == record.id)
            // The stored form is the encoder's, whichever path wrote it; the event id aside
            // (nothing subscribes here, so there is none).
            #expect(push == expected)
            #expect(PayloadTextCache.encoderText(push) == PayloadTextCache.encoderText(expected))
        }
        let preparing = h.notifier.preparesPushes.load(ordering: .relaxed)
        #expect(preparing)
    }

    @Test("texts by language, the unread badge or a delivery id: nothing is made ahead, and each device still gets its own push")
    func nothingPreparedWhenADeviceOrAReadDecides() async throws {
        let h = try Harness()
        try Self.device(h, user: "u1", session: "de", locale: "de")
        try Self.device(h, user: "u1", session: "fr", locale: "fr")
        let profile = h.notifier.defaultProfile
        let byLanguage = Self.call(h, ["u1"], title: ["de": "Hallo", "fr": "Salut"])
        func planning(_ call: NotificationCall) -> Notifier.Planning {
            let record = NotificationRecord(id: "ntf_1", app: "default", userID: "u1", kind: "k", scope: nil, titleJSON: nil, bodyJSON: nil,
                                            argsJSON: nil, dataJSON: "{}", collapseKey: nil, threadID: nil, priority: "normal",
                                            expiresAt: nil, inInbox: true, planID: nil, createdAt: 0)
            return Notifier.Planning(app: "default", stored: [record], plan: call.plan, live: nil, skipped: [], pending: nil) { _ in }
        }
        #expect(h.notifier.preparePushes(planning(byLanguage), profile: profile, events: [nil], now: 0) == nil)
        #expect(h.notifier.preparePushes(planning(Self.call(h, ["u1"], title: ["*": "T"], badge: .unread)), profile: profile, events: [nil], now: 0) == nil)
        #expect(h.notifier.preparePushes(planning(Self.call(h, ["u1"], title: ["*": "T"], trackOpens: true)), profile: profile, events: [nil], now: 0) == nil)
        let single = try #require(h.notifier.preparePushes(planning(Self.call(h, ["u1"], title: ["*": "T"], badge: .number(3))), profile: profile,
                                                           events: [nil], now: 0))
        #expect(single.pushes.count == 1 && single.pushes[0]?.badge == 3 && single.pushes[0]?.preparedStoredText != nil)

        let body = try h.created(await h.send(byLanguage))
        #expect(body["push_queued"] as? Int == 2)
        let pushes = try Self.pushes(h)
        #expect(pushes["dev_u1_de"]?.title == "Hallo" && pushes["dev_u1_fr"]?.title == "Salut")
    }

    @Test("a batch that pushed to fewer than half its notifications stops the making ahead; one that pushed to most starts it again")
    func preparingFollowsWhetherPushesWereQueued() async throws {
        let h = try Harness()
        _ = try h.created(await h.send(h.call(["nobody-1", "nobody-2"])))
        let afterNone = h.notifier.preparesPushes.load(ordering: .relaxed)
        #expect(!afterNone)
        try Self.device(h, user: "u1", session: "s1", locale: nil)
        let body = try h.created(await h.send(h.call(["u1"])))
        #expect(body["push_queued"] as? Int == 1)
        let afterOne = h.notifier.preparesPushes.load(ordering: .relaxed)
        #expect(afterOne)
        #expect(try Self.pushes(h)["dev_u1_s1"]?.title == "T")
    }

    @Test("a prepared stored text is the encoder's, is what the cache gives, and goes with any change to the notification")
    func preparedStoredTextFollowsTheNotification() throws {
        let cache = PayloadTextCache(recentCapacity: 4)
        var push = PushNotification(title: "t", body: "b", data: ["k": "v"], notificationID: "ntf_1")
        #expect(push.preparedStoredText == nil)
        push.prepareStoredText()
        let text = try #require(push.preparedStoredText)
        #expect(text == PayloadTextCache.encoderText(push))
        #expect(cache.text(of: push, keptForClaim: false) == text)
        let shared = push
        var changed = push
        changed.data["k"] = "w"
        #expect(changed.preparedStoredText == nil)
        #expect(cache.text(of: changed) == PayloadTextCache.encoderText(changed))
        #expect(shared.preparedStoredText == text && push.preparedStoredText == text)
        push.title = "other"
        #expect(push.preparedStoredText == nil && shared.preparedStoredText == text)
    }

    @Test("the renderer renders alike in every language only when the title and body it would use are one text each")
    func rendersAlikeInEveryLocale() throws {
        let one = LocalizedText(single: try TextTemplate("x")), two = LocalizedText(["de": try TextTemplate("x"), "fr": try TextTemplate("y")])
        let kinds: [String: NotificationKind] = [
            "localized": NotificationKind(name: "localized", category: nil, androidChannelID: nil, defaultEnabled: true, requires: nil,
                                          audience: "everyone", priority: nil, sound: nil, inPreferences: true, collapse: nil, tag: nil,
                                          thread: nil, subtitle: nil, title: two, body: one),
        ]
        let renderer = NotificationRenderer(catalog: NotificationCatalog(app: "a", defaultLocale: "en", notificationIDKey: nil, kindKey: "kind",
                                                                         excludedAudiences: [], categories: [:], kinds: kinds))
        #expect(renderer.rendersAlikeInEveryLocale(kind: "unknown", title: one, body: nil))
        #expect(renderer.rendersAlikeInEveryLocale(kind: "unknown", title: nil, body: nil))
        #expect(!renderer.rendersAlikeInEveryLocale(kind: "unknown", title: one, body: two))
        #expect(!renderer.rendersAlikeInEveryLocale(kind: "localized", title: nil, body: one), "the kind's title is by language")
        #expect(renderer.rendersAlikeInEveryLocale(kind: "localized", title: one, body: nil), "the call's title stands in for the kind's")
    }
}
