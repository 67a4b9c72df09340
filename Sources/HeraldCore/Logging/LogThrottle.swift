/// Lets one line through per interval and counts the rest, for a failure that repeats on a timer
/// (a full disk fails every claim of the delivery worker, four times a second): one line per
/// interval says as much as all of them, with how many were held back.
///
/// A value; its owner keeps it confined (the worker: its queue).
public struct LogThrottle: Sendable {
    /// Nanoseconds between two lines.
    public let intervalNanoseconds: UInt64
    private var lastLoggedAt: UInt64?
    private var held = 0

    /// - Parameter intervalNanoseconds: the shortest time between two lines; default 30 s.
    public init(intervalNanoseconds: UInt64 = 30_000_000_000) {
        self.intervalNanoseconds = intervalNanoseconds
    }

    /// Whether to log an occurrence at `now` (monotonic ns).
    ///
    /// A `now` before the last line's counts as inside the interval: owners shared by threads read
    /// the clock before taking their lock, so a later reading can be admitted first (the HTTP
    /// server's loops meeting EMFILE together logged twice in one interval through the wrap-around).
    /// - Returns: nil to stay quiet (counted), or how many were held back since the last line.
    public mutating func admit(now: UInt64) -> Int? {
        if let last = lastLoggedAt, now < last || now - last < intervalNanoseconds {
            held += 1
            return nil
        }
        defer {
            lastLoggedAt = now
            held = 0
        }
        return held
    }
}
