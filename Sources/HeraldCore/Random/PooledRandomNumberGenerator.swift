import Glibc
import Synchronization

/// The system's cryptographically secure random bits (`getentropy(3)`, i.e. `getrandom(2)`),
/// drawn 256 bytes at a time into a process-wide pool instead of one system call per value.
///
/// `SystemRandomNumberGenerator` makes a `getrandom` call for every `next()`: at the choke point
/// that was four calls per notification (the notification id, the two halves of the apns-id, the
/// outcome's retry jitter, issue 17); now one call serves 32 values. The bits are the same
/// kernel CSPRNG's output, only fetched in bulk; each is handed out once. Herald never forks
/// without `exec`, so no two processes share a pool.
///
/// ```swift
/// var random = PooledRandomNumberGenerator()
/// let word = random.next()                       // 64 bits from the pool
/// let jitter = Double.random(in: 0..<1, using: &random)
/// ```
///
/// # Thread safety
/// Any thread: the pool is behind a lock, held for a copy of 8 bytes (or a refill).
public struct PooledRandomNumberGenerator: RandomNumberGenerator, Sendable {
    public init() {}

    /// 64 random bits, taken from the pool (refilled from the kernel when it is empty).
    public mutating func next() -> UInt64 {
        RandomPool.shared.next()
    }
}

/// The process-wide pool behind `PooledRandomNumberGenerator`.
final class RandomPool: Sendable {
    static let shared = RandomPool()

    /// Words per refill: 256 bytes, the most one `getentropy` call returns (one `getrandom`
    /// system call, which never returns short for up to 256 bytes).
    static let words = 32

    private struct State {
        let buffer: UnsafeMutablePointer<UInt64>
        /// Words of `buffer` already handed out; `words` means empty.
        var used: Int
    }

    private let state: Mutex<State>

    private init() {
        let buffer = UnsafeMutablePointer<UInt64>.allocate(capacity: Self.words)
        state = Mutex(State(buffer: buffer, used: Self.words))
    }

    func next() -> UInt64 {
        state.withLock { state in
            if state.used == Self.words {
                Self.fill(state.buffer, words: Self.words)
                state.used = 0
            }
            let word = state.buffer[state.used]
            state.used += 1
            return word
        }
    }

    /// Fills `buffer` from the kernel. `getentropy` blocks only until the kernel's generator is
    /// first seeded (early boot) and retries interrupted calls itself; should it fail (a kernel
    /// without `getrandom`, a seccomp filter), the words come from `SystemRandomNumberGenerator`
    /// one by one, as before the pool.
    private static func fill(_ buffer: UnsafeMutablePointer<UInt64>, words: Int) {
        if getentropy(buffer, words * MemoryLayout<UInt64>.size) == 0 { return }
        var system = SystemRandomNumberGenerator()
        for index in 0..<words { buffer[index] = system.next() }
    }
}
