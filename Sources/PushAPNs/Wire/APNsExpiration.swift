import HeraldCore
import PushHTTP

/// The `apns-expiration` header: until when APNs stores and retries a push for an offline device.
///
/// UNIX epoch **seconds** (UTC). `0` means "try once, do not store". Seed 001's pushes expire after
/// one hour, so Herald always sends the header (Apple's storage policy applies only when it is absent).
public struct APNsExpiration: Hashable, Sendable, CustomStringConvertible {
    /// Epoch seconds, or 0.
    public let epochSeconds: Int

    private init(_ epochSeconds: Int) { self.epochSeconds = epochSeconds }

    /// `0`: deliver now or never.
    public static let immediately = APNsExpiration(0)

    /// Expire at `epochSeconds` (must be positive; `0` is `immediately`).
    public static func at(_ epochSeconds: Int) -> APNsExpiration {
        precondition(epochSeconds >= 0, "apns-expiration cannot be negative")
        return APNsExpiration(epochSeconds)
    }

    /// Expire `ttlSeconds` after `now`; a TTL of 0 is `immediately`.
    public static func after(ttlSeconds: Int, now: Int) -> APNsExpiration {
        precondition(ttlSeconds >= 0, "a TTL cannot be negative")
        return ttlSeconds == 0 ? .immediately : .at(now + ttlSeconds)
    }

    /// The header value.
    public var headerValue: String { String(epochSeconds) }
    public var description: String { headerValue }
}
