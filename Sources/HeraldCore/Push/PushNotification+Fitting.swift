/// Shortening an alert's texts to fit a provider's payload limit (PU-3): one rule for every
/// provider, so an iOS, Android, Expo and browser push of one notification read alike.
extension PushNotification {
    /// The text that ends a shortened title or body: one character, 3 bytes of UTF-8.
    public static let shortenedTextEnding = "…"

    /// This alert with its body (then, if that is not enough, its title) cut to the longest run of
    /// whole characters (grapheme clusters: an emoji or an accented letter is never split) whose
    /// payload fits `limit`, each cut text ended with "…"; a text with no character left is dropped.
    /// Meant for a notification whose payload is over `limit`: the API takes a title and a body of
    /// 1024 bytes each, data of 2048 and catalog texts rendered with arguments, which together may
    /// pass a provider's 4096 bytes, and the provider would refuse the push for good. A shorter
    /// text reaches the device; data, which the app reads, is never cut.
    ///
    /// - Parameters:
    ///   - limit: the provider's limit, in the unit `size` measures (bytes).
    ///   - size: the provider's measure of a notification's payload (its JSON, or the bytes the
    ///     provider counts). Escapes make a character's share vary, so the longest prefix that
    ///     fits is searched for (about ten measures for a text of 1024 characters, on a rare path).
    /// - Returns: the shortened notification, or nil when no cut makes it fit with a character of
    ///   text left (the rest alone, data included, is too large) or it has no texts to cut (a wake-up).
    /// - Throws: what `size` throws.
    public func fittingTexts<Failure: Error>(within limit: Int, size: (PushNotification) throws(Failure) -> Int) throws(Failure) -> PushNotification? {
        guard kind == .alert else { return nil }
        var shorter = self
        for field in [\PushNotification.body, \PushNotification.title] {
            guard let text = shorter[keyPath: field] else { continue }
            let characters = Array(text)
            func cut(_ count: Int) -> String? { count == 0 ? nil : String(characters[..<count]) + Self.shortenedTextEnding }
            var fits = 0, tooLong = characters.count
            while tooLong - fits > 1 {
                let middle = (fits + tooLong) / 2
                shorter[keyPath: field] = cut(middle)
                if try size(shorter) <= limit { fits = middle } else { tooLong = middle }
            }
            shorter[keyPath: field] = cut(fits)
            // An alert with no text left would show nothing: not a fit.
            if shorter.title == nil && shorter.body == nil { return nil }
            if try size(shorter) <= limit { return shorter }
        }
        return nil
    }
}
