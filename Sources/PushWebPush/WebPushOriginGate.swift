import Synchronization

/// Counts Web Push requests in flight per push-service origin, across every app's provider
/// (ADR 0024): a slow or silent endpoint host, which a client chooses, may hold at most `limit` of
/// the delivery worker's slots, so the other providers and push services keep the rest.
public final class WebPushOriginGate: Sendable {
    /// The process-wide gate every `WebPushProvider` uses unless given another (tests).
    public static let shared = WebPushOriginGate(limit: 128)

    /// Requests in flight one origin may have; a further one is refused by `enter(_:)`.
    public let limit: Int
    private let inFlight = Mutex<[String: Int]>([:])

    /// - Parameter limit: at least 1; 128, half the worker's 256 slots, for `shared`.
    public init(limit: Int) {
        precondition(limit >= 1, "an origin must be allowed one request")
        self.limit = limit
    }

    /// Takes a place for a request to `origin`; false when `limit` are already in flight there.
    /// Each `true` must be matched by one `leave(_:)` once the request has ended.
    public func enter(_ origin: String) -> Bool {
        inFlight.withLock { counts in
            let current = counts[origin, default: 0]
            guard current < limit else { return false }
            counts[origin] = current + 1
            return true
        }
    }

    /// Gives back the place `enter(_:)` took.
    public func leave(_ origin: String) {
        inFlight.withLock { counts in
            guard let current = counts[origin] else { return }
            counts[origin] = current > 1 ? current - 1 : nil
        }
    }

    /// Requests in flight to `origin` now.
    public func count(_ origin: String) -> Int {
        inFlight.withLock { $0[origin, default: 0] }
    }
}
