/// The one spelling of "this name is app X's" (ADR 0006): `~{app}~{name}`. Channel names, presence
/// user keys, a sessionless app's standing session and the brokers' keys of an app's channels all
/// use it; `~` is outside every alphabet a request can use, so no client or backend can write it.
/// The `default` app's names stay unqualified.
public enum AppNamespace {
    /// What every qualified name of `app` starts with: `~{app}~`.
    public static func prefix(_ app: String) -> String { "~" + app + "~" }

    /// `name` in `app`'s namespace, qualified whatever the app (callers decide about `default`).
    public static func qualified(_ name: some StringProtocol, app: String) -> String { prefix(app) + name }

    /// The app and the name of a qualified text.
    /// - Returns: nil when `text` does not start with `~{app}~`.
    public static func split<Text: StringProtocol>(_ text: Text) -> (app: Text.SubSequence, name: Text.SubSequence)? {
        guard text.utf8.first == UInt8(ascii: "~") else { return nil }
        let rest = text.dropFirst()
        guard let end = rest.firstIndex(of: "~") else { return nil }
        return (rest[rest.startIndex..<end], rest[rest.index(after: end)...])
    }
}
