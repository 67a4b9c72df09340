import Dispatch
import HeraldCore
import Synchronization

/// `NodeIdentityStore` on PostgreSQL (ADR 0016): one `cluster_nodes` row per node id, its
/// heartbeat in the server's clock (`clock_timestamp()`), so that claimers on machines whose
/// clocks disagree still judge a holder's staleness alike.
///
/// It has a connection of its own, with short timeouts, on a queue of its own: a heartbeat never
/// waits behind the storage's writer, and a stalled server fails a heartbeat within a few seconds
/// instead of the storage's 32 s.
///
/// # Thread safety
/// Sendable: calls from any thread run one at a time on the store's queue; the caller waits.
public final class PostgresNodeIdentityStore: NodeIdentityStore {
    private let worker: ConnectionWorker

    /// - Parameter configuration: the storage's; its timeouts are shortened here (2 s a
    ///   statement on the server, 3 s without an answer, 3 s to connect unless the URL says).
    public init(configuration: PostgresConfiguration) {
        var bounded = configuration
        bounded.statementTimeoutMilliseconds = 2_000
        bounded.lockTimeoutMilliseconds = 2_000
        bounded.clientDeadlineMilliseconds = 3_000
        bounded.connectTimeoutSeconds = 3
        worker = ConnectionWorker(label: "herald.postgres.node-identity", connector: Connector(configuration: bounded))
    }

    public func claim(_ instance: NodeInstance, staleAfterMilliseconds: Int64, replacing instanceID: String?) throws(StorageError) -> NodeClaimOutcome {
        try run { connection in
            // Rarely more than once: only when the holder found by the upsert gave the id up
            // before it could be read.
            for _ in 0..<3 {
                let taken = try connection.queryOne(Self.claimSQL, [instance.nodeID, instance.instanceID, instance.host, Int(instance.pid),
                                                                    instance.processKey, staleAfterMilliseconds, instanceID])
                if taken != nil { return .claimed }
                guard let row = try connection.queryOne(Self.holderSQL, [instance.nodeID]) else { continue }
                let holder = NodeInstance(nodeID: instance.nodeID, instanceID: try row.value("instance_id"), host: try row.value("host"),
                                          pid: Int32(truncatingIfNeeded: try row.value("pid", as: Int.self)),
                                          processKey: try row.value("process_key"))
                return .held(by: NodeHolder(instance: holder, heartbeatAgeMilliseconds: try row.value("age_ms")))
            }
            throw PostgresError.server(sqlState: "55000", message: "node id \(instance.nodeID) changed hands three times during one claim", constraint: nil)
        }
    }

    public func release(_ instance: NodeInstance) throws(StorageError) {
        try run { connection in
            _ = try connection.run("DELETE FROM cluster_nodes WHERE node_id = $1::text AND instance_id = $2::text",
                                   [instance.nodeID, instance.instanceID])
        }
    }

    /// Waits for a call in progress, then closes the connection; later calls fail with `.closed`.
    public func close() {
        worker.close()
    }

    // MARK: Internals

    /// The server's now in unix ms.
    private static let now = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"

    /// Takes the row when absent, this instance's, stale, or the replaced instance's; a row comes
    /// back only then. Concurrent claims are serialised on the key: one wins, the others find it held.
    static let claimSQL = """
        INSERT INTO cluster_nodes AS held (node_id, instance_id, host, pid, process_key, claimed_at, heartbeat_at)
        VALUES ($1::text, $2::text, $3::text, $4::integer, $5::text, \(now), \(now))
        ON CONFLICT (node_id) DO UPDATE SET
            instance_id = excluded.instance_id, host = excluded.host, pid = excluded.pid, process_key = excluded.process_key,
            claimed_at = CASE WHEN held.instance_id = excluded.instance_id THEN held.claimed_at ELSE excluded.claimed_at END,
            heartbeat_at = excluded.heartbeat_at
        WHERE held.instance_id = excluded.instance_id
           OR held.heartbeat_at <= excluded.heartbeat_at - $6::bigint
           OR held.instance_id = $7::text
        RETURNING node_id
        """

    static let holderSQL = """
        SELECT instance_id, host, pid, process_key, \(now) - heartbeat_at AS age_ms FROM cluster_nodes WHERE node_id = $1::text
        """

    /// Runs `body` on the store's connection and waits for it; a broken connection is dropped
    /// (the next call connects again).
    private func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) throws(StorageError) -> T {
        let result = Mutex<Result<T, StorageError>>(.failure(.closed))
        let done = DispatchSemaphore(value: 0)
        worker.submit({ slot in
            defer { done.signal() }
            do {
                let connection = try slot.connection()
                do {
                    let value = try body(connection)
                    result.withLock { $0 = .success(value) }
                } catch {
                    if connection.isBroken { slot.drop() }
                    throw error
                }
            } catch {
                let mapped = (StorageError.mapped(error) as? StorageError) ?? .failed(message: "\(error)")
                result.withLock { $0 = .failure(mapped) }
            }
        }, rejected: { done.signal() })
        done.wait()
        return try result.withLock { $0 }.get()
    }
}
