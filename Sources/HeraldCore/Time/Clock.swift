import Glibc

/// Where Herald reads time: wall time for what is stored or shown (unix milliseconds), monotonic
/// time for timeouts and waits. Everything in the core takes a `Clock`, so a test drives time
/// by hand with `ManualClock` instead of sleeping (STYLE "time is injected").
///
/// # Thread safety
/// Implementations are `Sendable` and may be read from any thread.
public protocol Clock: Sendable {
    /// Wall-clock time, milliseconds since 1970-01-01T00:00Z (`CLOCK_REALTIME`).
    var unixMilliseconds: Int64 { get }
    /// Monotonic time in nanoseconds from an arbitrary origin (`CLOCK_MONOTONIC`); never goes back.
    var monotonicNanoseconds: UInt64 { get }
}

extension Clock {
    /// Wall-clock time in whole seconds since 1970 (JWT `iat`/`exp`, `apns-expiration`).
    @inlinable public var unixSeconds: Int64 { unixMilliseconds / 1000 }
}

/// The machine's clocks (`clock_gettime`).
public struct SystemClock: Clock {
    @inlinable public init() {}

    @inlinable @inline(__always)
    public var unixMilliseconds: Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    @inlinable @inline(__always)
    public var monotonicNanoseconds: UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}
