/// A channel's name: 1–200 characters of `A-Z a-z 0-9 _ - : . @` (SPEC RT-1), e.g. `user:42`,
/// `generation:9f1c`. Validated once at the edge so the hub never sees a bad name.
public struct ChannelName: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The longest name accepted, in characters (all ASCII, so also bytes).
    public static let maxLength = 200

    /// The validated name.
    public let rawValue: String

    /// - Returns: nil when `raw` is empty, longer than 200 or has a character outside the set.
    public init?(_ raw: some StringProtocol) {
        let utf8 = raw.utf8
        guard !utf8.isEmpty, utf8.count <= Self.maxLength, utf8.allSatisfy(Self.isAllowed) else { return nil }
        rawValue = String(raw)
    }

    /// The personal channel of a user: `user:{sub}`; nil when `sub` is empty or cannot form a
    /// valid name.
    public static func personal(userID: String) -> ChannelName? {
        userID.isEmpty ? nil : ChannelName("user:" + userID)
    }

    /// A name inside app `app`'s namespace (ADR 0006): `~{app}~{name}` for any app but `default`,
    /// whose names stay as they are. `~` is outside the alphabet, so no request can name it.
    public static func scoped(_ name: ChannelName, app: String) -> ChannelName {
        app == "default" ? name : ChannelName(scopedRawValue: AppNamespace.qualified(name.rawValue, app: app))
    }

    private init(scopedRawValue: String) { rawValue = scopedRawValue }

    /// A name as a broker or presence store wrote it (`rawValue`): a plain name, or one in an
    /// app's namespace (`~{app}~{name}`, `app` an `AppID`). Requests never reach
    /// this: their names go through `init(_:)`, which has no `~`.
    /// - Returns: nil when `raw` is neither.
    public init?(storedRawValue raw: some StringProtocol) {
        guard raw.utf8.first == UInt8(ascii: "~") else {
            self.init(raw)
            return
        }
        guard let (app, rest) = AppNamespace.split(raw), let id = AppID(app), let name = ChannelName(rest) else { return nil }
        self = ChannelName.scoped(name, app: id.rawValue)
    }

    /// The name as the app's clients and backend write it: without the app prefix.
    public var clientName: String {
        AppNamespace.split(rawValue).map { String($0.name) } ?? rawValue
    }

    /// The app whose namespace holds this name (`default` for plain names).
    public var app: String {
        AppNamespace.split(rawValue).map { String($0.app) } ?? "default"
    }

    /// The client's form of this name (`clientName`) as a validated name.
    public var unscoped: ChannelName { rawValue.utf8.first == UInt8(ascii: "~") ? ChannelName(scopedRawValue: clientName) : self }

    public var description: String { rawValue }

    public static func < (lhs: ChannelName, rhs: ChannelName) -> Bool { lhs.rawValue < rhs.rawValue }

    // Written out and inlinable: the hub compares and hashes names per message and per
    // subscriber, from other modules, where a synthesized conformance is an opaque call.
    @inlinable
    public static func == (lhs: ChannelName, rhs: ChannelName) -> Bool { lhs.rawValue == rhs.rawValue }

    @inlinable
    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    @inline(__always)
    static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: ":"), UInt8(ascii: "."), UInt8(ascii: "@"):
            return true
        default:
            return false
        }
    }
}

/// A grant from an access token's `channels` claim: an exact channel name, or `prefix:*` which
/// grants every channel whose name starts with `prefix:` (SPEC RT-3). The star only follows a
/// colon: `gen*` would grant `generation:9` and `user:4*` every user from 4 to 49…, so such
/// patterns are refused rather than read as plain string prefixes.
public struct ChannelGrant: Hashable, Sendable {
    private let exact: String?
    private let prefix: String?

    /// - Returns: nil for a pattern that is neither a valid name nor `prefix:*` with a valid stem.
    public init?(_ pattern: String) {
        if pattern.hasSuffix("*") {
            let stem = pattern.dropLast()
            guard stem.count >= 2, stem.hasSuffix(":"), ChannelName(stem) != nil else { return nil }
            exact = nil
            prefix = String(stem)
        } else {
            guard ChannelName(pattern) != nil else { return nil }
            exact = pattern
            prefix = nil
        }
    }

    /// True when this grant covers `channel`.
    public func allows(_ channel: ChannelName) -> Bool {
        if let exact { return channel.rawValue == exact }
        if let prefix { return channel.rawValue.hasPrefix(prefix) && channel.rawValue.utf8.count > prefix.utf8.count }
        return false
    }
}
