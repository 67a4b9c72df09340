import Testing

@testable import API
@testable import HeraldCore

/// NO-4, NO-5, NO-7: kind catalogs, text templates, locale choice and rendering.
@Suite struct NotificationCatalogTests {
    /// `examples/catalogs/<name>.json` of this checkout.
    static func examplePath(_ name: String) -> String {
        let file = "\(#filePath)"
        let root = file.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
        return "\(root)/examples/catalogs/\(name).json"
    }

    static func catalog(_ json: String) throws(CatalogError) -> NotificationCatalog {
        try NotificationCatalog.parse(Array(json.utf8))
    }

    /// The error a catalog gives, or nil when it loads.
    static func error(_ json: String) -> CatalogError? {
        do {
            _ = try catalog(json)
            return nil
        } catch {
            return error
        }
    }

    static func text(_ byLocale: [String: String]) throws -> LocalizedText {
        var templates: [String: TextTemplate] = [:]
        for (locale, source) in byLocale { templates[locale] = try TextTemplate(source) }
        return LocalizedText(templates)
    }

    /// An argument for every placeholder the kind's templates use.
    static func arguments(for kind: NotificationKind) -> [String: String] {
        var templates = [kind.collapse, kind.tag, kind.thread, kind.subtitle].compactMap { $0 }
        for text in [kind.title, kind.body].compactMap({ $0 }) {
            templates += text.entries.map(\.template)
        }
        var out: [String: String] = [:]
        for name in templates.flatMap(\.placeholders) { out[name] = "<\(name)>" }
        return out
    }

    // MARK: templates

    @Test func templatesRenderPlaceholdersAndEscapes() throws {
        let template = try TextTemplate("Pedido #{order_number} · {{literal}} {total}{total}")
        #expect(template.placeholders == ["order_number", "total"])
        #expect(try template.render(["order_number": "1042", "total": "R$ 1,00"], field: "title")
                == "Pedido #1042 · {literal} R$ 1,00R$ 1,00")
        #expect(try TextTemplate("no placeholders").render([:], field: "x") == "no placeholders")
        #expect(try TextTemplate("").render([:], field: "x") == "")
        // Brace-free texts take the one-literal path (issue 17): the same template as the scan's.
        #expect(try TextTemplate("Olá e\u{301} 🎉 — ok").render([:], field: "x") == "Olá e\u{301} 🎉 — ok")
        #expect(try TextTemplate("Olá e\u{301} 🎉 — ok").placeholders.isEmpty)
        #expect(try TextTemplate("{plain}").placeholders == ["plain"])
        #expect(try TextTemplate("{{{a}}}").render(["a": "1"], field: "x") == "{1}")
        #expect(try TextTemplate("{a.b-c_d}").placeholders == ["a.b-c_d"])
    }

    @Test(arguments: ["{", "a {b", "}", "a } b", "{}", "{a b}", "{a{b}", "{ä}", "{\(String(repeating: "a", count: 65))}"])
    func malformedTemplatesAreRefused(_ source: String) {
        #expect(throws: CatalogError.self) { try TextTemplate(source, field: "kinds.x.title") }
        do {
            _ = try TextTemplate(source, field: "kinds.x.title")
        } catch {
            #expect(error.field == "kinds.x.title")
            #expect(error.message.hasPrefix("kinds.x.title: "))
        }
    }

    @Test func aMissingArgumentIsNamed() throws {
        let template = try TextTemplate("conv-{conversation_id}")
        #expect(throws: CatalogError.missingArgument(field: "collapse", name: "conversation_id")) {
            try template.render(["store_id": "s"], field: "collapse")
        }
    }

    // MARK: locale choice (NO-5)

    @Test func localeChoiceFollowsLanguageThenRegionThenDefault() throws {
        let text = try Self.text(["pt": "pt", "pt-BR": "pt-BR", "en": "en", "zh-Hans": "zh-Hans", "es-419": "es-419"])
        func pick(_ locale: String?, default defaultLocale: String = "pt-BR") -> String? {
            try? text.template(for: locale, defaultLocale: defaultLocale)?.render([:], field: "")
        }
        #expect(pick("pt-BR") == "pt-BR")
        #expect(pick("pt_br") == "pt-BR")
        #expect(pick("pt-PT") == "pt")
        #expect(pick("pt") == "pt")
        #expect(pick("en-GB") == "en")
        #expect(pick("en") == "en")
        #expect(pick("zh-TW") == "zh-Hans")
        // A tag naming its script never takes another script's text: the default instead.
        #expect(pick("zh-Hant-HK") == "pt-BR")
        #expect(pick("zh") == "zh-Hans")
        #expect(pick("es-MX") == "es-419")
        #expect(pick("fr-FR") == "pt-BR")
        #expect(pick("not a tag!") == "pt-BR")
        #expect(pick(nil) == "pt-BR")
        #expect(pick(nil, default: "en-US") == "en")
        #expect(pick("fr", default: "de") == nil)
        #expect(text.locales == ["en", "es-419", "pt", "pt-BR", "zh-Hans"])
    }

    @Test func chineseScriptsAreMatchedByRegion() throws {
        let text = try Self.text(["zh-Hans": "简", "zh-Hant": "繁", "en": "en"])
        func pick(_ locale: String) -> String? { try? text.template(for: locale, defaultLocale: "en")?.render([:], field: "") }
        #expect(pick("zh-TW") == "繁")
        #expect(pick("zh-HK") == "繁")
        #expect(pick("zh-CN") == "简")
        #expect(pick("zh") == "简")
        #expect(pick("zh-Hant-TW") == "繁")
        // Without a matching script, another text of the language still beats the default.
        let hantOnly = try Self.text(["zh-Hant-HK": "港", "en": "en"])
        #expect(try hantOnly.template(for: "zh-TW", defaultLocale: "en")?.render([:], field: "") == "港")
        #expect(try hantOnly.template(for: "zh-CN", defaultLocale: "en")?.render([:], field: "") == "港")
    }

    @Test func aTagNamingItsScriptFallsBackOnlyToThatScriptOrNone() throws {
        func pick(_ texts: [String: String], _ locale: String) throws -> String? {
            try Self.text(texts).template(for: locale, defaultLocale: "en")?.render([:], field: "")
        }
        #expect(try pick(["sr-Cyrl": "ћ", "en": "en"], "sr-Latn") == "en")
        #expect(try pick(["sr-Cyrl": "ћ", "sr-Latn-BA": "ba", "en": "en"], "sr-Latn-RS") == "ba")
        #expect(try pick(["sr-Cyrl": "ћ", "sr-RS": "rs", "en": "en"], "sr-Latn") == "rs")
        #expect(try pick(["zh-Hans": "简", "zh-CN": "cn", "en": "en"], "zh-Hant-TW") == "en")
        // Without a script named, any text of the language still beats the default.
        #expect(try pick(["sr-Cyrl": "ћ", "en": "en"], "sr-RS") == "ћ")
    }

    @Test func thePushChoiceIsTheDeviceThenTheUserThenTheDefault() throws {
        let text = try Self.text(["en": "en", "de": "de", "pt-BR": "pt-BR"])
        func pick(_ device: String?, _ user: String?) -> String? {
            try? text.choose(for: device, userLocale: user, defaultLocale: "en")?.template.render([:], field: "")
        }
        #expect(pick("fr", "de-AT") == "de")
        #expect(pick("pt-PT", "de") == "pt-BR")     // the device's language in another region first
        #expect(pick(nil, "de") == "de")
        #expect(pick("fr", nil) == "en")
        #expect(pick("fr", "it") == "en")
        let renderer = NotificationRenderer(catalog: NotificationCatalog.empty)
        let rendered = try renderer.render(kind: "k", deviceLocale: "fr", userLocale: "de", title: text, body: nil, arguments: [:],
                                           data: [:], collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
        #expect(rendered.title == "de" && rendered.locale == "de")
    }

    @Test func sameLanguageChoiceIsDeterministic() throws {
        let text = try Self.text(["en-US": "us", "en-AU": "au"])
        for _ in 0..<5 {
            #expect(try text.template(for: "en-GB", defaultLocale: "en")?.render([:], field: "") == "au")
        }
        let single = LocalizedText(single: try TextTemplate("same"))
        #expect(try single.template(for: "ja", defaultLocale: "en")?.render([:], field: "") == "same")
        #expect(single.locales.isEmpty)
    }

    // MARK: shipped catalogs

    @Test(arguments: ["merchant", "logistics"])
    func shippedCatalogsRenderEveryKindInEveryLocale(_ name: String) throws {
        let catalog = try NotificationCatalog.load(path: Self.examplePath(name))
        #expect(!catalog.kinds.isEmpty)
        let renderer = NotificationRenderer(catalog: catalog)
        for kind in catalog.kinds.values {
            let arguments = Self.arguments(for: kind)
            let title = try #require(kind.title, "\(kind.name) has no title")
            let body = try #require(kind.body, "\(kind.name) has no body")
            #expect(title.locales == body.locales, "\(kind.name)")
            try renderer.validate(kind: kind.name, title: nil, body: nil, arguments: arguments, data: [:])
            for locale in title.locales + ["pt-BR", "en-GB", "es-MX", "zh-TW", "fr", nil] as [String?] {
                let rendered = try renderer.render(kind: kind.name, deviceLocale: locale, title: nil, body: nil,
                                                   arguments: arguments, data: [:],
                                                   collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
                #expect(rendered.title?.isEmpty == false, "\(kind.name) \(locale ?? "nil")")
                #expect(rendered.body?.isEmpty == false, "\(kind.name) \(locale ?? "nil")")
                #expect(rendered.locale != nil)
                #expect(!(rendered.title ?? "").contains("{") && !(rendered.body ?? "").contains("}"))
                #expect(rendered.androidChannelID == kind.androidChannelID)
            }
        }
    }

    @Test func merchantOrdersPaidMatchesSeed001() throws {
        let catalog = try NotificationCatalog.load(path: Self.examplePath("merchant"))
        #expect(catalog.app == "merchant")
        #expect(catalog.defaultLocale == "pt-BR")
        #expect(catalog.notificationIDKey == nil)
        #expect(catalog.kindKey == "kind")
        #expect(Set(catalog.kinds.keys) == ["orders.created", "orders.paid", "orders.cancelled", "inventory.low_stock",
                                           "conversations.started", "conversations.message_received",
                                           "conversations.handed_over", "conversations.assigned", "test"])
        let renderer = NotificationRenderer(catalog: catalog)
        let data = ["kind": "orders.paid", "store_id": "0199a0c4", "order_id": "0199b7e2"]
        let expected: [(String?, String, String, String)] = [
            ("pt-BR", "Pedido #1042 pago", "R$ 1.234,56 · Ana Souza", "pt"),
            (nil, "Pedido #1042 pago", "R$ 1.234,56 · Ana Souza", "pt"),
            ("en-US", "Order #1042 paid", "R$1,234.56 · Ana Souza", "en"),
            ("es-AR", "Pedido #1042 pagado", "R$ 1.234,56 · Ana Souza", "es"),
        ]
        for (locale, title, body, chosen) in expected {
            let total = locale == "en-US" ? "R$1,234.56" : "R$ 1.234,56"
            let rendered = try renderer.render(
                kind: "orders.paid", deviceLocale: locale, title: nil, body: nil,
                arguments: ["order_number": "1042", "total": total, "customer_name": "Ana Souza", "store_name": "Loja Azul"],
                data: data, collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
            #expect(rendered == RenderedNotification(
                title: title, subtitle: "Loja Azul", body: body, collapseKey: "order-paid-0199b7e2", tag: "order-paid-0199b7e2",
                threadID: "store-0199a0c4", androidChannelID: "orders", sound: "default", locale: chosen))
        }
        let paid = try #require(catalog.kind("orders.paid"))
        #expect(paid.requires == "orders.read")
        #expect(paid.defaultEnabled)
        #expect(paid.priority == "high")
        #expect(NotificationRenderer.androidPriority(paid.priority) == "high")
    }

    @Test func merchantSubtitleIsDroppedWithoutAStoreName() throws {
        let renderer = NotificationRenderer(catalog: try NotificationCatalog.load(path: Self.examplePath("merchant")))
        let rendered = try renderer.render(
            kind: "orders.created", deviceLocale: "pt-BR", title: nil, body: nil,
            arguments: ["order_number": "7", "total": "R$ 5,00", "customer_name": "Rui"],
            data: ["store_id": "s1", "order_id": "o1"], collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
        #expect(rendered.subtitle == nil)
        #expect(rendered.title == "Novo pedido #7")
        #expect(rendered.collapseKey == "order-created-o1")
    }

    @Test func merchantConversationsCollapseAndThreadPerConversation() throws {
        let catalog = try NotificationCatalog.load(path: Self.examplePath("merchant"))
        let renderer = NotificationRenderer(catalog: catalog)
        for name in catalog.kinds.keys where name.hasPrefix("conversations.") {
            let kind = try #require(catalog.kind(name))
            #expect(kind.requires == "conversations.read")
            #expect(kind.defaultEnabled)
            let rendered = try renderer.render(
                kind: name, deviceLocale: "en", title: nil, body: nil,
                arguments: ["customer_name": "Ana", "message": "Oi", "assigned_by": "Bia"],
                data: ["store_id": "s1", "conversation_id": "c9"], collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
            #expect(rendered.collapseKey == "conv-c9", "\(name)")
            #expect(rendered.tag == "conv-c9", "\(name)")
            #expect(rendered.threadID == "conv-c9", "\(name)")
            #expect(rendered.androidChannelID == "conversations", "\(name)")
        }
    }

    @Test func merchantLowStockCollapsesPerVariantAndIsOffByDefault() throws {
        let catalog = try NotificationCatalog.load(path: Self.examplePath("merchant"))
        let lowStock = try #require(catalog.kind("inventory.low_stock"))
        #expect(!lowStock.defaultEnabled)
        #expect(lowStock.requires == "inventory.read")
        #expect(lowStock.androidChannelID == "inventory")
        let renderer = NotificationRenderer(catalog: catalog)
        let arguments = ["product_name": "Camiseta", "variant_name": "M / Azul", "quantity": "3", "location_name": "Centro"]
        let first = try renderer.render(kind: "inventory.low_stock", deviceLocale: "pt-BR", title: nil, body: nil, arguments: arguments,
                                        data: ["store_id": "s1", "product_id": "p1", "variant_id": "v1"],
                                        collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
        let other = try renderer.render(kind: "inventory.low_stock", deviceLocale: "pt-BR", title: nil, body: nil, arguments: arguments,
                                        data: ["store_id": "s1", "product_id": "p1", "variant_id": "v2"],
                                        collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
        #expect(first.collapseKey == "low-stock-v1")
        #expect(other.collapseKey == "low-stock-v2")
        #expect(first.threadID == "store-s1")
        #expect(first.body == "M / Azul: 3 un. em Centro")
    }

    /// A kind's collapse template filled from the call's data can outgrow APNs's 64-byte
    /// `apns-collapse-id`, which the call's own `collapse_key` may not (breaker7: an order id of
    /// 100 characters dead-lettered every APNs push as `invalid_collapse_id`). It is shortened
    /// to 64 bytes the same way every time, so equal keys still collapse and different ones do not.
    /// The merchant catalog's `orders.paid` collapse key (`order-paid-{order_id}`) as rendered for
    /// an order id.
    static func ordersPaidCollapseKey() throws -> (String) throws -> String? {
        let renderer = NotificationRenderer(catalog: try NotificationCatalog.load(path: examplePath("merchant")))
        let arguments = ["order_number": "7", "store_name": "Loja", "total": "R$ 1", "customer_name": "Ana"]
        return { orderID in
            try renderer.render(kind: "orders.paid", deviceLocale: "en", title: nil, body: nil, arguments: arguments,
                                data: ["store_id": "s1", "order_id": orderID],
                                collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil).collapseKey
        }
    }

    @Test func aRenderedCollapseKeyOver64BytesIsShortenedStably() throws {
        let renderer = NotificationRenderer(catalog: try NotificationCatalog.load(path: Self.examplePath("merchant")))
        let arguments = ["order_number": "7", "store_name": "Loja", "total": "R$ 1", "customer_name": "Ana"]
        let collapse = try Self.ordersPaidCollapseKey()
        let long = String(repeating: "x", count: 100)
        let shortened = try #require(try collapse(long))
        #expect(shortened.utf8.count <= NotificationRenderer.maximumCollapseKeyBytes)
        #expect(shortened.hasPrefix("order-paid-xxx"))
        #expect(try collapse(long) == shortened)
        #expect(try collapse(long + "y") != shortened)
        #expect(try collapse(String(repeating: "x", count: 99) + "y") != shortened)
        // Multi-byte characters are never cut in half.
        let accented = try #require(try collapse(String(repeating: "é", count: 60)))
        #expect(accented.utf8.count <= NotificationRenderer.maximumCollapseKeyBytes)
        #expect(accented.unicodeScalars.allSatisfy { $0 != "\u{FFFD}" })
        // Up to the limit a key is kept as rendered.
        let fits = String(repeating: "z", count: NotificationRenderer.maximumCollapseKeyBytes - "order-paid-".utf8.count)
        #expect(try collapse(fits) == "order-paid-" + fits)
        // The call's own key (1-64 characters, checked at intake) is kept while it fits 64 bytes;
        // one of 64 two-byte or four-byte characters is sent fitted, as a kind's (half14).
        func own(_ key: String) throws -> RenderedNotification {
            try renderer.render(kind: "orders.paid", deviceLocale: "en", title: nil, body: nil, arguments: arguments,
                                data: ["store_id": "s1", "order_id": long], collapseKey: key,
                                threadID: nil, sound: nil, androidChannelID: nil)
        }
        #expect(try own("mine").collapseKey == "mine")
        let ascii = String(repeating: "k", count: 64)
        #expect(try own(ascii).collapseKey == ascii)
        for character in ["é", "😀"] {
            let key = String(repeating: character, count: 64)
            let rendered = try own(key)
            let sent = try #require(rendered.collapseKey)
            #expect(sent.utf8.count <= NotificationRenderer.maximumCollapseKeyBytes && sent.hasPrefix(character))
            #expect(sent == NotificationRenderer.fitCollapseKey(key) && sent != key)
            #expect(rendered.tag == key)
        }
    }

    /// A kind's collapse template filled with a control character from the call's data (an order
    /// id with a newline) made an `apns-collapse-id` the HTTP/2 client refuses: every APNs push of
    /// the notification failed as a transport error for the whole retry budget, and APNs read
    /// degraded. Such a key takes the hashed short form, stably; the call's own key is refused at
    /// intake by the same rule.
    @Test func aRenderedCollapseKeyThatCannotBeAHeaderIsHashedStably() throws {
        let collapse = try Self.ordersPaidCollapseKey()
        for orderID in ["7\n8", "7\u{0}8", "7\r\n8", "78 ", "7\u{7F}"] {
            let key = try #require(try collapse(orderID))
            #expect(NotificationRenderer.isSendableCollapseKey(key), "\(key.debugDescription)")
            #expect(key.utf8.count <= NotificationRenderer.maximumCollapseKeyBytes)
            #expect(key.hasPrefix("order-paid-7"))
            #expect(try collapse(orderID) == key)
            #expect(key != "order-paid-78")
        }
        #expect(try collapse("7\n8") != collapse("7\r\n8"))
        #expect(try collapse("7 8") == "order-paid-7 8")
        for key in ["c k", "pedido-é", "x"] { #expect(NotificationRenderer.isSendableCollapseKey(key), "\(key)") }
        for key in ["", " x", "x ", "\tx", "x\t", "a\u{0}b", "a\nb", "a\u{7F}", "a\u{85}b"] {
            #expect(!NotificationRenderer.isSendableCollapseKey(key), "\(key.debugDescription)")
        }
    }

    @Test func merchantAvailableKindsFollowPermissions() throws {
        let catalog = try NotificationCatalog.load(path: Self.examplePath("merchant"))
        #expect(catalog.availableKinds(permissions: []).map(\.name) == [])
        #expect(catalog.availableKinds(permissions: ["orders.read"]).map(\.name)
                == ["orders.cancelled", "orders.created", "orders.paid"])
        #expect(catalog.availableKinds(permissions: ["orders.read", "inventory.read", "conversations.read", "other"]).map(\.name)
                == ["conversations.assigned", "conversations.handed_over", "conversations.message_received",
                    "conversations.started", "inventory.low_stock", "orders.cancelled", "orders.created", "orders.paid"])
        let test = try #require(catalog.kind("test"))
        #expect(test.requires == nil && test.category == nil && test.androidChannelID == nil && !test.inPreferences)
    }

    @Test func logisticsExcludesStaffAndHasAQuietSystemChannel() throws {
        let catalog = try NotificationCatalog.load(path: Self.examplePath("logistics"))
        #expect(catalog.defaultLocale == "es")
        #expect(catalog.notificationIDKey == "notificationId")
        #expect(catalog.kindKey == "type")
        #expect(catalog.excludedAudiences == ["staff"])
        #expect(Set(catalog.categories.keys) == ["status", "shipping", "payment", "storage", "system"])
        #expect(catalog.categories["system"]?.importance == "low")
        #expect(catalog.categories["system"]?.sound == nil)
        let staff = catalog.kinds.values.filter { $0.audience == "staff" }
        #expect(staff.count >= 2)
        #expect(staff.allSatisfy { catalog.excludes(audience: $0.audience) })
        let available = catalog.availableKinds(permissions: [])
        #expect(available.count == catalog.kinds.count - staff.count)
        #expect(!available.contains { $0.audience == "staff" })
        #expect(available.map(\.name) == available.map(\.name).sorted())

        let renderer = NotificationRenderer(catalog: catalog)
        let stop = try renderer.render(kind: "FREIGHT_TRANSIT_STOP", deviceLocale: "zh-TW", title: nil, body: nil,
                                       arguments: ["freight_code": "F-12", "stop_name": "Lima"], data: ["freight_id": "42"],
                                       collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
        #expect(stop.locale == "zh-Hans")
        #expect(stop.androidChannelID == "shipping")
        #expect(stop.sound == "default")
        #expect(stop.collapseKey == "freight-42")
        let pass = try renderer.render(kind: "WALLET_PASS_READY", deviceLocale: "fr-FR", title: nil, body: nil, arguments: [:], data: [:],
                                       collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
        #expect(pass.locale == "es")
        #expect(pass.androidChannelID == "system")
        #expect(pass.sound == nil)
        #expect(catalog.kind("SIGNATURE_REQUIRED")?.priority == "high")
    }

    // MARK: rendering precedence

    @Test func callTextsAndValuesWinOverTheKind() throws {
        let catalog = try NotificationCatalog.load(path: Self.examplePath("merchant"))
        let renderer = NotificationRenderer(catalog: catalog)
        let title = try Self.text(["en": "Hello {name}", "pt": "Olá {name}"])
        let rendered = try renderer.render(
            kind: "conversations.message_received", deviceLocale: "pt-PT", title: title, body: nil,
            arguments: ["name": "Ana"], data: ["name": "ignored", "customer_name": "Ana", "message": "Oi", "conversation_id": "c1"],
            collapseKey: "custom", threadID: "t", sound: "ping.caf", androidChannelID: "chat")
        #expect(rendered.title == "Olá Ana")
        #expect(rendered.body == "Oi")
        #expect(rendered.collapseKey == "custom")
        #expect(rendered.tag == "custom")
        #expect(rendered.threadID == "t")
        #expect(rendered.sound == "ping.caf")
        #expect(rendered.androidChannelID == "chat")
        #expect(rendered.locale == "pt")

        // Call texts with neither the device's language nor the default fall back to their first tag.
        let german = try Self.text(["de": "Hallo", "nl": "Hoi"])
        let fallback = try renderer.render(kind: "unknown.kind", deviceLocale: "en", title: german, body: nil, arguments: [:], data: [:],
                                           collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
        #expect(fallback == RenderedNotification(title: "Hallo", locale: "de"))
    }

    @Test func missingArgumentsAreReportedBeforeAnythingIsStored() throws {
        let renderer = NotificationRenderer(catalog: try NotificationCatalog.load(path: Self.examplePath("merchant")))
        let arguments = ["order_number": "1", "total": "R$ 1", "customer_name": "A"]
        #expect(throws: CatalogError.missingArgument(field: "collapse", name: "order_id")) {
            try renderer.validate(kind: "orders.paid", title: nil, body: nil, arguments: arguments, data: ["store_id": "s"])
        }
        #expect(throws: CatalogError.missingArgument(field: "thread", name: "store_id")) {
            try renderer.validate(kind: "orders.paid", title: nil, body: nil, arguments: arguments, data: ["order_id": "o"])
        }
        // A call that names its own collapse key and thread does not need the kind's arguments.
        try renderer.validate(kind: "orders.paid", title: nil, body: nil, arguments: arguments, data: [:], collapseKey: "k", threadID: "t")
        #expect(throws: CatalogError.missingArgument(field: "title.en", name: "order_number")) {
            try renderer.validate(kind: "orders.paid", title: nil, body: nil, arguments: ["total": "1", "customer_name": "A"],
                                  data: ["store_id": "s", "order_id": "o"])
        }
        let title = try Self.text(["pt": "Olá", "en": "Hi {name}"])
        #expect(throws: CatalogError.missingArgument(field: "title.en", name: "name")) {
            try renderer.validate(kind: "test", title: title, body: nil, arguments: [:], data: [:])
        }
        #expect(throws: CatalogError.missingArgument(field: "body.pt", name: "message")) {
            try renderer.render(kind: "conversations.message_received", deviceLocale: "pt-BR", title: nil, body: nil,
                                arguments: ["customer_name": "A"], data: ["conversation_id": "c"],
                                collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
        }
    }

    @Test func priorityMapsToAndroidAndIOS() {
        #expect(NotificationRenderer.androidPriority(nil) == "normal")
        #expect(NotificationRenderer.androidPriority("normal") == "normal")
        #expect(NotificationRenderer.androidPriority("high") == "high")
        #expect(NotificationRenderer.androidPriority("urgent") == "high")
        #expect(NotificationRenderer.interruptionLevel("high") == nil)
        #expect(NotificationRenderer.interruptionLevel("urgent") == "time-sensitive")
    }

    // MARK: invalid catalogs

    @Test func theEmptyCatalogRendersCallTextsOnly() throws {
        let catalog = NotificationCatalog.empty
        #expect(catalog.defaultLocale == "en")
        #expect(catalog.notificationIDKey == "notification_id")
        let parsed = try Self.catalog("{}")
        #expect(parsed.app == "default" && parsed.defaultLocale == "en" && parsed.notificationIDKey == "notification_id" && parsed.kinds.isEmpty)
        let rendered = try NotificationRenderer(catalog: catalog).render(
            kind: "anything", deviceLocale: "en", title: LocalizedText(single: try TextTemplate("T")), body: nil,
            arguments: [:], data: [:], collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil)
        #expect(rendered == RenderedNotification(title: "T"))
    }

    /// An inbox reader names several languages (`Accept-Language` by weight, then the user's):
    /// each text is in the first of them it has, matched as a device's locale is (the same
    /// language counts), else in the catalog's default; a text with one language only is that one.
    @Test func aListOfLanguagesTakesTheFirstEachTextHas() throws {
        let renderer = NotificationRenderer(catalog: NotificationCatalog.empty)   // default "en"
        let title = LocalizedText(["pt": try TextTemplate("Olá"), "en": try TextTemplate("Hi"), "es": try TextTemplate("Hola")])
        let body = LocalizedText(["es": try TextTemplate("Cuerpo"), "en": try TextTemplate("Body")])
        func shown(_ locales: [String]) throws -> RenderedNotification {
            try renderer.render(kind: "k", locales: locales, title: title, body: body, arguments: [:], data: [:],
                                collapseKey: nil, threadID: nil)
        }
        #expect(try shown(["de-DE", "pt-BR", "es"]) == RenderedNotification(title: "Olá", body: "Cuerpo", locale: "pt"))
        #expect(try shown(["de", "es-MX"]) == RenderedNotification(title: "Hola", body: "Cuerpo", locale: "es"))
        #expect(try shown(["de", "fr"]) == RenderedNotification(title: "Hi", body: "Body", locale: "en"))
        #expect(try shown([]) == RenderedNotification(title: "Hi", body: "Body", locale: "en"))
        // The single-language form is the list of one.
        #expect(try renderer.render(kind: "k", deviceLocale: "pt-BR", title: title, body: body, arguments: [:], data: [:],
                                    collapseKey: nil, threadID: nil, sound: nil, androidChannelID: nil) == shown(["pt-BR"]))
    }

    @Test func aSilencedKindOverridesItsCategorySound() throws {
        let catalog = try Self.catalog("""
            {"categories": {"c": {"sound": "default"}},
             "kinds": {"loud": {"category": "c"}, "quiet": {"category": "c", "sound": null}, "own": {"category": "c", "sound": "x.caf"}}}
            """)
        #expect(catalog.kind("loud")?.sound == "default")
        #expect(catalog.kind("quiet")?.sound == nil)
        #expect(catalog.kind("own")?.sound == "x.caf")
        #expect(catalog.kind("loud")?.androidChannelID == "c")
    }

    @Test(arguments: [
        (#"{"kinds": {"a": {"category": "nope"}}}"#, "kinds.a.category", "unknown category \"nope\""),
        (#"{"categories": {"c": {}}, "kinds": {"a.b": {"category": "x"}}}"#, "kinds[\"a.b\"].category", "(the catalog has: c)"),
        (#"{"kinds": {"orders.paid": {"collapse": "order-{order_id"}}}"#, "kinds[\"orders.paid\"].collapse", "unclosed {"),
        (#"{"kinds": {"k": {"title": {"en": "Hi }"}}}}"#, "kinds.k.title.en", "lone }"),
        (#"{"kinds": {"k": {"priority": "max"}}}"#, "kinds.k.priority", "not one of normal, high, urgent"),
        (#"{"kinds": {"bad kind": {}}}"#, "kinds[\"bad kind\"]", "a kind name is 1-64"),
        (#"{"kinds": {"": {}}}"#, "kinds[\"\"]", "a kind name is 1-64"),
        (#"{"kinds": {"k": {"colapse": "x"}}}"#, "kinds.k.colapse", "unknown field"),
        (#"{"kinds": {"k": {"default_enabled": "yes"}}}"#, "kinds.k.default_enabled", "must be true or false"),
        (#"{"kinds": {"k": {"title": {"english": "x"}}}}"#, "kinds.k.title.english", "not a language tag"),
        (#"{"kinds": {"k": {"title": {"pt-br": "x", "pt-BR": "y"}}}}"#, "kinds.k.title.pt-br", "the same language as"),
        (#"{"default_locale": "pt-BR", "kinds": {"k": {"title": {"en": "x"}}}}"#, "kinds.k.title", "no text for the default locale pt-BR"),
        (#"{"kinds": {"k": {"title": {}}}}"#, "kinds.k.title", "at least one language"),
        (#"{"kinds": {"k": {"title": 3}}}"#, "kinds.k.title", "must be a string or an object"),
        (#"{"default_locale": "portuguese!"}"#, "default_locale", "not a language tag"),
        (#"{"categories": {"c": {"importance": "loud"}}}"#, "categories.c.importance", "not one of min, low"),
        (#"{"exclude_audiences": ["staff", 1]}"#, "exclude_audiences[1]", "non-empty string"),
        (#"{"kinds": []}"#, "kinds", "must be an object"),
        (#"{"app": "x", "extra": 1}"#, "extra", "unknown field"),
        (#"[]"#, "", "must be a JSON object"),
        ("{\n  \"kinds\": {,}\n}", "", "not valid JSON (line 2, column 13)"),
    ])
    func invalidCatalogsGiveAPreciseError(_ json: String, _ field: String, _ reason: String) {
        let error = Self.error(json)
        #expect(error?.field == field, "\(json)")
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "loaded") should say \(reason)")
    }

    @Test func commentsAreAllowedAndNullIDKeyMeansNone() throws {
        let catalog = try Self.catalog(#"{"_comment": "x", "notification_id_key": null, "kinds": {"k": {"_note": "y"}}}"#)
        #expect(catalog.notificationIDKey == nil)
        #expect(catalog.kind("k")?.audience == "everyone")
        #expect(catalog.kind("k")?.defaultEnabled == true)
    }

    @Test func anUnreadableFileIsReported() {
        #expect(throws: CatalogError.unreadable(path: "/nonexistent/catalog.json", reason: "No such file or directory")) {
            try NotificationCatalog.load(path: "/nonexistent/catalog.json")
        }
    }
}

/// Braces are found by Unicode scalar: a combining mark after a brace does not hide it.
/// `NotificationRenderer.validate` checks templates without rendering them (issue 17): the check
/// refuses what rendering refuses, with the same error.
@Suite struct TextTemplateCheckTests {
    @Test(arguments: ["plain text", "", "{{literal}}", "Pedido #{n} de {who}", "{missing}", "{n}{missing}{other}", "a{b}c{{d}}"])
    func checkingThrowsWhatRenderingThrows(_ source: String) throws {
        let template = try TextTemplate(source)
        let arguments = ["n": "1", "who": "Ana", "b": "x"]
        var rendered: CatalogError?
        do { _ = try template.render(arguments, field: "title.pt") } catch { rendered = error }
        var checked: CatalogError?
        do { try template.check(arguments, field: "title.pt") } catch { checked = error }
        #expect(checked == rendered)
        #expect(template.hasPlaceholders == !template.placeholders.isEmpty)
    }
}

@Suite struct TextTemplateScalarTests {
    @Test func combiningMarksDoNotHideBraces() throws {
        #expect(throws: CatalogError.self) { _ = try TextTemplate("a}\u{0301}b") }
        #expect(throws: CatalogError.self) { _ = try TextTemplate("x{\u{0301}") }
        let escaped = try TextTemplate("{{\u{0301}")
        #expect(try escaped.render([:], field: "t") == "{\u{0301}")
        let named = try TextTemplate("Olá {name}\u{0301}!")
        #expect(try named.render(["name": "Ana"], field: "t") == "Olá Ana\u{0301}!")
    }
}
