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
}
