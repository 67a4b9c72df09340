import Foundation
import HeraldCore
import Testing

@testable import API

/// What a stored app's settings make of its notifications (AP-1, AP-4, AP-6, NO-5): its catalog
/// with the app's exclusions added and its default locale in place of the catalog's.
@Suite("App profile")
struct AppProfileTests {
    static let catalog = """
        {"default_locale": "en", "exclude_audiences": ["ops"], "exclude_data": {"actionUrl": ["/orders/"]},
         "categories": {"c": {"android_channel_id": "c", "name": {"en": "C", "pt-BR": "C"}}},
         "kinds": {"k": {"category": "c", "title": {"en": "Hello", "pt-BR": "Olá"}}}}
        """

    static func record(catalog: String? = catalog, locale: String? = nil, rootKey: String? = nil,
                       exclusions: AppExclusions = AppExclusions()) -> AppRecord {
        var settings = AppSettings()
        settings.catalogJSON = catalog
        settings.defaultLocale = locale
        settings.payload.rootKey = rootKey
        settings.exclusions = exclusions
        return AppRecord(id: AppID("chat")!, settings: settings, serverKeys: [], createdAt: 0, updatedAt: 0)
    }

    static func field(_ record: AppRecord) -> String? {
        do {
            _ = try ResolvedApp.profile(record)
            return nil
        } catch {
            return error.field
        }
    }

    @Test func theAppsExclusionsAreAddedToTheCatalogsAndAudiencesIgnoreCase() throws {
        let exclusions = AppExclusions(audiences: ["STAFF"], kinds: ["k2"],
                                       dataPrefixes: [AppDataPrefix(key: "actionUrl", prefix: "/staff/"), AppDataPrefix(key: "path", prefix: "/x")])
        let profile = try ResolvedApp.profile(Self.record(exclusions: exclusions))
        let rules = profile.catalog.exclusions
        #expect(rules.excludes(audience: "staff") && rules.excludes(audience: "Ops"))
        #expect(rules.kinds == ["k2"])
        #expect(rules.reason(kind: "k", audience: "everyone", data: ["actionUrl": "/orders/1"]) != nil)
        #expect(rules.reason(kind: "k", audience: "everyone", data: ["actionUrl": "/staff/1"]) != nil)
        #expect(rules.reason(kind: "k", audience: "everyone", data: ["path": "/x/y"]) != nil)
        #expect(rules.reason(kind: "k", audience: "everyone", data: ["actionUrl": "/account/1"]) == nil)
        #expect(profile.app == "chat" && profile.catalog.app == "chat")
    }

    @Test func theAppsDefaultLocaleReplacesTheCatalogsAndMustHaveTexts() throws {
        #expect(try ResolvedApp.profile(Self.record()).catalog.defaultLocale == "en")
        #expect(try ResolvedApp.profile(Self.record(locale: "pt-BR")).catalog.defaultLocale == "pt-BR")
        #expect(Self.field(Self.record(locale: "ja")) == "default_locale")
        // Without a catalog any tag does, and nothing else changes.
        let bare = try ResolvedApp.profile(Self.record(catalog: nil, locale: "ja"))
        #expect(bare.catalog.defaultLocale == "ja" && bare.catalog.kinds.isEmpty)
        #expect(Self.field(Self.record(catalog: "{\"kinds\": 3}")) == "catalog")
    }

    @Test func theRootKeyIsCheckedAsTheEnvironmentsIs() throws {
        #expect(try ResolvedApp.profile(Self.record(rootKey: "respondo")).payload.rootKey == "respondo")
        #expect(try ResolvedApp.profile(Self.record()).payload.rootKey == nil)
        #expect(Self.field(Self.record(rootKey: "aps")) == "payload.root_key")
        #expect(Self.field(Self.record(rootKey: "has space")) == "payload.root_key")
    }
}
