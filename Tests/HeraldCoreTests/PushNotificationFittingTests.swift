import Testing

@testable import HeraldCore

/// PU-3: the one rule every provider shortens an alert's texts by (`fittingTexts(within:size:)`):
/// the body first, then the title, at a whole character, ended with "…"; data never.
@Suite struct PushNotificationFittingTests {
    /// A measure that counts the texts' and the data's UTF-8 bytes, as FCM counts.
    static func bytes(_ n: PushNotification) -> Int {
        (n.title?.utf8.count ?? 0) + (n.body?.utf8.count ?? 0) + n.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }

    @Test func theBodyIsCutToTheLastByteThatFits() throws {
        // 10 + 100 bytes; a limit of 50 leaves the body 40 bytes: 37 characters and "…" (3 bytes).
        let n = PushNotification(title: String(repeating: "T", count: 10), body: String(repeating: "b", count: 100))
        let fitted = try #require(n.fittingTexts(within: 50, size: Self.bytes))
        #expect(fitted.title == n.title)
        #expect(fitted.body == String(repeating: "b", count: 37) + "…")
        #expect(Self.bytes(fitted) == 50)
    }

    /// A character is never split: "é" is 2 bytes, so a byte of room may stay unused.
    @Test func multiByteCharactersAreKeptWhole() throws {
        let n = PushNotification(title: "t", body: String(repeating: "é", count: 100))
        let fitted = try #require(n.fittingTexts(within: 51, size: Self.bytes))
        // 1 + 2k + 3 ≤ 51 → k = 23 (50 bytes), one byte left over.
        #expect(fitted.body == String(repeating: "é", count: 23) + "…")
        #expect(Self.bytes(fitted) == 50)
        // A decomposed "é" (e + U+0301) is one character too: never cut between its two scalars.
        let decomposed = PushNotification(title: "t", body: String(repeating: "e\u{301}", count: 100))
        let cut = try #require(decomposed.fittingTexts(within: 51, size: Self.bytes))
        #expect(cut.body!.unicodeScalars.dropLast().count % 2 == 0)
        #expect(cut.body!.hasPrefix("e\u{301}") && cut.body!.hasSuffix("e\u{301}…"))
    }

    /// Emoji, flags and ZWJ sequences stay whole (a family is 7 scalars, 25 bytes).
    @Test func emojiAreKeptWhole() throws {
        let family = "👩‍👩‍👧‍👦"
        #expect(family.utf8.count == 25)
        let n = PushNotification(title: String(repeating: family, count: 40))
        let fitted = try #require(n.fittingTexts(within: 200, size: Self.bytes))
        // 25k + 3 ≤ 200 → 7 families.
        #expect(fitted.title == String(repeating: family, count: 7) + "…")
        let flags = PushNotification(title: "t", body: String(repeating: "🇧🇷", count: 30))   // 8 bytes each
        #expect(try #require(flags.fittingTexts(within: 40, size: Self.bytes)).body == String(repeating: "🇧🇷", count: 4) + "…")
    }

    /// Past the body, the title: the body goes when no character of it fits.
    @Test func theTitleIsCutWhenTheBodyIsNotEnough() throws {
        let n = PushNotification(title: String(repeating: "😀", count: 50), body: String(repeating: "b", count: 50), data: ["k": String(repeating: "v", count: 60)])
        let fitted = try #require(n.fittingTexts(within: 100, size: Self.bytes))
        // 61 of data; the body cannot keep a character beside a 200-byte title: gone; title 4k + 3 ≤ 39 → 9.
        #expect(fitted.body == nil)
        #expect(fitted.title == String(repeating: "😀", count: 9) + "…")
        #expect(fitted.data == n.data, "data is never cut")
    }

    /// Data alone over the limit, an alert with no text left, or a wake-up: nothing to cut.
    @Test func whatNoCutMakesFitIsNil() {
        let data = ["k": String(repeating: "v", count: 100)]
        #expect(PushNotification(title: "title", body: "body", data: data).fittingTexts(within: 100, size: Self.bytes) == nil)
        #expect(PushNotification(title: "t", data: ["k": String(repeating: "v", count: 99)]).fittingTexts(within: 100, size: Self.bytes) == nil,
                "an alert with no text left shows nothing: not sent that way")
        #expect(PushNotification.wakeup(data: data).fittingTexts(within: 10, size: Self.bytes) == nil)
    }
}
