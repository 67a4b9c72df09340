/// `aps.interruption-level` (iOS 15+, push-providers.md §1.4): how strongly an alert may break
/// through Focus. NO-7: `urgent` notifications are `time-sensitive` (which needs
/// the app's Time Sensitive entitlement; without it iOS treats the push as `active`).
public struct InterruptionLevel: Hashable, Sendable, CustomStringConvertible {
    /// The JSON string value.
    public let rawValue: String

    /// Any level, as stored in a job or added by Apple later; sent as given.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// Delivered quietly to the notification list.
    public static let passive = InterruptionLevel(rawValue: "passive")
    /// Default: sound and banner, respects Focus.
    public static let active = InterruptionLevel(rawValue: "active")
    /// Breaks through Focus (entitlement required).
    public static let timeSensitive = InterruptionLevel(rawValue: "time-sensitive")
    /// Bypasses mute and Focus (special Apple entitlement).
    public static let critical = InterruptionLevel(rawValue: "critical")

    public var description: String { rawValue }
}
