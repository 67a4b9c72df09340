/// What an app never pushes (SPEC AP-6, NO-2; seed 002): notifications meant for an excluded
/// audience, of an excluded kind, or leading to an excluded destination (a data key whose value
/// starts with one of the given prefixes, e.g. staff-only `actionUrl`s such as `/orders/`).
///
/// One value per app: the catalog file's `exclude_audiences`, `exclude_kinds` and `exclude_data`
/// today; the apps work holds it per app. Excluded notifications are still stored and broadcast
/// live (the inbox shows them); only their pushes are skipped, recorded `skipped_audience`.
public struct ExclusionRules: Sendable, Equatable {
    /// A destination rule: pushes whose `data[key]` starts with any of `prefixes` are not sent.
    public struct DataPattern: Sendable, Equatable {
        /// The data key, e.g. `actionUrl`; compared exactly (data keys are case-sensitive).
        public let key: String
        /// Value prefixes, e.g. `/orders/`; compared exactly, so `/account/orders/` is not `/orders/`.
        public let prefixes: [String]

        public init(key: String, prefixes: [String]) {
            self.key = key
            self.prefixes = prefixes
        }

        /// Whether `data` leads to this destination.
        public func matches(_ data: [String: String]) -> Bool {
            guard let value = data[key] else { return false }
            return prefixes.contains { value.hasPrefix($0) }
        }
    }

    /// Excluded audiences, lower-cased: `STAFF`, `Staff` and `staff` are one audience (seed 002
    /// stamps `audience: "STAFF"`).
    public let audiences: Set<String>
    /// Excluded kinds, by exact name (seed 002: staff emitters that carry no audience stamp).
    public let kinds: Set<String>
    /// Excluded destinations, in the catalog's order.
    public let data: [DataPattern]

    /// Nothing excluded.
    public static let none = ExclusionRules()

    /// - Parameters:
    ///   - audiences: audience names in any case; stored lower-cased.
    ///   - kinds: kind names.
    ///   - data: destination rules.
    public init(audiences: Set<String> = [], kinds: Set<String> = [], data: [DataPattern] = []) {
        self.audiences = Set(audiences.map(Self.fold))
        self.kinds = kinds
        self.data = data
    }

    /// Whether `audience` (any case) is never pushed.
    public func excludes(audience: String) -> Bool {
        audiences.contains(Self.fold(audience))
    }

    /// Why a notification is not pushed in this app, or nil when it may be.
    /// - Parameters:
    ///   - kind: the notification's kind.
    ///   - audience: the call's audience, else the kind's, else `everyone`.
    ///   - data: the call's string data (not Herald's own keys).
    /// - Returns: a short reason for the delivery record, e.g. `destination actionUrl=/orders/1 is excluded`.
    public func reason(kind: String, audience: String, data: [String: String]) -> String? {
        if excludes(audience: audience) { return "audience \(audience) is not pushed by this app" }
        if kinds.contains(kind) { return "kind \(kind) is not pushed by this app" }
        if let rule = self.data.first(where: { $0.matches(data) }) {
            return "destination \(rule.key)=\(data[rule.key] ?? "") is not pushed by this app"
        }
        return nil
    }

    /// Case folding for audience names: ASCII-only names (the API checks them), so `lowercased()`
    /// cannot map two different names to one by locale rules.
    static func fold(_ audience: String) -> String {
        audience.lowercased()
    }
}
