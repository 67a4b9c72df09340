import CSQLite
import Dispatch
import Synchronization

/// Checkpoints the WAL on a connection and serial queue of its own, instead of SQLite's
/// auto-checkpoint, which runs inside the `COMMIT` that crosses the threshold: on the writer's
/// queue, with the copy into the database file and its fsyncs, while every queued write waits.
///
/// The writer's commit hook (`sqlite3_wal_hook`, which replaces the auto-checkpoint) asks for a
/// checkpoint once the WAL holds `threshold` pages not yet copied; this queue then runs a
/// `PASSIVE` one. PASSIVE
/// never waits for locks and never blocks the writer: it copies the frames no reader still needs,
/// and the writer starts the WAL over at its next transaction once all are copied. The
/// durability is the auto-checkpoint's: the same connection settings, the same fsyncs.
///
/// A writer that never pauses keeps adding frames while this queue copies, so the WAL might
/// never be all copied and restart. Past `writerThreshold` pages the writer's commit therefore
/// checkpoints itself, as the auto-checkpoint does; with this queue having copied most frames
/// already, that is short.
///
/// # Thread safety
/// Sendable: `request()` may be called from any thread (the writer's queue, in practice); the
/// connection is confined to the worker's queue.
final class Checkpointer: Sendable {
    /// WAL pages after a commit that ask for a checkpoint: SQLite's auto-checkpoint default.
    static let threshold: Int32 = 1000
    /// WAL pages after a commit at which the writer checkpoints itself (see above).
    static let writerThreshold: Int32 = 3 * threshold

    private let worker: ConnectionWorker
    /// A checkpoint is queued or running; later requests until it ends are dropped.
    private let pending = Atomic<Bool>(false)
    /// WAL frames the last checkpoint left copied: only frames past them count towards the next.
    private let copied = Atomic<Int32>(0)
    /// Checkpoints run since the database opened (tests).
    private let runs = Atomic<Int>(0)

    /// - Parameter connection: a read-write connection to the writer's file, used only here.
    init(connection: SQLiteConnection) {
        worker = ConnectionWorker(label: "herald.storage.checkpoint", connection: connection)
    }

    /// Makes `writer`'s commits ask this checkpointer, instead of checkpointing themselves.
    /// - Important: Call before `writer` is used on another thread.
    func attach(to writer: SQLiteConnection) {
        writer.onCommit { [self] walPages in
            if walPages >= Self.writerThreshold { return true }
            // Fewer pages than were copied: the WAL started over since.
            var done = copied.load(ordering: .relaxed)
            if walPages < done {
                done = 0
                copied.store(0, ordering: .relaxed)
            }
            if walPages - done >= Self.threshold { request() }
            return false
        }
    }

    /// Queues a PASSIVE checkpoint unless one is queued or running already. Never blocks.
    func request() {
        guard pending.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        worker.queue.async { [self] in
            // A failure (the file busy with another process's checkpoint, closed) is left to the
            // next commit's request.
            if case .success(let result) = worker.run({ connection in try connection.checkpoint() }) {
                copied.store(Int32(clamping: result.checkpointed), ordering: .relaxed)
            }
            runs.add(1, ordering: .relaxed)
            pending.store(false, ordering: .releasing)
        }
    }

    /// Checkpoints run so far.
    var count: Int { runs.load(ordering: .relaxed) }

    /// Waits for a queued checkpoint, then closes the connection.
    /// - Important: Must not be called on the checkpointer's queue.
    func close() {
        worker.close()
    }
}
