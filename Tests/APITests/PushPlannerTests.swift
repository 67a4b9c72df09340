@testable import API
@testable import HeraldCore
@testable import Realtime
import Testing

/// NO-2 and NO-4: which device is pushed, which is not, and why — without a server.
@Suite struct PushPlannerTests {
    static let catalog = try! NotificationCatalog.parse(Array("""
        {"default_locale": "en", "exclude_audiences": ["staff"],
         "categories": {"orders": {"android_channel_id": "orders"}},
         "kinds": {
           "orders.paid": {"category": "orders", "default_enabled": true, "title": {"en": "Paid"}},
           "inventory.low_stock": {"category": "orders", "default_enabled": false, "title": {"en": "Low"}},
           "audit.entry": {"audience": "staff", "title": {"en": "Audit"}}
         }}
        """.utf8))
    let planner = PushPlanner(catalog: Self.catalog)

    func plan(_ policy: NotificationPlan.Policy = .auto, kind: String = "orders.paid", expiresAt: Int64? = nil,
              audience: String = "everyone") -> NotificationPlan {
        NotificationPlan(kind: kind, scope: nil, title: nil, body: nil, arguments: [:], data: [:], collapseKey: nil, threadID: nil,
                         sound: nil, androidChannelID: nil, priority: "normal", expiresAt: expiresAt, badge: nil, persist: true,
                         policy: policy, ackWindowMilliseconds: 3000, type: .alert, audience: audience, trackOpens: false)
    }

    func device(session: String = "s1", active: Bool = true) -> DeviceRecord {
        DeviceRecord(id: "d1", app: "default", userID: "u1", sessionID: session, platform: "ios", provider: "apns", token: "ab",
                     environment: "production", installationID: nil, locale: "en", appVersion: nil, deviceName: nil,
                     createdAt: 0, lastSeenAt: 0, sessionActive: active)
    }

    func receipt(session: String?, received: Bool, foreground: Bool) -> Presence.Receipt {
        Presence.Receipt(connectionID: "c1", sessionID: session, transport: .sse, received: received, foreground: foreground)
    }

    func decide(_ plan: NotificationPlan, device: DeviceRecord? = nil, receipts: [Presence.Receipt] = [], allowed: Bool = true,
                enabled: Bool = true) -> PushPlanner.Decision {
        planner.decide(plan, device: device ?? self.device(), eventID: "0000000a-7", receipts: receipts,
                       allowedByPreferences: allowed, providerEnabled: enabled, now: 1_000)
    }

    @Test func aForegroundSessionThatReceivedTheEventIsNotPushed() {
        let decision = decide(plan(), receipts: [receipt(session: "s1", received: true, foreground: true)])
        guard case .skip(.suppressedForeground, _) = decision else { Issue.record("\(decision)"); return }
    }

    @Test func backgroundOrNotReceivedOrAnotherSessionIsPushedNow() {
        for receipts in [[receipt(session: "s1", received: true, foreground: false)],
                         [receipt(session: "s1", received: false, foreground: true)],
                         [receipt(session: "s2", received: true, foreground: true)], []] {
            #expect(decide(plan(), receipts: receipts) == .enqueue(runAt: 1_000, ackEventID: nil), "\(receipts)")
        }
    }

    @Test func alwaysPushesEvenToAForegroundSessionAndNeverDoesNot() {
        let foreground = [receipt(session: "s1", received: true, foreground: true)]
        #expect(decide(plan(.always), receipts: foreground) == .enqueue(runAt: 1_000, ackEventID: nil))
        guard case .skip(.skippedPolicy, _) = decide(plan(.never)) else { Issue.record("never pushed"); return }
    }

    @Test func unlessAckedWaitsTheWindowAndNamesTheEvent() {
        #expect(decide(plan(.unlessAcked)) == .enqueue(runAt: 4_000, ackEventID: "0000000a-7"))
    }

    @Test func skipsInTheIssuesOrder() {
        // An ended session wins over everything after it.
        guard case .skip(.skippedSession, _) = decide(plan(expiresAt: 10), device: device(active: false), allowed: false) else {
            Issue.record("session"); return
        }
        guard case .skip(.expired, _) = decide(plan(expiresAt: 1_000), allowed: false) else { Issue.record("expired"); return }
        guard case .skip(.skippedAudience, _) = decide(plan(audience: "staff"), allowed: false) else { Issue.record("audience"); return }
        guard case .skip(.skippedPreferences, _) = decide(plan(), allowed: false) else { Issue.record("preferences"); return }
        guard case .skip(.failed, let why) = decide(plan(), enabled: false) else { Issue.record("provider"); return }
        #expect(why.hasPrefix("push_not_configured"))
    }

    @Test func preferencesGlobalSwitchScopeListAndCatalogDefaults() {
        func saved(_ scope: String?, _ enabled: Bool, _ events: [String]?) -> PushPreferenceRecord {
            PushPreferenceRecord(userID: "u1", scope: scope, isEnabled: enabled, enabledEvents: events, updatedAt: 0)
        }
        // Defaults: on for orders.paid, off for low stock, on for a kind the catalog does not know.
        #expect(planner.allows(kind: "orders.paid", scope: "store:1", global: nil, scoped: nil))
        #expect(!planner.allows(kind: "inventory.low_stock", scope: "store:1", global: nil, scoped: nil))
        #expect(planner.allows(kind: "brand.new", scope: nil, global: nil, scoped: nil))
        // A saved list decides for its scope.
        #expect(planner.allows(kind: "inventory.low_stock", scope: "store:1", global: nil, scoped: saved("store:1", true, ["inventory.low_stock"])))
        #expect(!planner.allows(kind: "orders.paid", scope: "store:1", global: nil, scoped: saved("store:1", true, [])))
        // A silenced scope, and the global switch over everything.
        #expect(!planner.allows(kind: "orders.paid", scope: "store:1", global: nil, scoped: saved("store:1", false, nil)))
        #expect(!planner.allows(kind: "orders.paid", scope: "store:1", global: saved(nil, false, nil), scoped: saved("store:1", true, nil)))
        // Without a scope, the global list decides.
        #expect(!planner.allows(kind: "orders.paid", scope: nil, global: saved(nil, true, ["inventory.low_stock"]), scoped: nil))
        // …but not for a kind outside the catalog, which no list can name.
        #expect(planner.allows(kind: "brand.new", scope: nil, global: saved(nil, true, ["orders.paid"]), scoped: nil))
    }

    /// A GET's `enabled_events` PUT back keeps what is pushed: a kind without preferences is not
    /// in `available_events`, so a saved list (which cannot have offered it) does not turn it off.
    @Test func aSavedListDoesNotSpeakForAKindWithoutPreferences() throws {
        let catalog = try NotificationCatalog.parse(Array("""
            {"default_locale": "en", "kinds": {
               "orders.paid": {"default_enabled": true, "title": {"en": "Paid"}},
               "test": {"preferences": false, "title": {"en": "Test"}}}}
            """.utf8))
        let planner = PushPlanner(catalog: catalog)
        let echoed = PushPreferenceRecord(userID: "u1", scope: nil, isEnabled: true, enabledEvents: ["orders.paid"], updatedAt: 0)
        #expect(planner.allows(kind: "test", scope: nil, global: nil, scoped: nil))
        #expect(planner.allows(kind: "test", scope: nil, global: echoed, scoped: nil))
        #expect(planner.allows(kind: "orders.paid", scope: nil, global: echoed, scoped: nil))
        let none = PushPreferenceRecord(userID: "u1", scope: nil, isEnabled: true, enabledEvents: [], updatedAt: 0)
        #expect(!planner.allows(kind: "orders.paid", scope: nil, global: none, scoped: nil))
        // The global switch still silences it.
        let off = PushPreferenceRecord(userID: "u1", scope: nil, isEnabled: false, enabledEvents: nil, updatedAt: 0)
        #expect(!planner.allows(kind: "test", scope: nil, global: off, scoped: nil))
    }
}

/// The hand-written plan JSON reads back through the `Codable` decoder unchanged.
@Suite struct NotificationPlanJSONTests {
    @Test func roundTripsFullAndMinimalPlans() throws {
        let full = NotificationPlan(
            kind: "orders.paid", scope: "store:1", title: ["pt": "Pedido \"#{n}\" pago", "en": "Order\n{n}"], body: ["*": "{total} · ✓"],
            arguments: ["n": "1042", "total": "R$ 1,00"], data: ["order_id": "o/1", "z": ""], collapseKey: "order-paid-o1",
            threadID: "store-1", sound: "default", androidChannelID: "orders", priority: "urgent", expiresAt: 1_800_000_000_000,
            ttlSeconds: 0, badge: .unread, persist: false, policy: .unlessAcked, ackWindowMilliseconds: 2500, type: .wakeup,
            audience: "staff", trackOpens: true, idempotencyKey: "k-1")
        var minimal = PushPlannerTests().plan()
        minimal.badge = .number(7)
        for plan in [full, minimal] {
            #expect(try NotificationPlan.decode(plan.jsonText()) == plan)
        }
        // Stable text: the idempotency digest depends on it.
        #expect(full.jsonText() == full.jsonText())
    }

    /// The plan text as the release before the one-string writer made it: stored idempotency
    /// digests were taken over it, so a retry after an upgrade must hash the same bytes.
    private func earlierText(_ plan: NotificationPlan) -> String {
        func string(_ value: String) -> String { JSONText.quote(value) }
        func map(_ value: [String: String]) -> String {
            "{" + value.sorted { $0.key < $1.key }.map { string($0.key) + ":" + string($0.value) }.joined(separator: ",") + "}"
        }
        var fields: [String] = ["\"kind\":" + string(plan.kind)]
        if let scope = plan.scope { fields.append("\"scope\":" + string(scope)) }
        if let title = plan.title { fields.append("\"title\":" + map(title)) }
        if let body = plan.body { fields.append("\"body\":" + map(body)) }
        fields.append("\"arguments\":" + map(plan.arguments))
        fields.append("\"data\":" + map(plan.data))
        if let collapseKey = plan.collapseKey { fields.append("\"collapseKey\":" + string(collapseKey)) }
        if let threadID = plan.threadID { fields.append("\"threadID\":" + string(threadID)) }
        if let sound = plan.sound { fields.append("\"sound\":" + string(sound)) }
        if let androidChannelID = plan.androidChannelID { fields.append("\"androidChannelID\":" + string(androidChannelID)) }
        fields.append("\"priority\":" + string(plan.priority))
        if let expiresAt = plan.expiresAt { fields.append("\"expiresAt\":\(expiresAt)") }
        if let ttlSeconds = plan.ttlSeconds { fields.append("\"ttlSeconds\":\(ttlSeconds)") }
        switch plan.badge {
        case .number(let n)?: fields.append("\"badge\":\(n)")
        case .unread?: fields.append("\"badge\":\"unread\"")
        case nil: break
        }
        fields.append("\"persist\":\(plan.persist)")
        fields.append("\"policy\":" + string(plan.policy.rawValue))
        fields.append("\"ackWindowMilliseconds\":\(plan.ackWindowMilliseconds)")
        fields.append("\"type\":" + string(plan.type.rawValue))
        fields.append("\"audience\":" + string(plan.audience))
        fields.append("\"trackOpens\":\(plan.trackOpens)")
        if let idempotencyKey = plan.idempotencyKey { fields.append("\"idempotencyKey\":" + string(idempotencyKey)) }
        if let live = plan.live {
            fields.append("\"live\":{\"channel\":\(string(live.channel)),\"event\":\(string(live.event)),"
                + "\"data\":\(string(live.data)),\"retain\":\(live.retain)}")
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    @Test func theTextIsTheOneEarlierReleasesMade() {
        var full = NotificationPlan(
            kind: "orders.paid", scope: "store:1", title: ["pt": "Pedido \"#{n}\" pago", "en": "Order\n{n}", "é": "\u{2028}…"],
            body: ["*": "{total} · ✓"], arguments: ["n": "1042", "total": "R$ 1,00", "b": "\\"], data: ["order_id": "o/1", "z": "", "\u{1}": "\t"],
            collapseKey: "order-paid-o1", threadID: "store-1", sound: "default", androidChannelID: "orders", priority: "urgent",
            expiresAt: 1_800_000_000_000, ttlSeconds: 0, badge: .number(3), persist: true, policy: .unlessAcked, ackWindowMilliseconds: 2500,
            type: .wakeup, audience: "staff", trackOpens: false, idempotencyKey: "k-1")
        full.live = .init(channel: "gen:1", event: "done", data: #"{"ok":true,"s":"\n"}"#, retain: true)
        var minimal = PushPlannerTests().plan()
        minimal.badge = .unread
        var single = minimal
        single.data = ["only": "one"]
        single.live = .init(channel: "c", event: "e", data: "null", retain: false)
        for plan in [full, minimal, single] {
            #expect(plan.jsonText() == earlierText(plan))
            // The route embeds the objects it made for the rows: the same text.
            let made = NotificationPlan.MadeObjects(title: plan.title.map(JSONText.object), body: plan.body.map(JSONText.object),
                                                    arguments: JSONText.object(plan.arguments), data: JSONText.object(plan.data))
            #expect(plan.jsonText(made: made) == earlierText(plan))
        }
    }

    @Test func theAnswerIsTheOneEarlierReleasesMade() {
        var outcome = Notifier.Outcome()
        #expect(outcome.json == #"{"notifications":[],"live_delivered":0,"push_queued":0,"push_suppressed":0,"skipped":0,"skipped_recipients":[]}"#)
        outcome.notifications = [("ntf_1", "u\"1", "e1-2"), ("ntf_2", "u2", nil)]
        outcome.liveDelivered = 1
        outcome.pushQueued = 2
        outcome.pushSuppressed = 3
        outcome.skipped = 4
        outcome.skippedRecipients = [("a", "not_a_member"), ("b", "missing_permission")]
        #expect(outcome.json == #"{"notifications":[{"id":"ntf_1","user_id":"u\"1","event_id":"e1-2"},{"id":"ntf_2","user_id":"u2","event_id":null}],"#
            + #""live_delivered":1,"push_queued":2,"push_suppressed":3,"skipped":4,"#
            + #""skipped_recipients":[{"user_id":"a","reason":"not_a_member"},{"user_id":"b","reason":"missing_permission"}]}"#)
    }

    @Test func digestIsLowerCaseHexSHA256() {
        #expect(NotificationRoutes.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
