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
/// The WAL's size is bounded too (RL-2): a checkpoint is asked for once half of
/// `walSizeLimitBytes` is in the WAL (or `threshold` pages, whichever is less), and
/// `journal_size_limit` trims the `-wal` file to the bound at the first commit after the WAL
/// starts over. A commit that leaves more than twice the bound in the WAL (readers kept it from
/// starting over, or a burst outran the copying) asks for a `TRUNCATE` checkpoint instead, which
/// empties the file; after one that failed (a reader held on), not again for a second, since it
/// holds the write lock while it waits. So does a write that failed for want of space
/// (`requestTruncate()`): the WAL's frames move into the database file, whose pages they mostly
/// rewrite, and the volume gets the WAL's space back. If the database file cannot grow to take
/// them either, the checkpoint fails and the next failed write asks again: once space returns,
/// the first one that runs empties the WAL, without a restart.
///
/// # Thread safety
/// Sendable: `request()` may be called from any thread (the writer's queue, in practice); the
/// connection is confined to the worker's queue.
final class Checkpointer: Sendable {
    /// WAL pages after a commit that ask for a checkpoint: SQLite's auto-checkpoint default.
    static let threshold: Int32 = 1000
    /// WAL pages after a commit at which the writer checkpoints itself (see above).
    static let writerThreshold: Int32 = 3 * threshold
    /// How long a truncating checkpoint waits for the writer and readers, ms: it holds the write
    /// lock meanwhile, so it gives up quickly and is asked again by a later commit.
    static let truncateBusyTimeoutMilliseconds: Int32 = 200

    private let worker: ConnectionWorker
    /// The connection's own busy timeout, restored after a truncating checkpoint, ms.
    private let busyTimeoutMilliseconds: Int32
    /// WAL pages not yet copied that ask for a checkpoint: `threshold`, or less for a small bound.
    private let requestPages: Int32
    /// WAL pages past which a commit asks for a truncating checkpoint.
    private let truncatePages: Int32
    /// Monotonic ns of the last truncation that failed; 0: none (the rate limit).
    private let lastFailedTruncation = Atomic<UInt64>(0)
    /// A checkpoint is queued or running; later requests until it ends are dropped.
    private let pending = Atomic<Bool>(false)
    /// The next checkpoint should truncate the WAL.
    private let truncateWanted = Atomic<Bool>(false)
    /// WAL frames the last checkpoint left copied: only frames past them count towards the next.
    private let copied = Atomic<Int32>(0)
    /// Checkpoints run since the database opened (tests).
    private let runs = Atomic<Int>(0)
    /// Truncating checkpoints that succeeded (tests, logs).
    private let truncations = Atomic<Int>(0)

    /// - Parameters:
    ///   - connection: a read-write connection to the writer's file, used only here.
    ///   - walSizeLimitBytes: WAL size past which the WAL is truncated, bytes.
    ///   - pageSize: the database's page size, bytes (a WAL frame holds one page).
    ///   - busyTimeoutMilliseconds: the connection's busy timeout, restored after a truncation.
    init(connection: SQLiteConnection, walSizeLimitBytes: Int64, pageSize: Int64, busyTimeoutMilliseconds: Int32) {
        worker = ConnectionWorker(label: "herald.storage.checkpoint", connection: connection)
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        let limitPages = Int32(clamping: max(walSizeLimitBytes / max(pageSize, 512), 1))
        requestPages = min(Self.threshold, max(limitPages / 2, 16))
        truncatePages = limitPages &* 2
    }

    /// Makes `writer`'s commits ask this checkpointer, instead of checkpointing themselves.
    /// - Important: Call before `writer` is used on another thread.
    func attach(to writer: SQLiteConnection) {
        writer.onCommit { [self] walPages in
            if walPages > truncatePages {
                let failed = lastFailedTruncation.load(ordering: .relaxed)
                if failed == 0 || DispatchTime.now().uptimeNanoseconds &- failed >= 1_000_000_000 { request(truncate: true) }
            }
            if walPages >= Self.writerThreshold { return true }
            // Fewer pages than were copied: the WAL started over since.
            var done = copied.load(ordering: .relaxed)
            if walPages < done {
                done = 0
                copied.store(0, ordering: .relaxed)
            }
            if walPages - done >= requestPages { request() }
            return false
        }
    }

    /// Queues a PASSIVE checkpoint unless one is queued or running already. Never blocks.
    func request() {
        request(truncate: false)
    }

    /// Queues a TRUNCATE checkpoint (after the one running, if any). Never blocks. For a write
    /// that failed for want of space.
    func requestTruncate() {
        request(truncate: true)
    }

    private func request(truncate: Bool) {
        if truncate { truncateWanted.store(true, ordering: .releasing) }
        guard pending.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        worker.queue.async { [self] in run() }
    }

    /// One checkpoint on the worker's queue; `pending` is true meanwhile.
    private func run() {
        do {
            let truncating = truncateWanted.exchange(false, ordering: .acquiringAndReleasing)
            // A failure (the file busy with another process's checkpoint, no space to grow the
            // database file, closed) is left to the next request.
            let result = worker.run { connection in
                guard truncating else { return try connection.checkpoint(.passive) }
                connection.setBusyTimeout(milliseconds: Self.truncateBusyTimeoutMilliseconds)
                defer { connection.setBusyTimeout(milliseconds: busyTimeoutMilliseconds) }
                return try connection.checkpoint(.truncate)
            }
            switch result {
            case .success(let result):
                copied.store(Int32(clamping: result.checkpointed), ordering: .relaxed)
                if truncating {
                    truncations.add(1, ordering: .relaxed)
                    lastFailedTruncation.store(0, ordering: .relaxed)
                }
            case .failure:
                if truncating { lastFailedTruncation.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed) }
            }
            runs.add(1, ordering: .relaxed)
            // A truncation asked for while this one ran would otherwise wait for the next request.
            if truncateWanted.load(ordering: .acquiring) { return worker.queue.async { [self] in run() } }
            pending.store(false, ordering: .releasing)
        }
    }

    /// Checkpoints run so far.
    var count: Int { runs.load(ordering: .relaxed) }

    /// Truncating checkpoints that emptied the WAL so far.
    var truncationCount: Int { truncations.load(ordering: .relaxed) }

    /// Blocks until the checkpoints requested so far have run (tests).
    /// - Important: Must not be called on the checkpointer's queue.
    func waitForRequested() {
        // A run that saw a truncation asked for meanwhile queues another, still pending.
        repeat { worker.queue.sync {} } while pending.load(ordering: .acquiring)
    }

    /// Waits for a queued checkpoint, then closes the connection.
    /// - Important: Must not be called on the checkpointer's queue.
    func close() {
        worker.close()
    }
}
