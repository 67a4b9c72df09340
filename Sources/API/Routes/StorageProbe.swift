import HeraldCore
import Synchronization

/// Whether storage takes a write, for `/readyz` (RL-2): a real write (`Storage.probeWrite`), its
/// answer kept for `maxAge` so a readiness poll per second from every load balancer costs one
/// small commit, not one per poll. Probes asked while one runs wait for it instead of starting
/// their own.
///
/// # Thread safety
/// Sendable: `check` may be called from any thread; its state is behind a mutex, and completions
/// run on the storage's writer thread or the caller's.
final class StorageProbe: Sendable {
    /// What the last probe found.
    enum Health: Sendable, Equatable {
        case writable
        /// The write failed; `reason` is the readiness JSON's `storage` value (`full`,
        /// `read_only`, `busy`, `stalled`, `unavailable`, `failed`) and `detail` the storage's text.
        case notWritable(reason: String, detail: String)

        /// `/readyz`'s `storage` value: `ok` or the reason.
        var name: String {
            switch self {
            case .writable: "ok"
            case .notWritable(let reason, _): reason
            }
        }

        /// The failure a write met, by meaning.
        init(_ error: any Error) {
            switch error as? StorageError {
            // No answer within the probe's wait (2 s): a frozen volume, a stopped server, or a
            // lock held that long; /readyz answers now instead of waiting with it.
            case .stalled?: self = .notWritable(reason: "stalled", detail: "\(error)")
            case .diskFull?: self = .notWritable(reason: "full", detail: "\(error)")
            case .readOnly?: self = .notWritable(reason: "read_only", detail: "\(error)")
            case .busy?: self = .notWritable(reason: "busy", detail: "\(error)")
            case .unavailable?, .closed?: self = .notWritable(reason: "unavailable", detail: "\(error)")
            default: self = .notWritable(reason: "failed", detail: "\(error)")
            }
        }
    }

    private struct State {
        /// The last answer and when it came (the clock's monotonic ns).
        var last: (health: Health, at: UInt64)?
        /// Callers waiting for the probe that runs; nil when none runs.
        var waiting: [@Sendable (Health) -> Void]?
    }

    private let storage: any Storage
    private let clock: any Clock
    private let maxAgeNanoseconds: UInt64
    private let state = Mutex(State())

    /// - Parameters:
    ///   - storage: where the probe writes.
    ///   - clock: when an answer gets too old (monotonic time).
    ///   - maxAgeMilliseconds: how long an answer is reused; default 1 000 ms.
    init(storage: any Storage, clock: any Clock = SystemClock(), maxAgeMilliseconds: UInt64 = 1_000) {
        self.storage = storage
        self.clock = clock
        self.maxAgeNanoseconds = maxAgeMilliseconds * 1_000_000
    }

    /// Calls `completion` once with the storage's health: the last answer while it is fresh,
    /// otherwise after a new probe write.
    func check(_ completion: @escaping @Sendable (Health) -> Void) {
        let now = clock.monotonicNanoseconds
        enum Next { case answer(Health), wait, probe }
        let next = state.withLock { state -> Next in
            if let last = state.last, now &- last.at < maxAgeNanoseconds { return .answer(last.health) }
            if state.waiting != nil {
                state.waiting!.append(completion)
                return .wait
            }
            state.waiting = [completion]
            return .probe
        }
        switch next {
        case .answer(let health): completion(health)
        case .wait: break
        case .probe:
            storage.probeWrite { [self] result in
                let health: Health = switch result {
                case .success: .writable
                case .failure(let error): Health(error)
                }
                let waiting = state.withLock { state -> [@Sendable (Health) -> Void] in
                    state.last = (health, clock.monotonicNanoseconds)
                    defer { state.waiting = nil }
                    return state.waiting ?? []
                }
                for waiter in waiting { waiter(health) }
            }
        }
    }
}
