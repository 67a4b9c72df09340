import Synchronization

/// The push jobs this node's API queued that its worker has not claimed yet, and the gate that
/// paces `POST /v1/notifications` by it (issue 17): when the worker is that far behind, new
/// calls wait (up to `maxWaitMilliseconds`) before they are stored, so the calls a node accepts
/// are calls whose pushes it sends, instead of a backlog that grows for as long as the load lasts
/// while the API's writes take the one writer from the worker.
///
/// The figure is an estimate kept without reading the queue: `queued` adds what a planning
/// transaction committed, `claimed` takes off the jobs a claim leased for the first time (a retry
/// or a lease taken over is not new work). A claim that found fewer due jobs than it asked for
/// has taken every due job, so it sets the figure to 0: jobs queued by recovery or another path,
/// jobs due later (`unless_acked`), and a crash's leftovers cannot hold the gate shut. The estimate
/// errs low, never high for long: a wrong figure delays calls, it never refuses or loses one.
///
/// ```swift
/// let backlog = PushBacklog(limit: 1_024)
/// backlog.queued(3)                                        // the Notifier, after planning commits
/// backlog.claimed(firstClaims: 3, drained: false)          // the worker, after a claim commits
/// if !backlog.whenRoom({ storeNext() }) { … }              // false: `storeNext` runs later
/// ```
///
/// Only for a worker that claims every job its node's API queues (SQLite: one process per
/// database). In a cluster another node's worker may claim them, and this node's figure would
/// only fall at its own claims.
///
/// # Thread safety
/// Sendable: every method may be called from any thread; callbacks run on the thread of the
/// `claimed` call that made room, outside the lock.
public final class PushBacklog: Sendable {
    /// Jobs queued and not claimed at which calls start to wait; at most this many wait for the
    /// worker when the API runs ahead of it.
    public let limit: Int
    /// The longest a batch of calls waits for room, ms of real time: past it the calls go on
    /// (a paused worker must not stop the API).
    public let maxWaitMilliseconds: Int

    private struct State {
        var depth = 0
        var waiters: [@Sendable () -> Void] = []
        /// Calls delayed since start (metrics).
        var paused = 0
    }

    private let state = Mutex(State())

    /// - Parameters:
    ///   - limit: jobs queued and not claimed past which calls wait; at least 1.
    ///   - maxWaitMilliseconds: the longest wait, ms; at least 1.
    public init(limit: Int, maxWaitMilliseconds: Int = 1_000) {
        precondition(limit > 0 && maxWaitMilliseconds > 0, "a backlog limit and a wait are positive")
        self.limit = limit
        self.maxWaitMilliseconds = maxWaitMilliseconds
    }

    /// The estimated jobs queued and not claimed.
    public var depth: Int { state.withLock { $0.depth } }

    /// Batches of calls that waited for room since start.
    public var pauses: Int { state.withLock { $0.paused } }

    /// `count` push jobs were committed to the queue.
    public func queued(_ count: Int) {
        guard count > 0 else { return }
        state.withLock { $0.depth += count }
    }

    /// A claim committed: `firstClaims` of its jobs were leased for the first time. `drained`:
    /// it leased fewer than it asked for, so no due job is left unclaimed. Runs the waiters when
    /// that makes room.
    public func claimed(firstClaims: Int, drained: Bool) {
        let ready = state.withLock { state -> [@Sendable () -> Void] in
            state.depth = drained ? 0 : max(0, state.depth - firstClaims)
            guard state.depth < limit, !state.waiters.isEmpty else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for resume in ready { resume() }
    }

    /// Whether there is room now (`depth < limit`); if not, `resume` is kept and run once a claim
    /// makes room, and the caller should also run it after `maxWaitMilliseconds` (it may run
    /// twice: make it idempotent, as `Once` does).
    /// - Returns: true when there is room: `resume` is not kept, the caller goes on.
    public func whenRoom(_ resume: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard state.depth >= limit else { return true }
            state.paused += 1
            state.waiters.append(resume)
            return false
        }
    }
}

/// A callback that runs at most once, whichever of its callers comes first.
final class Once: Sendable {
    private let ran = Atomic<Bool>(false)
    private let body: @Sendable () -> Void

    init(_ body: @escaping @Sendable () -> Void) { self.body = body }

    func run() {
        guard !ran.exchange(true, ordering: .acquiringAndReleasing) else { return }
        body()
    }
}
