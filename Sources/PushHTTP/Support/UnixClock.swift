import HeraldCore

/// Wall-clock time as whole UNIX seconds (UTC), the unit of JWT `iat`/`exp`, `apns-expiration`
/// and OAuth `expires_in`.
///
/// Token caches take the clock as a closure of this type, so tests drive time by hand instead of
/// sleeping (STYLE "time is injected").
public typealias UnixClock = @Sendable () -> Int

/// The system wall clock (`clock_gettime(CLOCK_REALTIME)`). Wall time, not monotonic, because
/// providers compare our `iat` with *their* wall clock.
public let systemUnixClock: UnixClock = { Int(SystemClock().unixSeconds) }
