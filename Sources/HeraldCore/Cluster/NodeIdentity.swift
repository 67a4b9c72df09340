/// One process holding, or asking for, a node id (`HERALD_NODE_ID`, ADR 0016): who it is, for
/// the lease and for the messages that name it.
public struct NodeInstance: Sendable, Equatable {
    /// The node id: the name push jobs are leased under (`jobs.locked_by`).
    public let nodeID: String
    /// Random per process: tells apart two processes started with one `nodeID`.
    public let instanceID: String
    /// The machine's host name, for messages only (two containers may share one).
    public let host: String
    /// The process id, for messages and the liveness check.
    public let pid: Int32
    /// What identifies the process on its machine for a liveness check made there (boot, pid
    /// namespace, pid, start time; see the executable's `LocalProcess`); empty when unknown.
    public let processKey: String

    public init(nodeID: String, instanceID: String, host: String, pid: Int32, processKey: String) {
        self.nodeID = nodeID
        self.instanceID = instanceID
        self.host = host
        self.pid = pid
        self.processKey = processKey
    }

    /// "host h, pid p, instance i": how messages name it.
    public var described: String { "host \(host), pid \(pid), instance \(instanceID)" }
}

/// The instance holding a node id, and how fresh its hold is.
public struct NodeHolder: Sendable, Equatable {
    public let instance: NodeInstance
    /// Milliseconds since its last heartbeat, by the store's clock (never negative).
    public let heartbeatAgeMilliseconds: Int64

    public init(instance: NodeInstance, heartbeatAgeMilliseconds: Int64) {
        self.instance = instance
        self.heartbeatAgeMilliseconds = max(0, heartbeatAgeMilliseconds)
    }

    /// "host h, pid p, instance i, last heartbeat 1.2 s ago".
    public var described: String {
        let tenths = heartbeatAgeMilliseconds / 100
        return "\(instance.described), last heartbeat \(tenths / 10).\(tenths % 10) s ago"
    }
}

/// What a claim of a node id found.
public enum NodeClaimOutcome: Sendable, Equatable {
    /// The id is this instance's now; its heartbeat is the store's now.
    case claimed
    /// Another instance holds it and its heartbeat is within the window.
    case held(by: NodeHolder)
}

/// Where node ids are held (ADR 0016): one record per id, naming the instance holding it and
/// when it last said it was alive. PostgreSQL implements it (`PostgresNodeIdentityStore`); a
/// single-process engine (SQLite) needs none.
///
/// # Thread safety
/// Sendable; each call blocks its caller until the store answers (bounded by the adapter's
/// timeouts), so call it off the event loops.
public protocol NodeIdentityStore: Sendable {
    /// Takes `instance.nodeID` for `instance`, or keeps it and renews its heartbeat, in one atomic
    /// step, when the id is not held, is held by `instance` already, is held by an instance whose
    /// last heartbeat is `staleAfterMilliseconds` or more old (the store's own clock, so that the
    /// holders' clocks need not agree), or is held by the instance `replacing` (one judged dead).
    /// - Returns: `.claimed`, or `.held(by:)` naming the live holder.
    /// - Throws: `StorageError` when the store cannot answer (`.unavailable`, `.busy`, …).
    func claim(_ instance: NodeInstance, staleAfterMilliseconds: Int64, replacing instanceID: String?) throws(StorageError) -> NodeClaimOutcome

    /// Gives the id up when `instance` holds it; does nothing otherwise.
    /// - Throws: `StorageError` when the store cannot answer.
    func release(_ instance: NodeInstance) throws(StorageError)
}

/// Whether a holder's process is alive, as far as this process can tell.
public enum ProcessLiveness: Sendable, Equatable {
    case alive
    /// Its process is gone: its hold may be taken at once.
    case dead
    /// Not on this machine (or not in this pid namespace, or `/proc` unreadable): only its
    /// heartbeat's age can tell.
    case unknown
}

/// Tells whether the process of a holder is alive; the executable's looks in `/proc`.
public protocol ProcessLivenessProbe: Sendable {
    func liveness(of holder: NodeInstance) -> ProcessLiveness
}

/// A probe that knows nothing: every holder waits out its window.
public struct NoProcessLiveness: ProcessLivenessProbe {
    public init() {}
    public func liveness(of holder: NodeInstance) -> ProcessLiveness { .unknown }
}
