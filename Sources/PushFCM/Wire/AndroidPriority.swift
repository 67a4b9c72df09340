import HeraldCore
import PushHTTP

/// FCM `android.priority` (push-providers.md §2.2): `normal` may wait for Doze maintenance
/// windows, `high` wakes the device. Written lower-case as seed 001 shows; FCM accepts both cases.
public struct AndroidPriority: Hashable, Sendable, CustomStringConvertible {
    /// The JSON string value.
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    public static let normal = AndroidPriority("normal")
    public static let high = AndroidPriority("high")

    public var description: String { rawValue }
}
