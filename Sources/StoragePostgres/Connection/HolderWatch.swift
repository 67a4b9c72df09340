import Foundation
import Synchronization

/// A thread with its own connection that learns at once when another node's plan holder
/// (`SessionLock`) dies (ADR 0027): it waits, in the server, for a **shared** lock on the next
/// holder's key after its own (a ring), which is granted only when that holder's backend has ended
/// and its exclusive lock with it. Then it releases the lock at once, calls `onGone`, and reads the
/// ring again. The wait has no timeout, so it writes nothing to the server's log while the
/// holder lives; when the holders change (a holder took its lock and said so on `channel`, heard
/// by this process's `SessionLock`) the ring is read again on a connection of the moment, and
/// when the neighbour is another the waiting connection is dropped and the wait made anew
/// (`client_connection_check_interval` ends the dropped backend's wait within a second).
///
/// # Thread safety
/// Sendable: the connection lives on the thread; the flags are atomic.
final class HolderWatch: Sendable {
    /// `application_name` of the holders' connections: what tells their session locks from
    /// transaction locks in `pg_locks`.
    static let applicationName = "herald plan holder"
    /// The channel a holder `NOTIFY`s once it holds its lock.
    static let channel = "herald_plan_holders"
    /// How long the thread waits for the answer before it looks at its flags again: bounds
    /// `stop` and how late a change of the ring is seen.
    static let pollMilliseconds: Int32 = 250

    /// The holders' keys in this database: the session locks of the holders' connections.
    static let holdersSQL = """
        SELECT DISTINCT (l.classid::bigint << 32) | l.objid::bigint AS key FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted AND a.application_name = $1::text
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
        """

    private let name: String
    private let connector: Connector
    private let onGone: @Sendable () -> Void
    private let stopping = Atomic<Bool>(false)
    /// Set when the holders changed: the ring is read again.
    private let changed = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    private init(name: String, connector: Connector, onGone: @escaping @Sendable () -> Void) {
        self.name = name
        self.connector = connector
        self.onGone = onGone
    }

    /// Starts watching for the holder after `name`'s. Returns at once; a database that cannot be
    /// reached is tried again with the connector's backoff.
    /// - Parameters:
    ///   - name: this process's holder name (`PostgresStorage.holdPlans()`).
    ///   - onGone: called on the watcher's thread after a watched holder died; keep it short.
    static func start(name: String, connector: Connector, onGone: @escaping @Sendable () -> Void) -> HolderWatch {
        let watch = HolderWatch(name: name, connector: connector, onGone: onGone)
        let thread = Thread { watch.run() }
        thread.name = "herald.postgres.holder-watch"
        thread.start()
        return watch
    }

    /// The holders changed (a holder took its lock): the ring is read again.
    func holdersChanged() {
        changed.store(true, ordering: .releasing)
    }

    /// Stops the thread and waits for it (at most one poll).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }

    /// The key to watch: the smallest of `keys` above `own`, else the smallest (the ring wraps);
    /// nil when `own` is the only one.
    static func next(after own: Int64, in keys: [Int64]) -> Int64? {
        let others = keys.filter { $0 != own }
        return others.filter { $0 > own }.min() ?? others.min()
    }

    /// The holders' keys, read on `connection`.
    private static func ring(_ connection: PostgresConnection) throws -> [Int64] {
        try connection.query(holdersSQL, [applicationName]).map { try $0.value("key") }
    }

    private func run() {
        defer { finished.signal() }
        var connection: PostgresConnection?
        var own: Int64 = 0
        // The key whose shared lock is asked for, its request sent and not answered yet.
        var waitingFor: Int64?
        while !stopping.load(ordering: .relaxed) {
            do {
                if try connector.renew(&connection, setUp: { fresh in
                    // The wait lasts as long as the holder lives; a dropped client ends it (PostgreSQL 14+).
                    _ = try fresh.execute("SET lock_timeout = 0; SET statement_timeout = 0")
                    _ = try? fresh.execute("SET client_connection_check_interval = 1000")
                    own = try fresh.queryOne("SELECT hashtextextended($1::text, \(SessionLock.seed)) AS key", [name])?.value("key") ?? 0
                }) {
                    waitingFor = nil
                    changed.store(true, ordering: .releasing)
                }
                guard let live = connection else { continue }
                if let watched = waitingFor {
                    if try live.pendingRows(waitingUpTo: Self.pollMilliseconds) != nil {
                        // Granted: the holder's backend ended. Released before anyone is told, so
                        // recovery's holder-gone test does not see this lock as the holder's.
                        waitingFor = nil
                        _ = try live.query("SELECT pg_advisory_unlock_shared($1::bigint)", [watched])
                        changed.store(true, ordering: .releasing)
                        onGone()
                    } else if changed.exchange(false, ordering: .acquiringAndReleasing) {
                        // A holder joined: the ring is read on a connection of the moment, and
                        // the wait given up (its connection dropped: its backend ends the
                        // request) only when the neighbour is another now.
                        let check = try connector.connect()
                        defer { check.close() }
                        if Self.next(after: own, in: try Self.ring(check)) != watched {
                            Connector.drop(&connection)
                            waitingFor = nil
                            changed.store(true, ordering: .releasing)
                        }
                    }
                    continue
                }
                guard changed.exchange(false, ordering: .acquiringAndReleasing) else {
                    // Alone: wait for a holder to join (also reads the server's goodbye).
                    _ = try live.notifications(waitingUpTo: Self.pollMilliseconds)
                    continue
                }
                if let next = Self.next(after: own, in: try Self.ring(live)) {
                    try live.start("SELECT pg_advisory_lock_shared(\(next))")
                    waitingFor = next
                }
            } catch {
                Connector.drop(&connection)
                waitingFor = nil
            }
        }
        connection?.close()
    }
}
