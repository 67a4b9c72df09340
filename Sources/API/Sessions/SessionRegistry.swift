import Synchronization

/// Ended sessions, in memory, so an ended session's access tokens are refused at once (DV-4)
/// without a database read per request. Loaded from the database at start; every end adds to it.
public final class SessionRegistry: Sendable {
    private let ended = Mutex<Set<String>>([])

    public init(ended: [String] = []) {
        self.ended.withLock { $0 = Set(ended) }
    }

    /// True when session `sid` was ended.
    public func isEnded(_ sid: String) -> Bool { ended.withLock { $0.contains(sid) } }

    /// Records that `sid` ended.
    public func markEnded(_ sid: String) { _ = ended.withLock { $0.insert(sid) } }
}
