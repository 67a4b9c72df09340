import HeraldCore
import PushHTTP

/// The `apns-priority` header (push-providers.md §1.2): how urgently APNs delivers.
///
/// A struct with `static let`s rather than an enum, as in APNSwift, so a value Apple adds later
/// can be expressed without breaking callers.
public struct APNsPriority: Hashable, Sendable, CustomStringConvertible {
    /// The header value: `10`, `5` or `1`.
    public let rawValue: Int

    private init(_ rawValue: Int) { self.rawValue = rawValue }

    /// `10`: send now. Alerts (SPEC PU-1). APNs's default when the header is absent.
    public static let immediately = APNsPriority(10)
    /// `5`: send when the device's power allows; may be batched. The only value allowed for
    /// `background` pushes ("Using priority 10 is an error").
    public static let consideringDevicePower = APNsPriority(5)
    /// `1`: prioritise device power over everything, never wake the device.
    public static let prioritizingDevicePower = APNsPriority(1)

    /// The header value text (the known ones as literals: `String(Int)` is ~300 instructions a push).
    public var headerValue: String {
        switch rawValue {
        case 10: "10"
        case 5: "5"
        case 1: "1"
        default: String(rawValue)
        }
    }
    public var description: String { headerValue }
}
