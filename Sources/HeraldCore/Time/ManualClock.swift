import Synchronization

/// A clock that moves only when told (`advance(byMilliseconds:)`, `set(unixMilliseconds:)`): tests
/// of retries, leases, expiry and ack windows run in no time and never flake on a slow machine.
/// Wall and monotonic time move together.
public final class ManualClock: Clock {
    private let state: Mutex<(wall: Int64, monotonic: UInt64)>

    /// - Parameter unixMilliseconds: the starting wall time; default 2026-01-01T00:00Z.
    public init(unixMilliseconds: Int64 = 1_767_225_600_000) {
        state = Mutex((unixMilliseconds, 1_000_000_000))
    }

    public var unixMilliseconds: Int64 { state.withLock { $0.wall } }
    public var monotonicNanoseconds: UInt64 { state.withLock { $0.monotonic } }

    /// Moves both clocks forward by `milliseconds` (must not be negative).
    public func advance(byMilliseconds milliseconds: Int64) {
        precondition(milliseconds >= 0, "a manual clock only moves forward")
        state.withLock { state in
            state.wall += milliseconds
            state.monotonic += UInt64(milliseconds) * 1_000_000
        }
    }

    /// Sets the wall clock (it may step back, as a real one can); monotonic time is unchanged.
    public func set(unixMilliseconds: Int64) {
        state.withLock { $0.wall = unixMilliseconds }
    }
}
