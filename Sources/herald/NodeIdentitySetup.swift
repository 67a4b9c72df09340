import Glibc
import HeraldCore
import Realtime
import StoragePostgres

/// The node id's lease (ADR 0016), wired here only: on PostgreSQL with `HERALD_NODE_ID` set.
enum NodeIdentitySetup {
    /// The exit status of a start refused because another live instance holds the id
    /// (docs/operations.md): distinct from a setting refused (2).
    static let heldExitStatus: Int32 = 3

    /// Claims `settings.nodeID` for this process. Blocks until PostgreSQL answers (its short
    /// timeouts bound that).
    /// - Returns: the lease, held, or nil when none is needed: SQLite (one process per database)
    ///   or no `HERALD_NODE_ID` (a name unique per process cannot be shared).
    /// - Throws: `NodeIdentityError.held` when another live instance holds it; `.unavailable`
    ///   when PostgreSQL did not answer.
    static func claim(_ settings: Settings, postgres: PostgresStorage?) throws(NodeIdentityError) -> NodeIdentityLease? {
        guard let postgres, let nodeID = settings.nodeID else { return nil }
        let local = LocalProcess()
        let instance = NodeInstance(nodeID: nodeID, instanceID: String(UInt64.random(in: 1...UInt64.max), radix: 16), host: LocalProcess.hostName,
                                    pid: getpid(), processKey: local.key)
        let lease = NodeIdentityLease(store: PostgresNodeIdentityStore(configuration: postgres.configuration), instance: instance,
                                      configuration: .init(staleAfterMilliseconds: Int64(settings.nodeLeaseSeconds) * 1_000),
                                      liveness: local, log: PushSetup.log)
        try lease.acquire()
        Log.info("node id claimed", ["node_id": nodeID, "instance": instance.instanceID,
                                     "stale_after_seconds": String(settings.nodeLeaseSeconds)])
        return lease
    }
}
