import Foundation
@testable import API
@testable import HeraldCore
import Testing

/// NO-4: the body `GET …/push-preferences` answers is one a client may PUT back unchanged, and it
/// keeps what is pushed; two states that push differently read differently.
@Suite struct PreferenceAnswerTests {
    static let catalog = try! NotificationCatalog.parse(Array("""
        {"default_locale": "en", "kinds": {
           "orders.paid": {"default_enabled": true, "title": {"en": "Paid"}},
           "inventory.low_stock": {"default_enabled": false, "title": {"en": "Low"}}}}
        """.utf8))

    func answer(_ saved: PushPreferenceRecord?, catalog: NotificationCatalog, scope: String? = nil) throws -> [String: Any] {
        let available = scope == nil ? catalog.kinds.values.sorted { $0.name < $1.name } : []
        let text = PreferenceRoutes.json(scope: scope, saved: saved, available: available, catalog: catalog)
        return try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func record(_ events: [String]?, scope: String? = nil) -> PushPreferenceRecord {
        PushPreferenceRecord(userID: "u1", scope: scope, isEnabled: true, enabledEvents: events, updatedAt: 0)
    }

    /// What PUT saves for a body (`PreferenceRoutes.put` keeps the list as given, sorted).
    func putBack(_ body: [String: Any]) -> PushPreferenceRecord {
        record((body["enabled_events"] as? [String]).map { Array(Set($0)).sorted() })
    }

    @Test("without a catalog: every kind reads null, an explicit list as itself", arguments: [nil, "store:1"] as [String?])
    func withoutACatalog(scope: String?) throws {
        let planner = PushPlanner(catalog: .empty)
        let fresh = try answer(nil, catalog: .empty, scope: scope)
        #expect(fresh["enabled_events"] is NSNull)
        #expect(fresh["is_default"] as? Bool == true)
        let saved = try answer(record(nil, scope: scope), catalog: .empty, scope: scope)
        #expect(saved["enabled_events"] is NSNull)
        #expect(saved["is_default"] as? Bool == false)
        let nothing = try answer(record([], scope: scope), catalog: .empty, scope: scope)
        #expect(nothing["enabled_events"] as? [String] == [])
        // The fresh GET's body PUT back still pushes every kind; `[]` pushes none.
        let echoed = putBack(fresh)
        #expect(echoed.enabledEvents == nil)
        #expect(planner.allows(kind: "order.paid", scope: scope, global: scope == nil ? echoed : nil, scoped: scope == nil ? nil : echoed))
        let silenced = putBack(nothing)
        #expect(!planner.allows(kind: "order.paid", scope: scope, global: scope == nil ? silenced : nil, scoped: scope == nil ? nil : silenced))
    }

    @Test func withACatalogTheDefaultsAreListedAndAnEchoKeepsThem() throws {
        let planner = PushPlanner(catalog: Self.catalog)
        let fresh = try answer(nil, catalog: Self.catalog)
        #expect(fresh["enabled_events"] as? [String] == ["orders.paid"])
        let echoed = putBack(fresh)
        for kind in ["orders.paid", "inventory.low_stock", "unknown.kind"] {
            #expect(planner.allows(kind: kind, scope: nil, global: echoed, scoped: nil) == planner.allows(kind: kind, scope: nil, global: nil, scoped: nil), "\(kind)")
        }
        #expect(try answer(record([]), catalog: Self.catalog)["enabled_events"] as? [String] == [])
    }
}
