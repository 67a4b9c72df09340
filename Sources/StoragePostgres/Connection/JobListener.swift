import Foundation
import Synchronization

/// A thread with its own connection that `LISTEN`s on one channel and calls a handler for its
/// notifications: the queue's wake-up across nodes. Reconnects with the connector's backoff and
/// calls the handler after each reconnect, since notifications sent meanwhile are lost.
///
/// # Thread safety
/// Sendable: the connection lives on the thread; `stopping` is atomic.
final class JobListener: Sendable {
    private let connector: Connector
    private let channel: String
    private let handler: @Sendable () -> Void
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    init(connector: Connector, channel: String, handler: @escaping @Sendable () -> Void) {
        self.connector = connector
        self.channel = channel
        self.handler = handler
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "herald.postgres.listen"
        thread.start()
    }

    /// Stops the thread and waits for it (at most one poll interval).
    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }

    private func run() {
        defer { finished.signal() }
        var connection: PostgresConnection?
        var connectedBefore = false
        while !stopping.load(ordering: .relaxed) {
            do {
                if try connector.renew(&connection, setUp: { try $0.execute("LISTEN \(channel)") }) {
                    if connectedBefore { handler() }
                    connectedBefore = true
                }
                if let connection, !(try connection.notifications(waitingUpTo: 200)).isEmpty {
                    handler()
                }
            } catch {
                Connector.drop(&connection)
            }
        }
        connection?.close()
    }
}
