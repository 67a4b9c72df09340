@testable import API
@testable import HeraldCore
import Testing

/// AP-6 (seed 002): audiences without regard to case, kinds, and destinations by data-key prefix.
@Suite struct ExclusionRulesTests {
    static let catalog = try! NotificationCatalog.parse(Array("""
        {"exclude_audiences": ["Staff"], "exclude_kinds": ["SYSTEM_ALERT"],
         "exclude_data": {"actionUrl": ["/orders/", "/inbox?conversation="], "screen": ["admin"]},
         "kinds": {
           "FREIGHT_TRANSIT_STOP": {"title": {"en": "Stop"}},
           "NEW_ORDER_RECEIVED": {"audience": "STAFF", "title": {"en": "New order"}},
           "SYSTEM_ALERT": {"title": {"en": "Alert"}}
         }}
        """.utf8))

    func plan(kind: String = "FREIGHT_TRANSIT_STOP", audience: String = "everyone", data: [String: String] = [:]) -> NotificationPlan {
        NotificationPlan(kind: kind, scope: nil, title: nil, body: nil, arguments: [:], data: data, collapseKey: nil, threadID: nil,
                         sound: nil, androidChannelID: nil, priority: "normal", expiresAt: nil, badge: nil, persist: true,
                         policy: .auto, ackWindowMilliseconds: 3000, type: .alert, audience: audience, trackOpens: false)
    }

    func decide(_ plan: NotificationPlan) -> PushPlanner.Decision {
        let device = DeviceRecord(id: "d1", app: "default", userID: "u1", sessionID: "s1", platform: "ios", provider: "apns", token: "ab",
                                  environment: "production", installationID: nil, locale: "en", appVersion: nil, deviceName: nil,
                                  createdAt: 0, lastSeenAt: 0, sessionActive: true)
        return PushPlanner(catalog: Self.catalog).decide(plan, device: device, eventID: nil, receipts: [], allowedByPreferences: true,
                                                         providerEnabled: true, now: 1_000)
    }

    @Test func audiencesCompareWithoutCase() {
        #expect(Self.catalog.excludedAudiences == ["staff"])
        for audience in ["staff", "STAFF", "Staff", "sTaFf"] {
            guard case .skip(.skippedAudience, let why) = decide(plan(audience: audience)) else { Issue.record("\(audience)"); continue }
            #expect(why.contains("audience"))
        }
        #expect(decide(plan(audience: "staffer")) == .enqueue(runAt: 1_000, ackEventID: nil))
        #expect(decide(plan(audience: "everyone")) == .enqueue(runAt: 1_000, ackEventID: nil))
    }

    @Test func excludedKindsAreNotPushedAndNotOfferedInPreferences() {
        guard case .skip(.skippedAudience, let why) = decide(plan(kind: "SYSTEM_ALERT")) else { Issue.record("kind"); return }
        #expect(why == "kind SYSTEM_ALERT is not pushed by this app")
        // The kind's own audience (STAFF, upper case) excludes it from preferences too.
        #expect(Self.catalog.availableKinds(permissions: []).map(\.name) == ["FREIGHT_TRANSIT_STOP"])
    }

    @Test func destinationsAreExcludedByValuePrefixOfTheirKey() {
        for url in ["/orders/1528", "/inbox?conversation=9"] {
            guard case .skip(.skippedAudience, let why) = decide(plan(data: ["actionUrl": url])) else { Issue.record("\(url)"); continue }
            #expect(why == "destination actionUrl=\(url) is not pushed by this app")
        }
        guard case .skip(.skippedAudience, _) = decide(plan(data: ["screen": "admin/users"])) else { Issue.record("screen"); return }
        // A client route that merely contains a staff prefix, another key, or another case is pushed.
        for data in [["actionUrl": "/account/orders/1"], ["url": "/orders/1"], ["actionUrl": "/Orders/1"], ["actionUrl": "/inbox"], [:]] {
            #expect(decide(plan(data: data)) == .enqueue(runAt: 1_000, ackEventID: nil), "\(data)")
        }
    }

    @Test func noRulesExcludeNothing() {
        #expect(ExclusionRules.none.reason(kind: "k", audience: "staff", data: ["actionUrl": "/orders/1"]) == nil)
    }

    @Test func theCatalogRefusesMalformedRules() {
        let cases: [(String, String)] = [
            (#"{"exclude_kinds": "SYSTEM_ALERT"}"#, "exclude_kinds"),
            (#"{"exclude_kinds": ["has space"]}"#, "exclude_kinds[0]"),
            (#"{"exclude_data": ["actionUrl"]}"#, "exclude_data"),
            (#"{"exclude_data": {"actionUrl": []}}"#, "exclude_data.actionUrl"),
            (#"{"exclude_data": {"actionUrl": "/orders/"}}"#, "exclude_data.actionUrl"),
            (#"{"exclude_data": {"actionUrl": [""]}}"#, "exclude_data.actionUrl[0]"),
            (#"{"exclude_data": {"actionUrl": [3]}}"#, "exclude_data.actionUrl[0]"),
        ]
        for (json, field) in cases {
            guard case .invalid(let got, _)? = NotificationCatalogTests.error(json) else { Issue.record("loaded: \(json)"); continue }
            #expect(got == field, "\(json)")
        }
    }

    @Test func theLogisticsExampleExcludesSeed002sStaffDestinations() throws {
        let catalog = try NotificationCatalog.load(path: NotificationCatalogTests.examplePath("logistics"))
        let rules = catalog.exclusions
        #expect(rules.reason(kind: "FREIGHT_TRANSIT_STOP", audience: "everyone", data: ["actionUrl": "/account/freights/7"]) == nil)
        #expect(rules.reason(kind: "FREIGHT_TRANSIT_STOP", audience: "everyone", data: ["actionUrl": "/account/storage/7"]) == nil)
        for url in ["/orders/1528", "/storage/3", "/inbox?conversation=4", "/finanzas/fuentes"] {
            #expect(rules.reason(kind: "SYSTEM_ALERT", audience: "everyone", data: ["actionUrl": url]) != nil, "\(url)")
        }
        #expect(rules.excludes(audience: "STAFF"))
    }
}
