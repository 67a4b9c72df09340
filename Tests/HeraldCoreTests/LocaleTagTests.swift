import HeraldCore
import Testing

/// `LocaleTag` normalises a device's or user's language tag to the usual case (RFC 5646 §2.1.1):
/// language lower case, a 4-letter script title case and a 2-letter region upper case, but only
/// before the first singleton: an extension's or private use's subtags are lower case whatever
/// their length (`en-US-u-ca-gregory`, not `en-US-u-CA-gregory`).
@Suite struct LocaleTagTests {
    @Test func languageScriptAndRegionTakeTheirCase() {
        #expect(LocaleTag("pt_br")?.rawValue == "pt-BR")
        #expect(LocaleTag("ZH-hant-tw")?.rawValue == "zh-Hant-TW")
        #expect(LocaleTag("es-419")?.rawValue == "es-419")
        #expect(LocaleTag("EN")?.rawValue == "en")
    }

    @Test func subtagsAfterASingletonAreLowerCase() {
        #expect(LocaleTag("en-US-u-ca-gregory")?.rawValue == "en-US-u-ca-gregory")
        #expect(LocaleTag("en-us-U-CA-GREGORY")?.rawValue == "en-US-u-ca-gregory")
        #expect(LocaleTag("de-DE-u-co-phonebk")?.rawValue == "de-DE-u-co-phonebk")
        #expect(LocaleTag("en-x-abcd-ab")?.rawValue == "en-x-abcd-ab")
        #expect(LocaleTag("sr-Latn-RS-t-sr-cyrl")?.rawValue == "sr-Latn-RS-t-sr-cyrl")
    }

    @Test func subtagsOutOfRFC5646OrderAreRefused() {
        for bad in ["xx-YY-ZZ", "xx_yy_zz", "en-US-Latn", "en-419-US", "en-abcd-efgh", "en-u", "en-u-ca-x", "en-u-a-ca",
                    "x-private", "en--US", "en-US-", "e", "en-a1", "en-toolongvariant", "en-US-u-c"] {
            #expect(LocaleTag(bad) == nil, "\(bad)")
        }
        #expect(LocaleTag("zh-yue-HK")?.rawValue == "zh-yue-HK")          // extlang
        #expect(LocaleTag("de-DE-1996")?.rawValue == "de-DE-1996")        // a digit and three
        #expect(LocaleTag("sl-rozaj-biske")?.rawValue == "sl-rozaj-biske")  // variants
        #expect(LocaleTag("en-x-a-b")?.rawValue == "en-x-a-b")            // private use takes 1-letter subtags
        #expect(LocaleTag("en-a-bbb-x-a")?.rawValue == "en-a-bbb-x-a")
    }

    /// Android's `Locale.toString()` (what React Native's `I18nManager.localeIdentifier` reports)
    /// still spells Hebrew, Indonesian and Yiddish with the codes ISO 639 withdrew: `iw_IL`,
    /// `in_ID`, `ji`. The IANA registry gives their preferred values (RFC 5646 §4.5), which
    /// catalogs and calls use: unmapped, such a device got the default language (breaker7).
    @Test func deprecatedLanguageCodesTakeTheirPreferredValue() throws {
        #expect(LocaleTag("iw_IL")?.rawValue == "he-IL")
        #expect(LocaleTag("in_ID")?.rawValue == "id-ID")
        #expect(LocaleTag("ji")?.rawValue == "yi")
        #expect(LocaleTag("JW")?.rawValue == "jv")
        #expect(LocaleTag("mo-MD")?.rawValue == "ro-MD")
        // Only the language subtag: `in` as a region of India's shape stays what it is.
        #expect(LocaleTag("en-IN")?.rawValue == "en-IN")
        #expect(LocaleTag("he")?.rawValue == "he")
        // A device registered as `iw` gets the Hebrew text of a catalog or call written `he`.
        let text = LocalizedText(["he": try TextTemplate("שלום"), "en": try TextTemplate("Hello")])
        #expect(try text.template(for: "iw_IL", defaultLocale: "en")?.render([:], field: "title") == "שלום")
    }
}
