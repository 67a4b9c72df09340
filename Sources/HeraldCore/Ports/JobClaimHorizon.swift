import Synchronization

/// Issue 17 (choke13): a time before which no job of one kind can be due, kept by a storage
/// adapter whose writes all go through this process's one writer (SQLite), so that the delivery
/// worker can leave out the claim it would make after every send when that claim can find
/// nothing. With every push leased at insert (ADR 0007), that claim found nothing on nearly
/// every send and cost the serial writer ~5k instructions a notification.
///
/// The bound only ever errs early. A claim of `kind` that leased fewer jobs than it asked for
/// took every job due at its `now`; it sets the bound to the earliest time any job of `kind` left
/// becomes due (a queued job's `run_at`, a leased one's lease end: `drained(nextDueAt:)`). Every
/// later write that may make a job due earlier lowers it (`noteDue(at:)`: a job queued, retried,
/// released or revived, a lease taken at insert); a claim that may have left jobs due, or whose
/// write did not commit, drops it (`forget()`). A caller that finds the bound unknown or passed
/// claims as it would without one.
///
/// What it cannot see: a write by another process on the same file (`herald jobs retry` beside a
/// running server). The worker's poll (`DeliveryWorker.Configuration.pollMilliseconds`) claims
/// whatever the bound says, so such a job waits at most one poll, as it does on an idle server.
///
/// # Thread safety
/// Sendable: one atomic. The adapter calls `noteDue` and `drained` inside its write units (on
/// its writer, in the order they run); the worker reads `isQuiet` and calls `forget` from its queue.
public final class JobClaimHorizon: Sendable {
    /// The job kind whose claims set the bound (`DeliveryJobPayload.kind`).
    public let kind: String
    /// Unix ms before which no job of `kind` is due; `Int64.min`: not known.
    private let quietUntil = Atomic<Int64>(.min)

    /// - Parameter kind: the job kind whose claims set the bound; every other kind's claims leave it.
    public init(kind: String) {
        self.kind = kind
    }

    /// Whether a claim of `kind` at `now` (unix ms) can be left out: it would find no job due.
    public func isQuiet(at now: Int64) -> Bool {
        now < quietUntil.load(ordering: .acquiring)
    }

    /// A write may make a job due at `dueAt` (unix ms): the bound comes down to it. One atomic load
    /// when it is not earlier. Called inside the write, before its commit (a write that rolls
    /// back leaves the bound lower than it needs to be: one claim more).
    public func noteDue(at dueAt: Int64) {
        var current = quietUntil.load(ordering: .relaxed)
        while dueAt < current {
            let (exchanged, original) = quietUntil.compareExchange(expected: current, desired: dueAt, ordering: .acquiringAndReleasing)
            if exchanged { return }
            current = original
        }
    }

    /// A claim of `kind` took every job due at its time; of the jobs left, none is due before
    /// `nextDueAt` (unix ms; `Int64.max`: none left). Called inside the claim's write, after its
    /// leases; its caller `forget`s if that write does not commit.
    public func drained(nextDueAt: Int64) {
        quietUntil.store(nextDueAt, ordering: .releasing)
    }

    /// The bound is not known (a claim may have left due jobs, or its write rolled back): the next
    /// claim is made.
    public func forget() {
        quietUntil.store(.min, ordering: .releasing)
    }

    /// The bound now, unix ms (`Int64.min`: not known); tests.
    public var quietUntilMilliseconds: Int64 { quietUntil.load(ordering: .acquiring) }
}
