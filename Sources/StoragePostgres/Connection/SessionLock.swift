import Foundation
import Synchronization

/// A thread with its own connection that holds one session-level advisory lock for the life of
/// the process (ADR 0023): while the process lives the lock is held; when it dies, however it
/// dies, the kernel closes the socket, the server ends the backend and the lock is gone, which any
/// node sees in `pg_locks`. The socket is polled, so a connection the server ended (a restart,
/// `pg_terminate_backend`) is seen at once and made again with the connector's backoff, and the
/// lock taken again.
///
/// # Thread safety
/// Sendable: the connection lives on the thread; the flags are atomic.
final class SessionLock: Sendable {
    /// The name whose key (`hashtextextended(name, seed)`) is locked.
    let name: String
    private let connector: Connector
    private let stopping = Atomic<Bool>(false)
    private let locked = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Why the first lock could not be taken, for `start` to throw.
    private let firstError = Mutex<(any Error)?>(nil)
    /// Called when a holder (this one too) took its lock: the ring of holders changed (ADR 0027).
    private let holdersChanged = Mutex<(@Sendable () -> Void)?>(nil)

    /// The key's seed: distinct from the transaction locks' (devices 7, idempotency keys 11), so
    /// one name's key is not theirs for the same text. A collision only makes a dead holder look
    /// alive (it waits its lease).
    static let seed = 13
    /// How long the thread sleeps between checks of its socket: the poll wakes at once when the
    /// server closes it, so this only bounds how long `stop` waits.
    static let pollMilliseconds: Int32 = 250
    /// Tries of the first lock before `start` gives up (a key held by a colliding name, or a
    /// transaction lock of the same key for its few milliseconds).
    static let firstTries = 20

    private init(name: String, connector: Connector) {
        self.name = name
        self.connector = connector
    }

    /// Connects, takes the lock and starts the thread that keeps it. Blocks until the lock is
    /// held. - Throws: the connection's error when PostgreSQL cannot be reached;
    /// `PostgresError.server` with SQLSTATE 55P03 when the key stays held by another session.
    static func start(name: String, connector: Connector) throws -> SessionLock {
        let lock = SessionLock(name: name, connector: connector)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { lock.run(ready: ready) }
        thread.name = "herald.postgres.session-lock"
        thread.start()
        ready.wait()
        if let error = lock.firstError.withLock({ $0 }) {
            lock.finished.wait()
            throw error
        }
        return lock
    }

    /// Calls `hook` on this lock's thread whenever a holder, on any node, takes its lock (its
    /// `NOTIFY` on `HolderWatch.channel`), this one included; replaces an earlier hook.
    func whenHoldersChange(_ hook: @escaping @Sendable () -> Void) {
        holdersChanged.withLock { $0 = hook }
    }

    /// Whether the lock is held now (false while the connection is being made again).
    var isLocked: Bool { locked.load(ordering: .acquiring) }

    /// Stops the thread and waits for it (at most one poll); closing the connection releases the lock.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }

    private func run(ready: DispatchSemaphore) {
        defer { finished.signal() }
        var connection: PostgresConnection?
        var starting = true
        var tries = 0
        while !stopping.load(ordering: .relaxed) {
            do {
                if connection == nil || connection?.isBroken == true {
                    locked.store(false, ordering: .releasing)
                    connection?.close()
                    connection = nil
                    let fresh = try connector.connect()
                    let taken: Bool = try fresh.queryOne("SELECT pg_try_advisory_lock(hashtextextended($1::text, \(Self.seed))) AS taken",
                                                         [name])?.value("taken") ?? false
                    guard taken else {
                        fresh.close()
                        tries += 1
                        if starting, tries >= Self.firstTries {
                            throw PostgresError.server(sqlState: "55P03", message: "the session lock of '\(name)' is held by another session",
                                                       constraint: nil)
                        }
                        usleep(100_000)
                        continue
                    }
                    // Names the lock a holder's for the other nodes' watchers, tells them the
                    // holders changed, and hears when they do (ADR 0027).
                    _ = try fresh.execute("SET application_name = '\(HolderWatch.applicationName)'; LISTEN \(HolderWatch.channel); "
                                          + "NOTIFY \(HolderWatch.channel)")
                    connection = fresh
                    locked.store(true, ordering: .releasing)
                    if starting {
                        starting = false
                        ready.signal()
                    }
                }
                // Also reads the server's goodbye: a closed socket throws here.
                if let heard = try connection?.notifications(waitingUpTo: Self.pollMilliseconds), !heard.isEmpty {
                    holdersChanged.withLock { $0 }?()
                }
                if connection?.isBroken == true { continue }
            } catch {
                locked.store(false, ordering: .releasing)
                connection?.close()
                connection = nil
                if starting {
                    firstError.withLock { $0 = error }
                    ready.signal()
                    return
                }
                // The connector's backoff makes the next connect wait; do not spin meanwhile.
                usleep(100_000)
            }
        }
        locked.store(false, ordering: .releasing)
        connection?.close()
    }
}
