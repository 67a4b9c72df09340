import Foundation
import Synchronization

/// Makes connections for every worker of one storage, with one reconnect backoff for all: after
/// a failed connect, connects wait `delay` (doubling up to the configured bound) and callers fail
/// at once with `.connect` meanwhile, so a PostgreSQL outage answers 503 quickly instead of
/// piling up callers behind connect timeouts.
///
/// # Thread safety
/// Sendable: the backoff state is behind a `Mutex`; connections themselves are not shared.
final class Connector: Sendable {
    let configuration: PostgresConfiguration
    private let backoff: Mutex<(notBefore: UInt64, delayMilliseconds: Int64)>

    init(configuration: PostgresConfiguration) {
        self.configuration = configuration
        self.backoff = Mutex((0, configuration.initialBackoffMilliseconds))
    }

    /// A new connection. - Throws: `.connect` when it fails or while the backoff lasts.
    func connect() throws -> PostgresConnection {
        let now = DispatchTime.now().uptimeNanoseconds
        let wait = backoff.withLock { state -> UInt64 in state.notBefore > now ? state.notBefore - now : 0 }
        if wait > 0 {
            throw PostgresError.connect(message: "\(configuration.redactedURL) unreachable; next connect in \(wait / 1_000_000) ms")
        }
        do {
            let connection = try PostgresConnection(conninfo: configuration.connectionString, sessionSetup: configuration.sessionSetup,
                                                statementDeadlineMilliseconds: configuration.clientDeadlineMilliseconds)
            backoff.withLock { $0 = (0, configuration.initialBackoffMilliseconds) }
            return connection
        } catch {
            let maximum = configuration.maxBackoffMilliseconds
            backoff.withLock { state in
                state.notBefore = DispatchTime.now().uptimeNanoseconds + UInt64(state.delayMilliseconds) * 1_000_000
                state.delayMilliseconds = min(state.delayMilliseconds * 2, maximum)
            }
            throw error
        }
    }
}

extension Connector {
    /// For a thread that keeps a connection of its own (`JobListener`, `HolderWatch`): makes
    /// `connection` again, with `setUp` run on the new one, when there is none or it broke.
    /// - Returns: whether it was made now. - Throws: the connect's or `setUp`'s error (nothing kept).
    func renew(_ connection: inout PostgresConnection?, setUp: (PostgresConnection) throws -> Void) throws -> Bool {
        if let current = connection, !current.isBroken { return false }
        connection?.close()
        connection = nil
        let fresh = try connect()
        do {
            try setUp(fresh)
        } catch {
            fresh.close()
            throw error
        }
        connection = fresh
        return true
    }

    /// After a failure of such a thread's connection: closes and drops it, and pauses the thread
    /// briefly (the connector's backoff makes the next connect wait; this keeps it from spinning).
    static func drop(_ connection: inout PostgresConnection?) {
        connection?.close()
        connection = nil
        usleep(100_000)
    }
}

/// The connection of one worker: made on first use, dropped when it breaks, made again (after
/// the connector's backoff) by the next call. Confined to its worker's queue.
final class ConnectionSlot {
    let connector: Connector
    private var current: PostgresConnection?

    init(connector: Connector) {
        self.connector = connector
    }

    /// The live connection, connecting if there is none. - Throws: `.connect`.
    func connection() throws -> PostgresConnection {
        if let current, !current.isBroken { return current }
        current?.close()
        current = nil
        let connection = try connector.connect()
        current = connection
        return connection
    }

    /// Closes the connection (broken, or the storage closes).
    func drop() {
        current?.close()
        current = nil
    }

    /// Whether a connection is open now (it may still turn out broken on its next call).
    var isConnected: Bool { current != nil }
}

/// A serial queue and the connection slot its blocks use: the only way `PostgresStorage` runs SQL.
///
/// # Thread safety
/// `slot` and `closedOnQueue` are touched only by blocks on `queue`; hence `@unchecked Sendable`.
final class ConnectionWorker: @unchecked Sendable {
    let queue: DispatchQueue
    private let slot: ConnectionSlot
    private let closed = Mutex(false)
    /// Set on `queue` by `close()`: a job queued behind the close is rejected, not run.
    private var closedOnQueue = false

    init(label: String, connector: Connector) {
        queue = DispatchQueue(label: label)
        slot = ConnectionSlot(connector: connector)
    }

    /// Runs `job` on the queue with the slot, after the jobs submitted before it; after `close()`
    /// it runs `rejected` instead (on the caller's thread).
    func submit(_ job: @escaping @Sendable (ConnectionSlot) -> Void, rejected: @escaping @Sendable () -> Void) {
        if closed.withLock({ $0 }) { rejected(); return }
        queue.async { [self] in
            if closedOnQueue { rejected() } else { job(slot) }
        }
    }

    /// Waits for the submitted jobs, then closes the connection. Not from the queue itself.
    func close() {
        closed.withLock { $0 = true }
        queue.sync {
            closedOnQueue = true
            slot.drop()
        }
    }
}
