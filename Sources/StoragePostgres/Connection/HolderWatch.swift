import Foundation
import Synchronization

/// A thread with its own connection that learns at once when another node's plan holder
/// (`SessionLock`) dies (ADR 0027): it waits, in the server, for a **shared** lock on the next
/// holder's key after its own (a ring), which is granted only when that holder's backend has ended
/// and its exclusive lock with it. Then it releases the lock at once and calls `onGone`.
///
/// # Thread safety
/// Sendable: the connection lives on the thread; the flag is atomic.
final class HolderWatch: Sendable {
    /// `application_name` of the holders' connections: what tells their session locks from
    /// transaction locks in `pg_locks`.
    static let applicationName = "herald plan holder"
    /// How long one wait lasts before it is asked again (`lock_timeout`): bounds how long a stopped
    /// watcher's thread lives on.
    static let waitMilliseconds = 2_000
    /// How often the ring is read again (joins and leaves), besides after each death.
    static let refreshNanoseconds: UInt64 = 30_000_000_000

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

    /// Asks the thread to end after its current wait (at most `waitMilliseconds`); does not wait.
    func stop() {
        stopping.store(true, ordering: .relaxed)
    }

    /// The key to watch: the smallest of `keys` above `own`, else the smallest (the ring wraps);
    /// nil when `own` is the only one.
    static func next(after own: Int64, in keys: [Int64]) -> Int64? {
        let others = keys.filter { $0 != own }
        return others.filter { $0 > own }.min() ?? others.min()
    }

    private func run() {
        var connection: PostgresConnection?
        var own: Int64?
        var target: Int64?
        var readAt: UInt64 = 0
        while !stopping.load(ordering: .relaxed) {
            do {
                if try connector.renew(&connection, setUp: { fresh in
                    try fresh.execute("SET lock_timeout = \(Self.waitMilliseconds)")
                    own = try fresh.queryOne("SELECT hashtextextended($1::text, \(SessionLock.seed)) AS key", [name])?.value("key")
                }) {
                    target = nil
                }
                guard let connection, let own else { continue }
                let now = DispatchTime.now().uptimeNanoseconds
                if target == nil || now &- readAt >= Self.refreshNanoseconds {
                    let keys: [Int64] = try connection.query(Self.holdersSQL, [Self.applicationName]).map { try $0.value("key") }
                    target = Self.next(after: own, in: keys)
                    readAt = now
                }
                guard let watched = target else {
                    // Alone: look again after a wait's time (also reads the server's goodbye).
                    _ = try connection.notifications(waitingUpTo: Int32(Self.waitMilliseconds))
                    continue
                }
                do {
                    _ = try connection.query("SELECT pg_advisory_lock_shared($1::bigint)", [watched])
                } catch PostgresError.server(let state, _, _) where state == "55P03" {
                    continue  // still held: its holder lives
                }
                _ = try connection.query("SELECT pg_advisory_unlock_shared($1::bigint)", [watched])
                target = nil
                onGone()
            } catch {
                Connector.drop(&connection)
            }
        }
        connection?.close()
    }
}
