import Dispatch
import Synchronization

/// Counts Web Push requests in flight per push-service origin, across every app's provider
/// (ADR 0024): a slow or silent endpoint host, which a client chooses, may hold at most `limit` of
/// the delivery worker's slots, so the other providers and push services keep the rest.
///
/// A request beyond the limit waits in its origin's line, first come first served, for up to
/// `patienceMilliseconds`: a healthy service frees a place within its answer time, so a broadcast
/// to many browsers of one service goes out at `limit` at a time without being turned away; a
/// stalled one frees none, and the waiting request is refused (sent back to the queue), giving its
/// worker slot back.
public final class WebPushOriginGate: Sendable {
    /// The process-wide gate every `WebPushProvider` uses unless given another (tests).
    public static let shared = WebPushOriginGate(limit: 128, patienceMilliseconds: 1_000)

    /// Requests in flight one origin may have; a further one waits for a place.
    public let limit: Int
    /// How long a request waits for a place before it is refused.
    public let patienceMilliseconds: Int64
    private let after: @Sendable (Int64, @escaping @Sendable () -> Void) -> Void
    private let state = Mutex<[String: Line]>([:])
    private let serial = Atomic<UInt64>(0)

    /// One origin: its requests in flight and those waiting for a place, oldest first.
    private struct Line {
        var inFlight = 0
        var waiting: [Waiter] = []
    }

    private struct Waiter {
        let id: UInt64
        let start: @Sendable () -> Void
        let refuse: @Sendable () -> Void
    }

    /// - Parameters:
    ///   - limit: at least 1; 128, half the worker's 256 slots, for `shared`.
    ///   - patienceMilliseconds: how long a request waits for a place (1 s for `shared`).
    ///   - after: runs its closure that many milliseconds later, on any thread (tests pass a
    ///     scheduler they fire themselves); a global dispatch queue by default.
    public init(limit: Int, patienceMilliseconds: Int64,
                after: @escaping @Sendable (Int64, @escaping @Sendable () -> Void) -> Void = { milliseconds, work in
                    DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(milliseconds)), execute: work)
                }) {
        precondition(limit >= 1, "an origin must be allowed one request")
        self.limit = limit
        self.patienceMilliseconds = patienceMilliseconds
        self.after = after
    }

    /// Runs `start` once `origin` has a place: at once when fewer than `limit` requests are in
    /// flight there (on the calling thread), else when one of them ends within the patience (on
    /// the thread that ended it, through `leave(_:)`); otherwise runs `refuse` instead (on the
    /// scheduler's thread). Exactly one of the two runs. A started request must be matched by one
    /// `leave(_:)` once it has ended.
    public func enter(_ origin: String, start: @escaping @Sendable () -> Void, refuse: @escaping @Sendable () -> Void) {
        let id = serial.add(1, ordering: .relaxed).newValue
        let admitted = state.withLock { lines in
            var line = lines[origin, default: Line()]
            defer { lines[origin] = line }
            if line.inFlight < limit {
                line.inFlight += 1
                return true
            }
            line.waiting.append(Waiter(id: id, start: start, refuse: refuse))
            return false
        }
        if admitted { return start() }
        after(patienceMilliseconds) { [self] in
            let waiter = state.withLock { lines -> Waiter? in
                guard var line = lines[origin], let index = line.waiting.firstIndex(where: { $0.id == id }) else { return nil }
                let waiter = line.waiting.remove(at: index)
                lines[origin] = line
                return waiter
            }
            waiter?.refuse()
        }
    }

    /// Gives back the place a started request took: to the oldest request waiting for one, which
    /// starts now, or to the origin's count.
    public func leave(_ origin: String) {
        let next = state.withLock { lines -> Waiter? in
            guard var line = lines[origin] else { return nil }
            if line.waiting.isEmpty {
                line.inFlight -= 1
                lines[origin] = line.inFlight > 0 ? line : nil
                return nil
            }
            let next = line.waiting.removeFirst()
            lines[origin] = line
            return next
        }
        next?.start()
    }

    /// Requests in flight to `origin` now.
    public func count(_ origin: String) -> Int {
        state.withLock { $0[origin]?.inFlight ?? 0 }
    }

    /// Requests waiting for a place at `origin` now.
    public func waiting(_ origin: String) -> Int {
        state.withLock { $0[origin]?.waiting.count ?? 0 }
    }
}
