@testable import API
import HeraldCore
import Testing

/// The test push's texts by locale (DV-7): the language, and for Chinese the script.
@Suite struct TestPushTextTests {
    @Test(arguments: [
        ("pt-BR", "Notificação de teste"), ("es-419", "Notificación de prueba"), ("en", "Test notification"),
        (nil, "Test notification"), ("de", "Test notification"),
        ("zh-Hans-CN", "测试通知"), ("zh-CN", "测试通知"), ("zh", "测试通知"),
        ("zh-Hant-TW", "測試通知"), ("zh-TW", "測試通知"), ("zh-HK", "測試通知"), ("zh-Hans-HK", "测试通知"),
    ] as [(String?, String)])
    func titleFollowsLanguageAndScript(locale: String?, title: String) {
        #expect(TestPushText.text(locales: [locale]).0 == title)
    }
}

/// The test push as the device route and `herald send-test` send it (DV-7, seed 000): the catalog's
/// kind key with `test`, the catalog's `test` texts, Herald's own without them.
@Suite struct TestPushTests {
    static func merchant() throws -> NotificationCatalog {
        try NotificationCatalog.load(path: NotificationCatalogTests.examplePath("merchant"))
    }

    @Test("without a catalog: kind `test` under `kind`, Herald's texts, priority high")
    func emptyCatalog() {
        let push = TestPush.notification(catalog: .empty, deviceLocale: "en-US")
        #expect(push.data == ["kind": "test"])
        #expect(push.title == "Test notification" && push.body == "Notifications are working on this device")
        #expect(push.priority == .high && push.kind == .alert && push.sound == nil)
    }

    @Test("seed 000's catalog: its texts in the device's language, its sound; Portuguese as the seed words it")
    func merchantCatalog() throws {
        let catalog = try Self.merchant()
        let pt = TestPush.notification(catalog: catalog, deviceLocale: "pt-BR")
        #expect(pt.data == ["kind": "test"])
        #expect(pt.title == "Notificação de teste")
        #expect(pt.body == "As notificações estão funcionando neste aparelho.")
        #expect(pt.sound == "default" && pt.priority == .high)
        #expect(TestPush.notification(catalog: catalog, deviceLocale: "es-419").body == "Las notificaciones funcionan en este dispositivo.")
        // A language the catalog lacks gets its default language (NO-5), not Herald's English.
        let de = TestPush.notification(catalog: catalog, deviceLocale: "de-DE")
        #expect(catalog.defaultLocale == "pt-BR")
        #expect(de.body == "As notificações estão funcionando neste aparelho.")
    }

    @Test("NO-5's order as every push: a device language the catalog lacks gives way to the user's, then the catalog's default")
    func catalogTextsFollowDeviceThenUserThenDefault() throws {
        let catalog = try Self.merchant()
        let spanish = "Las notificaciones funcionan en este dispositivo."
        #expect(TestPush.notification(catalog: catalog, deviceLocale: "de-DE", userLocale: "es-MX").body == spanish)
        // The device's own language comes first, the user's only when the device's has no text.
        #expect(TestPush.notification(catalog: catalog, deviceLocale: "en-GB", userLocale: "es-MX").body == "Notifications are working on this device.")
        #expect(TestPush.notification(catalog: catalog, deviceLocale: nil, userLocale: "es").body == spanish)
        #expect(TestPush.notification(catalog: catalog, deviceLocale: "de", userLocale: "fr").body == "As notificações estão funcionando neste aparelho.")
    }

    @Test("the order is script-aware: a device or user naming a script gets that script's text, never the other one")
    func catalogTextsFollowTheScript() throws {
        let catalog = try NotificationCatalogTests.catalog(#"""
            {"default_locale": "en", "kinds": {"test": {"title": {"en": "Test", "sr-Latn": "Proba", "sr-Cyrl": "Проба"}}}}
            """#)
        #expect(TestPush.notification(catalog: catalog, deviceLocale: "sr-Latn-RS").title == "Proba")
        #expect(TestPush.notification(catalog: catalog, deviceLocale: "ja", userLocale: "sr-Cyrl").title == "Проба")
        #expect(TestPush.notification(catalog: catalog, deviceLocale: "ja", userLocale: "sr-Latn").title == "Proba")
    }

    @Test("Herald's own texts take the same order: the device's language, else the user's, else the catalog's default, else English")
    func builtInTextsFollowDeviceThenUserThenDefault() throws {
        let portuguese = "As notificações estão funcionando neste aparelho"
        #expect(TestPush.notification(catalog: .empty, deviceLocale: "de-DE", userLocale: "pt-BR").body == portuguese)
        #expect(TestPush.notification(catalog: .empty, deviceLocale: nil, userLocale: "zh-TW").title == "測試通知")
        #expect(TestPush.notification(catalog: .empty, deviceLocale: "es", userLocale: "pt").title == "Notificación de prueba")
        let spanishDefault = try NotificationCatalogTests.catalog(#"{"default_locale": "es"}"#)
        #expect(TestPush.notification(catalog: spanishDefault, deviceLocale: "de", userLocale: "fr").title == "Notificación de prueba")
        #expect(TestPush.notification(catalog: .empty, deviceLocale: "de", userLocale: "fr").title == "Test notification")
        #expect(TestPushText.text(locales: [nil, "ja", "zh-Hant"]).0 == "測試通知")
    }

    @Test("a catalog whose kind key is `type` and that has no `test` kind: `type: test`, Herald's texts in the device's language")
    func kindKeyWithoutTestKind() throws {
        let catalog = try NotificationCatalogTests.catalog(#"{"kind_key": "type", "default_locale": "es"}"#)
        let push = TestPush.notification(catalog: catalog, deviceLocale: "pt-PT")
        #expect(push.data == ["type": "test"])
        #expect(push.body == "As notificações estão funcionando neste aparelho")
    }

    @Test("a `test` kind's priority and grouping apply; one without texts keeps Herald's")
    func kindFieldsWithoutTexts() throws {
        let catalog = try NotificationCatalogTests.catalog(#"{"kinds": {"test": {"priority": "urgent", "collapse": "test-push", "sound": "ping"}}}"#)
        let push = TestPush.notification(catalog: catalog, deviceLocale: "en")
        #expect(push.priority == .urgent && push.collapseKey == "test-push" && push.tag == "test-push" && push.sound == "ping")
        #expect(push.title == "Test notification")
    }

    @Test("a `test` kind whose texts need an argument is refused when the catalog loads, naming the field")
    func testKindWithArgumentIsRefused() {
        let error = NotificationCatalogTests.error(#"{"kinds": {"test": {"title": {"en": "Hi {name}"}}}}"#)
        #expect(error == .invalid(field: "kinds.test.title.en", reason: "the test push has no arguments, so {name} cannot be filled"))
        let collapse = NotificationCatalogTests.error(#"{"kinds": {"test": {"body": "ok", "collapse": "t-{id}"}}}"#)
        #expect(collapse?.field == "kinds.test.collapse")
        // Another kind may of course name arguments.
        #expect(NotificationCatalogTests.error(#"{"kinds": {"hello": {"title": "Hi {name}"}}}"#) == nil)
    }
}
