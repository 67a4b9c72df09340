import Dispatch
import Foundation
import Synchronization

/// Drains the durable `push.deliver` queue (PU-5): claims due jobs with a lease, sends each
/// through `PushProviders` (the adapter of the device's provider), and records the outcome — done, retried with backoff and jitter,
/// dead-lettered, or the device deleted when the provider says its token is dead (DV-6).
/// A crash while jobs are leased loses nothing: their leases expire and they are due again.
///
/// An outcome whose transaction fails for a reason that passes (the disk full, the database
/// busy, read-only or unavailable; RL-2) is not dropped: the push was sent, so sending it again
/// would deliver it twice. The worker holds the outcome, its job still leased and its slot still
/// taken, and writes it again with backoff (`Configuration.outcomeRetry…`, on the injected clock)
/// at each poll or round until it commits. If the job's lease runs out meanwhile and a claim of
/// this worker takes the job again, the worker keeps that new lease for the held outcome and does
/// not send the job again.
///
/// Every time it stores or compares (claims, leases, `expires_at`, a retry's `run_at`, the
/// delivery record) comes from the injected `Clock`, so the worker can be driven without its
/// timer: `runDue()` runs one round at the clock's now and returns once every job of the round
/// has its outcome recorded. Production calls `start()`, which polls every `pollMilliseconds` of
/// real time and whenever `wake()` is called.
///
/// ```swift
/// let worker = DeliveryWorker(storage: storage, providers: providers, clock: clock)
/// try await worker.runDue()                    // claims what is due now, sends, records
/// clock.advance(byMilliseconds: 1_000)
/// try await worker.runDue()                    // the retry, once its run_at has come
/// ```
///
/// # Thread safety
/// Every method may be called from any thread except `stop(deadline:)`, which blocks and must not
/// be called from a storage or provider callback. Its bookkeeping (`state`, `timer`, `inFlight`,
/// `writes`, `claimWanted`, `drained`, `waitingHanded`) is confined to `queue`; `sending` and
/// `backlogged` are atomic, `handed` locked (jobs leased at insert arrive from the storage's thread).
public final class DeliveryWorker: @unchecked Sendable {
    /// Limits of the worker, with safe defaults.
    public struct Configuration: Sendable {
        /// Jobs a `runDue` round claims by default. While polling, a claim takes every free slot
        /// (`maxInFlight` less the jobs being sent), and each ended send asks for one.
        public var batchSize = 64
        /// Most jobs being sent at once. A job whose send ended holds no slot while its outcome
        /// waits for the writer (it still counts for `stop`'s drain).
        public var maxInFlight = 256
        /// How long a claimed job is held before another worker may take it, ms. Its push must be
        /// sent and answered by the lease's end less a margin (`SendByDeadline`), so its outcome
        /// is recorded under the lease.
        public var leaseMilliseconds: Int64 = 60_000
        /// How often the queue is polled when nobody wakes the worker, ms of real time (the
        /// timer is the one thing not on the injected clock: it only decides when to look).
        public var pollMilliseconds = 250
        /// Backoff, `Retry-After` floor and attempts before a dead letter (PU-5).
        public var retry = RetryPolicy()
        /// First wait before writing again an outcome whose write failed for a passing storage
        /// fault, ms; doubled at each further failure up to `outcomeRetryCapMilliseconds`.
        public var outcomeRetryBaseMilliseconds: Int64 = 250
        /// Longest wait between two writes of a held outcome, ms.
        public var outcomeRetryCapMilliseconds: Int64 = 30_000
        /// How long after an accepted send a provider's receipt is asked for (Expo: about 15
        /// minutes, PU-8a), ms of the clock. Tests shorten it.
        public var receiptDelayMilliseconds: Int64 = 15 * 60_000
        /// How long after the send a receipt can still be asked for (Expo keeps them about 24 h);
        /// a receipt still missing then is given up (the job ends `receipt_unavailable`), ms.
        public var receiptWindowMilliseconds: Int64 = 24 * 3_600_000
        /// When a receipt is not ready yet, how long until it is asked for again, ms.
        public var receiptRecheckMilliseconds: Int64 = 5 * 60_000
        /// `push.receipt` jobs claimed per round (one provider request per 300 ids at most).
        public var receiptBatchSize = 300
        /// How often the worker looks for due receipt jobs, ms of real time (only when a
        /// configured provider checks receipts).
        public var receiptPollMilliseconds = 1_000
        /// Most times a receipt may send a push again (Expo `MessageRateExceeded`) before it is
        /// dead-lettered.
        public var maximumResends = 5
        /// Jobs leased at insert (ADR 0007) that may wait in memory for a slot beyond
        /// `maxInFlight`: a `POST /v1/push` of 1,000 devices is then leased whole instead of
        /// mostly queued for claims. One that waits past half its lease is left to a claim.
        public var leasedAtInsertBacklog = 1_024
        public init() {}
    }

    /// Counts of outcomes since start (metrics, tests).
    public struct Counters: Sendable, Equatable {
        public var delivered = 0, retried = 0, dead = 0, devicesDeleted = 0
    }

    /// What one `runDue` round did.
    public struct Round: Sendable, Equatable {
        /// Jobs the round claimed: due (or with a lease run out) at the clock's now.
        public var claimed = 0
        /// Of those, the outcomes that were not recorded: the job's lease ran out and another
        /// claim took it over (fencing: that claim records its own outcome), or the outcome's
        /// transaction failed for a lasting reason (the job comes back when its lease passes).
        public var unrecorded = 0
        /// Of those, the outcomes whose write failed for a passing storage fault: held and written
        /// again by later rounds, never sent again. Also counts jobs claimed again while their
        /// outcome was held (their lease had run out): not sent, their outcome kept.
        public var held = 0
        /// Held outcomes of earlier rounds this round wrote (before claiming).
        public var heldWritten = 0

        public init(claimed: Int = 0, unrecorded: Int = 0, held: Int = 0, heldWritten: Int = 0) {
            self.claimed = claimed
            self.unrecorded = unrecorded
            self.held = held
            self.heldWritten = heldWritten
        }
    }

    /// Where the worker is in its life. `idle`: made, driven only by `runDue`; `polling`: after
    /// `start()`; `stopped`: after `stop(deadline:)`, claims nothing more.
    private enum State { case idle, polling, stopped }

    /// What became of one job's outcome.
    private enum Recorded: Sendable {
        case recorded
        /// Not written, and not to be: the lease was lost, or a lasting failure.
        case notRecorded
        /// Not written yet: held, to be written again (its slot stays taken).
        case held
    }

    /// One job's outcome transaction, everything it needs to run again.
    private struct OutcomeWrite: Sendable {
        let job: JobRecord
        /// The claim the write is fenced with: the job's, or a later claim's that took it back.
        var lease: JobLease
        let outcome: PushOutcome
        let device: DeviceRecord?
        let origin: DeliveryJobPayload.Origin?
        /// The receipt check to queue with a delivered outcome (providers with receipts, PU-8a).
        let receipt: PushReceiptJobPayload?
        /// The jitter draw for a retry's backoff, drawn once so every write decides alike.
        let random: Double
    }

    /// An outcome whose write failed for a passing storage fault.
    private struct HeldOutcome {
        var write: OutcomeWrite
        /// Failed writes so far.
        var failures: Int
        /// Unix ms (the worker's clock) of the next write.
        var nextAttemptAt: Int64
        /// A write of it is in the writer now.
        var writing = false
    }

    let storage: any Storage
    let providers: PushProviders
    private let presence: (any PresenceStore)?
    let clock: any Clock
    let jitter: @Sendable () -> Double
    let configuration: Configuration
    let queue = DispatchQueue(label: "herald.delivery")
    let counters = Mutex(Counters())
    /// PU-5a: stops device deletion when one provider rejects nearly every token alike.
    public let massDeletionGuard: MassDeletionGuard
    /// Told of every claim, so the API's calls wait while this worker is far behind (issue 17);
    /// `/metrics` shows it.
    public let backlog: PushBacklog?
    let log: Logger
    // Confined to `queue`.
    private var state = State.idle
    // Made by `start()`: a dispatch source must not be released without ever having run.
    private var timer: DispatchSourceTimer?
    private var inFlight = 0
    /// A poll asked for a claim that no write has made yet: the worker's next write makes it.
    private var claimWanted = false
    /// Claimed jobs whose send has not ended (their outcome is not known yet): what
    /// `maxInFlight` bounds. Read by the worker's write when it claims, so streams freed while
    /// that write waited for the writer are claimed for too.
    private let sending = Atomic<Int>(0)
    /// Polling (between `start()` and `stop(deadline:)`): jobs may be leased at insert to this
    /// worker (ADR 0007). Read in the API's write units, off `queue`.
    private let handoffOpen = Atomic<Bool>(false)
    /// Jobs leased at insert whose unit committed, waiting for `queue` to send them.
    private let handed = Mutex<[Handed]>([])
    /// Jobs leased at insert without a slot (taken against `leasedAtInsertBacklog`), committed or
    /// not yet: what `waitingHanded` holds past `waitingHead`, plus those still in their unit.
    private let backlogged = Atomic<Int>(0)
    /// Committed jobs leased at insert that wait for a slot, oldest first from `waitingHead`
    /// (taken from the front without shifting the rest each time). Confined to `queue`.
    private var waitingHanded: [Handed] = []
    private var waitingHead = 0
    /// Outcomes held for writing again, by job id; each keeps its slot in `inFlight`.
    private var heldOutcomes: [Int64: HeldOutcome] = [:]
    // Set while `stop` waits; signalled when `inFlight` reaches 0.
    private var drained: DispatchSemaphore?
    // A full disk fails every poll (4 a second): one line per 30 s says as much.
    private var claimFailureLog = LogThrottle()
    /// Outcomes waiting for the worker's next write (`flush`); each keeps its slot.
    private var pendingOutcomes: [PendingOutcome] = []
    /// The worker's writes (outcomes, a claim, or both) in the writer: at most `maxWrites`.
    private var writes = 0
    /// Two: while one write waits behind the API's, the next gathers what finished meanwhile and
    /// queues too, so the worker has a write in each turn of the writer's queue. With one, the
    /// choke point's worker pushed a third fewer per second than with the claim and the
    /// outcomes on writes of their own.
    private static let maxWrites = 2
    // A receipt round is running (only one at a time); when the last one started, in real time.
    var checkingReceipts = false
    var lastReceiptPoll: DispatchTime?

    /// - Parameters:
    ///   - storage: the queue (`jobs`), devices and the delivery record, one unit of work per outcome.
    ///   - providers: where pushes go, by the device's provider.
    ///   - presence: asked, for a planned push with an `ack_event_id`, whether its session
    ///     acknowledged that event (NO-2 `unless_acked`); nil: nothing is ever acknowledged.
    ///   - clock: the time of claims, leases, expiry checks, retries and records.
    ///   - configuration: limits and the retry policy.
    ///   - log: failures, dead letters, device deletions.
    ///   - massDeletionGuard: shared with `/readyz` and `/metrics` through `massDeletionGuard`.
    ///   - jitter: a uniform value in `0..<1` per retry, scaling the backoff (full jitter); tests
    ///     pass a constant.
    ///   - backlog: told what each claim leased (the `Notifier`'s pacing); nil: nobody paces.
    public init(storage: any Storage, providers: PushProviders, presence: (any PresenceStore)? = nil,
                clock: any Clock = SystemClock(), configuration: Configuration = Configuration(), log: Logger = .silent,
                massDeletionGuard: MassDeletionGuard = MassDeletionGuard(), backlog: PushBacklog? = nil,
                jitter: @escaping @Sendable () -> Double = {
                    var random = PooledRandomNumberGenerator()
                    return Double.random(in: 0..<1, using: &random)
                }) {
        self.storage = storage
        self.providers = providers
        self.presence = presence
        self.clock = clock
        self.jitter = jitter
        self.configuration = configuration
        self.log = log
        self.massDeletionGuard = massDeletionGuard
        self.backlog = backlog
    }

    /// Tells the backlog what a committed claim of at most `limit` jobs leased.
    private func noteClaim(_ claimed: [JobRecord], limit: Int) {
        backlog?.claimed(firstClaims: claimed.count(where: { $0.attempts == 1 }), drained: claimed.count < limit)
    }

    public var outcomeCounts: Counters { counters.withLock { $0 } }

    // MARK: Production: polling

    /// Starts polling the queue, first making due again the jobs a previous process left leased
    /// (`releaseAbandonedLeases()`). Calling it again does nothing.
    public func start() {
        releaseAbandonedLeases()
        queue.sync {
            guard state == .idle else { return }
            state = .polling
            handoffOpen.store(true, ordering: .relaxed)
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.poll() }
            timer.schedule(deadline: .now(), repeating: .milliseconds(configuration.pollMilliseconds))
            timer.resume()
            self.timer = timer
        }
    }

    /// Makes every leased push job due now: with one process per queue (SQLite), a lease still
    /// held at start belongs to a process that died, and waiting out its lease would only delay
    /// those pushes. Blocks while it writes; `start()` calls it.
    ///
    /// - Returns: how many jobs were released (0 when the write failed; it is logged).
    @discardableResult
    public func releaseAbandonedLeases() -> Int {
        let clock = self.clock
        do {
            let released = try storage.writeSync { tx in
                try tx.jobs.releaseLeases(kind: DeliveryJobPayload.kind, now: clock.unixMilliseconds)
            }
            if released > 0 { log.info("push jobs left leased by a previous run are due again", ["count": String(released)]) }
            return released
        } catch {
            log.error("could not release leased push jobs; they come back when their lease expires", ["error": "\(error)"])
            return 0
        }
    }

    // MARK: Jobs leased at insert (ADR 0007)

    /// Queues one `push.deliver` job in `tx` for `device`, leased to this worker at insert when
    /// it is polling, the job is due (`runAt <= now`) and a slot is free (taken now): then the
    /// job, its payload and `device` (read in `tx`) are handed to the worker once `tx` commits,
    /// with no claim and no device read. Otherwise (or when the storage cannot report the
    /// commit) the job is queued for a claim, as `JobQueue.enqueue` does.
    ///
    /// - Parameters:
    ///   - payload: the job; its text is what the row stores.
    ///   - device: the device `payload` names, as `tx` read it.
    ///   - app: the job's app (ADR 0006).
    ///   - runAt: unix ms at which it is due.
    ///   - now: unix ms.
    ///   - tx: the caller's write unit; the job commits or rolls back with it.
    ///   - handoff: the unit's hand-over (`handoff(in:)`), shared by every job the unit queues;
    ///     nil: one of its own.
    /// - Returns: the job's id.
    /// - Throws: `StorageError` from the insert.
    public func enqueue(_ payload: consuming DeliveryJobPayload, device: DeviceRecord, app: String, runAt: Int64, now: Int64,
                        in tx: any StorageTransaction, handoff: Handoff? = nil) throws(StorageError) -> Int64 {
        try enqueueReportingLease(payload, device: device, app: app, runAt: runAt, now: now, in: tx, handoff: handoff).id
    }

    /// `enqueue(_:device:app:runAt:now:in:)`, also telling whether the job was leased at insert
    /// (handed to this worker after the commit: no claim will take it) or queued for a claim.
    /// The `Notifier` counts only the latter in its `PushBacklog`.
    /// - Parameter handoff: the unit's hand-over (`handoff(in:)`), so that every job the unit
    ///   leases reaches the worker in one hop after the commit; nil: one of its own.
    /// - Returns: the job's id, and `leased`: true when it was leased at insert.
    /// - Throws: `StorageError` from the insert.
    /// (`payload` is consumed: the hand-over keeps it without a copy of its notification.)
    public func enqueueReportingLease(_ payload: consuming DeliveryJobPayload, device: DeviceRecord, app: String, runAt: Int64, now: Int64,
                                      in tx: any StorageTransaction, handoff: Handoff? = nil) throws(StorageError) -> (id: Int64, leased: Bool) {
        let text = payload.jsonText()
        guard runAt <= now, handoffOpen.load(ordering: .relaxed), let handoff = handoff ?? self.handoff(in: tx),
              let slotted = reserve() else {
            return (try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: text, app: app, runAt: runAt, now: now), false)
        }
        let job: JobRecord
        do {
            job = try tx.jobs.enqueueLeased(kind: DeliveryJobPayload.kind, payloadJSON: text, app: app,
                                            leaseUntil: now + configuration.leaseMilliseconds, now: now)
        } catch {
            // No row: nothing to send, whether or not the caller goes on.
            unreserve(slotted: slotted)
            throw error
        }
        handoff.items.append(Handed(job: job, payload: payload, device: device, slotted: slotted))
        return (job.id, true)
    }

    /// The jobs one unit of work leases at insert, handed to the worker together once it commits:
    /// one hop to the worker's queue and one burst of sends for the unit, instead of a hop per
    /// job that the worker would take one at a time while the unit's end actions still run.
    /// Confined to the unit's thread (filled by its body, read by its end action).
    public final class Handoff: @unchecked Sendable {
        fileprivate var items: [Handed] = []
    }

    /// A hand-over for the jobs `tx` leases at insert (pass it to each `enqueueReportingLease`
    /// of the unit); nil when the worker is not polling or the storage cannot report the unit's
    /// end (the jobs are then queued for a claim).
    public func handoff(in tx: any StorageTransaction) -> Handoff? {
        guard handoffOpen.load(ordering: .relaxed) else { return nil }
        let handoff = Handoff()
        let kept = tx.whenEnded { [self] committed in
            let items = handoff.items
            handoff.items = []
            guard !items.isEmpty else { return }
            // Rolled back: the rows are gone, nothing to send.
            guard committed else { return items.forEach { unreserve(slotted: $0.slotted) } }
            handOver(items)
        }
        return kept ? handoff : nil
    }

    /// A job leased at insert, with what its sender needs.
    ///
    /// A class: it passes through four lists between the insert and its send (the unit's
    /// hand-over, the worker's inbox, the waiting list, the send), and as a struct each move
    /// copied its job, payload and device field by field, ~40 string retains and releases a
    /// copy (issue 17: ~5k instructions a push).
    fileprivate final class Handed: Sendable {
        let job: JobRecord
        let payload: DeliveryJobPayload
        let device: DeviceRecord
        /// It holds a send slot since its insert; else it waits for one (`backlogged`).
        let slotted: Bool

        init(job: JobRecord, payload: DeliveryJobPayload, device: DeviceRecord, slotted: Bool) {
            self.job = job
            self.payload = payload
            self.device = device
            self.slotted = slotted
        }
    }

    /// Reserves room for a job leased at insert: a send slot when one is free (true), else a
    /// place in the backlog (false); nil when both are full.
    private func reserve() -> Bool? {
        if takeSlot() { return true }
        return Self.increment(backlogged, below: configuration.leasedAtInsertBacklog) ? false : nil
    }

    /// Adds one to `counter` unless that would reach `limit`, atomically.
    /// - Returns: whether it added one.
    private static func increment(_ counter: borrowing Atomic<Int>, below limit: Int) -> Bool {
        var current = counter.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, found) = counter.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = found
        }
        return false
    }

    /// Gives back what `reserve` took, for a job that will not be sent here.
    private func unreserve(slotted: Bool) {
        if slotted { releaseSlot() } else { backlogged.subtract(1, ordering: .relaxed) }
    }

    /// Takes a send slot for a job leased at insert, if one is free.
    private func takeSlot() -> Bool {
        Self.increment(sending, below: configuration.maxInFlight)
    }

    /// Gives back a slot taken for a job that will not be sent here.
    private func releaseSlot() {
        sending.subtract(1, ordering: .relaxed)
    }

    /// Called after the commit, on the storage's thread: the jobs of one unit (and of others
    /// not yet taken) go to `queue` in one hop.
    private func handOver(_ items: [Handed]) {
        let first = handed.withLock { list in
            list.append(contentsOf: items)
            return list.count == items.count
        }
        if first { queue.async { [self] in sendHanded() } }
    }

    /// Sends the jobs handed over since the last call, each holding the slot taken at insert. A
    /// stopped worker sends none: they stay leased, and the next start releases them.
    private func sendHanded() {
        dispatchPrecondition(condition: .onQueue(queue))
        let items = handed.withLock { list in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
        guard !items.isEmpty else { return }
        guard state == .polling else {
            for item in items { unreserve(slotted: item.slotted) }
            return
        }
        for item in items {
            if item.slotted { sendOne(item) } else { waitingHanded.append(item) }
        }
        startWaiting()
    }

    /// Sends the jobs waiting for a slot while slots are free, oldest first. One that waited
    /// past half its lease is not sent: a claim takes it once its lease has run out (sending it
    /// this late could race that claim).
    private func startWaiting() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard waitingHead < waitingHanded.count else { return }
        let now = clock.unixMilliseconds, margin = configuration.leaseMilliseconds / 2
        while waitingHead < waitingHanded.count, takeSlot() {
            let item = waitingHanded[waitingHead]
            waitingHead += 1
            backlogged.subtract(1, ordering: .relaxed)
            if let until = item.job.leaseUntil, until - now <= margin {
                releaseSlot()
                continue
            }
            sendOne(item)
        }
        // Shifting the rest after each start was ~3k instructions a push with a call of 1,000 waiting.
        if waitingHead == waitingHanded.count {
            waitingHanded.removeAll(keepingCapacity: true)
            waitingHead = 0
        } else if waitingHead >= 256 {
            waitingHanded.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    /// Sends one job leased at insert that holds a slot.
    private func sendOne(_ item: Handed) {
        dispatchPrecondition(condition: .onQueue(queue))
        inFlight += 1
        let done: @Sendable (Recorded) -> Void = { [self] result in
            if case .held = result {} else { finished() }
        }
        if let prepared = screen(item.job, payload: item.payload, done: done) { deliver(prepared, device: item.device) }
    }

    /// Asks for a poll now (after jobs were enqueued), instead of at the next tick. Does nothing
    /// before `start()` or after `stop(deadline:)`.
    public func wake() {
        queue.async { [weak self] in self?.poll() }
    }

    /// Stops claiming, then waits up to `deadline` for the sends in flight to finish and record
    /// their outcome (held outcomes are written once more, whatever their backoff); queued jobs
    /// stay for the next start (OP-5). A send still running, or an outcome still unwritten, at
    /// the deadline keeps its lease, which the next start releases: it may go twice, never zero
    /// times.
    ///
    /// - Parameter deadline: seconds of real time to wait for in-flight sends.
    /// - Returns: how many sends were still in flight when it gave up (0 = drained).
    /// - Important: Blocks the calling thread; never call it on the worker's, the storage's or a
    ///   provider's thread (it would wait for itself).
    @discardableResult
    public func stop(deadline seconds: Double = 10) -> Int {
        let semaphore: DispatchSemaphore? = queue.sync {
            state = .stopped
            handoffOpen.store(false, ordering: .relaxed)
            // Left leased: the next start releases them (never sent twice here, never lost).
            backlogged.subtract(waitingHanded.count - waitingHead, ordering: .relaxed)
            waitingHanded.removeAll()
            waitingHead = 0
            timer?.cancel()
            writeHeld(force: true) { _ in }
            guard inFlight > 0 else { return nil }
            let semaphore = DispatchSemaphore(value: 0)
            drained = semaphore
            return semaphore
        }
        guard let semaphore else { return 0 }
        _ = semaphore.wait(timeout: .now() + seconds)
        return queue.sync {
            drained = nil
            return inFlight
        }
    }

    // MARK: One round, driven by the caller

    /// Runs one round: writes the held outcomes whose backoff has passed, claims up to `limit`
    /// jobs due at the clock's now (leasing them until now + `leaseMilliseconds`), sends each,
    /// records every outcome (or holds it when its write fails for a passing fault), then calls
    /// `completion`. The
    /// jobs count toward `maxInFlight` and `stop`'s drain like polled ones; a stopped worker
    /// claims nothing. A retry decided in this round is due at a later time: it is claimed by a
    /// later round once the clock has reached it.
    ///
    /// - Parameters:
    ///   - limit: most jobs to claim; default `batchSize`. Must be positive.
    ///   - completion: called once, on the worker's queue (keep it short; never `stop` from it),
    ///     with the round or the claim's error (`StorageError`; nothing was claimed then).
    public func runDue(limit: Int? = nil, completion: @escaping @Sendable (Result<Round, any Error>) -> Void) {
        let limit = limit ?? configuration.batchSize
        precondition(limit > 0, "a round claims at least one job")
        let clock = self.clock, lease = configuration.leaseMilliseconds
        queue.async { [self] in
            guard state != .stopped else { return completion(.success(Round())) }
            writeHeld { [self] written in
                storage.write({ tx in
                    try tx.jobs.claim(kind: DeliveryJobPayload.kind, limit: limit, leaseMilliseconds: lease, now: clock.unixMilliseconds)
                }) { [self] result in
                    queue.async { [self] in
                        switch result {
                        case .failure(let error):
                            completion(.failure(error))
                        case .success(let claimed):
                            noteClaim(claimed, limit: limit)
                            let jobs = adoptHeld(claimed)
                            let round = Round(claimed: claimed.count, held: claimed.count - jobs.count, heldWritten: written)
                            guard !jobs.isEmpty else { return completion(.success(round)) }
                            let tally = Mutex(round)
                            let left = Mutex(jobs.count)
                            send(jobs) { recorded in
                                switch recorded {
                                case .recorded: break
                                case .notRecorded: tally.withLock { $0.unrecorded += 1 }
                                case .held: tally.withLock { $0.held += 1 }
                                }
                                let last = left.withLock { left in
                                    left -= 1
                                    return left == 0
                                }
                                if last { completion(.success(tally.withLock { $0 })) }
                            }
                        }
                    }
                }
            }
        }
    }

    /// `runDue(limit:completion:)` for async callers: returns once every job the round claimed
    /// has its outcome recorded (or found its lease taken over).
    ///
    /// - Returns: how many jobs were claimed, how many outcomes were not recorded or held, and
    ///   how many held outcomes were written.
    /// - Throws: the claim's `StorageError`.
    @discardableResult
    public func runDue(limit: Int? = nil) async throws -> Round {
        try await withCheckedThrowingContinuation { continuation in
            runDue(limit: limit) { continuation.resume(with: $0) }
        }
    }

    // MARK: Claiming and finishing

    /// Logs a failed claim at most once per 30 s (on `queue`), with the count of those not logged.
    private func logClaimFailure(_ error: any Error) {
        guard let held = claimFailureLog.admit(now: clock.monotonicNanoseconds) else { return }
        var metadata = ["error": "\(error)"]
        if held > 0 { metadata["repeated"] = String(held) }
        log.error("claiming push jobs failed", metadata)
    }

    /// Asks for a claim: made by the worker's next write, with the outcomes waiting by then (see
    /// `flush`), so under load a claim costs no transaction of its own.
    private func poll() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard state == .polling else { return }
        // Before the claim, so the writer takes held outcomes first.
        writeHeld { _ in }
        pollReceiptsIfDue()
        claimWanted = true
        flush()
    }

    /// Sends claimed jobs, each taking a slot until its outcome is recorded; `recorded` is called
    /// on `queue` for each, with what became of its outcome, after its slot is freed (a held
    /// outcome keeps it until written).
    ///
    /// The devices of the whole batch are read in one snapshot (one read transaction per claim,
    /// not one per job: a claim of 64 jobs paid 64 transactions before) and one statement.
    /// - Parameter counted: the claim already counted the jobs in `sending` (in its write, so
    ///   the worker's next write does not claim their slots again).
    private func send(_ jobs: [JobRecord], counted: Bool = false, recorded: @escaping @Sendable (Recorded) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        inFlight += jobs.count
        if !counted { sending.add(jobs.count, ordering: .relaxed) }
        var ready: [Prepared] = []
        ready.reserveCapacity(jobs.count)
        for job in jobs {
            let done: @Sendable (Recorded) -> Void = { [self] result in
                if case .held = result {} else { finished() }
                recorded(result)
            }
            if let prepared = prepare(job, done: done) { ready.append(prepared) }
        }
        guard !ready.isEmpty else { return }
        let batch = ready
        let ids = batch.map(\.payload.deviceID)
        let now = clock.unixMilliseconds
        storage.read({ tx in
            let found = try tx.devices.find(ids: ids, now: now)
            var byID: [String: DeviceRecord] = [:]
            byID.reserveCapacity(found.count)
            for device in found { byID[device.id] = device }
            return ids.map { byID[$0] }
        }) { [self] result in
            switch result {
            case .failure(let error):
                for item in batch {
                    finish(item.job, .retry(afterSeconds: nil, reason: "database: \(error)"), device: nil, origin: item.payload.origin, done: item.done)
                }
            case .success(let devices):
                for (item, device) in zip(batch, devices) { deliver(item, device: device) }
            }
        }
    }

    // MARK: Held outcomes

    /// The claimed jobs to send: those whose outcome is held here are not (their push went);
    /// the held outcome takes the new claim's lease and is written at the next chance.
    private func adoptHeld(_ claimed: [JobRecord]) -> [JobRecord] {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !heldOutcomes.isEmpty else { return claimed }
        return claimed.filter { job in
            guard heldOutcomes[job.id] != nil else { return true }
            heldOutcomes[job.id]!.write.lease = job.lease
            heldOutcomes[job.id]!.nextAttemptAt = clock.unixMilliseconds
            log.warning("a push job came back while its outcome was held; the outcome is kept, the push not sent again",
                        ["job_id": String(job.id), "attempt": String(job.attempts)])
            return false
        }
    }

    /// Writes the held outcomes whose backoff has passed (every one with `force`), then calls
    /// `completion` on `queue` with how many were written.
    private func writeHeld(force: Bool = false, completion: @escaping @Sendable (Int) -> Void) {
        dispatchPrecondition(condition: .onQueue(queue))
        let now = clock.unixMilliseconds
        let due = heldOutcomes.values.filter { !$0.writing && (force || $0.nextAttemptAt <= now) }.map(\.write)
        guard !due.isEmpty else { return completion(0) }
        let written = Mutex(0), left = Mutex(due.count)
        for write in due {
            heldOutcomes[write.job.id]?.writing = true
            storage.write(outcomeTransaction(write)) { [self] result in
                queue.async { [self] in
                    if settleHeld(write, result) { written.withLock { $0 += 1 } }
                    let last = left.withLock { left in
                        left -= 1
                        return left == 0
                    }
                    if last { completion(written.withLock { $0 }) }
                }
            }
        }
    }

    /// After a held outcome's write: done (its slot freed), or held again with a longer wait.
    /// - Returns: whether it was written.
    private func settleHeld(_ write: OutcomeWrite, _ result: Result<Counters, any Error>) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        let id = write.job.id
        guard var entry = heldOutcomes[id] else { return false }
        switch result {
        case .success(let counts):
            heldOutcomes[id] = nil
            add(counts)
            log.info("a held push outcome was written", ["job_id": String(id), "failed_writes": String(entry.failures)])
            finished()
            return true
        case .failure(let error) where Self.passes(error) || (error is LeaseLost && entry.write.lease != write.lease):
            // A passing fault again, or written under a lease a later claim replaced: again.
            entry.writing = false
            if Self.passes(error) { entry.failures += 1 }
            entry.nextAttemptAt = clock.unixMilliseconds + (error is LeaseLost ? 0 : outcomeBackoff(afterFailures: entry.failures))
            heldOutcomes[id] = entry
            return false
        case .failure(let error):
            heldOutcomes[id] = nil
            logFailure("recording a held push outcome failed", job: write.job, error: error)
            finished()
            return false
        }
    }

    /// The wait after a held outcome's `failures`-th failed write, ms.
    private func outcomeBackoff(afterFailures failures: Int) -> Int64 {
        let base = max(configuration.outcomeRetryBaseMilliseconds, 1), cap = configuration.outcomeRetryCapMilliseconds
        let doublings = min(max(failures - 1, 0), 30)
        return min(base << Int64(doublings), cap)
    }

    /// Whether a failed outcome write may succeed later: the storage was full, busy, read-only
    /// or unavailable for a while (RL-2), not refused for good.
    private static func passes(_ error: any Error) -> Bool {
        switch error as? StorageError {
        case .diskFull?, .busy?, .readOnly?, .unavailable?, .stalled?: true
        default: false
        }
    }

    private func add(_ counts: Counters) {
        counters.withLock { counters in
            counters.delivered += counts.delivered
            counters.retried += counts.retried
            counters.dead += counts.dead
            counters.devicesDeleted += counts.devicesDeleted
        }
    }

    /// An outcome is recorded (or given up): wakes `stop` when the last one is.
    private func finished() {
        dispatchPrecondition(condition: .onQueue(queue))
        inFlight -= 1
        assert(inFlight >= 0, "more outcomes than claimed jobs")
        if inFlight == 0 { drained?.signal() }
    }

    /// A send ended (its outcome is known, to be written): its slot is free. While polling, the
    /// worker's next write claims for it, so the next jobs go out while this outcome waits for
    /// the writer instead of after it was committed (issue 17: under the API's writes a job held
    /// its slot for two turns of the writer, which capped the choke point's pushes).
    private func sendEnded() {
        sending.subtract(1, ordering: .relaxed)
        queue.async { [self] in afterSendEnded() }
    }

    /// `sendEnded`'s work on `queue`, once the slot was given back.
    private func afterSendEnded() {
        dispatchPrecondition(condition: .onQueue(queue))
        // Jobs leased at insert first: they are this worker's already, a claim would take others.
        if state == .polling { startWaiting() }
        if state == .polling { claimWanted = true }
        flush()
    }

    // MARK: One job

    /// A claimed job whose payload was read and that is still to be sent: its device comes next.
    /// Its `done` is called once, on `queue`, when its outcome was written (or held, or given up):
    /// the outcomes of one group commit reach `queue` in one hop, not one each.
    ///
    /// A class for the reason `Handed` is one: passed along and captured by the send's
    /// completion, it is one reference instead of a job and a payload copied field by field.
    private final class Prepared: Sendable {
        let job: JobRecord
        let payload: DeliveryJobPayload
        let done: @Sendable (Recorded) -> Void

        init(job: JobRecord, payload: DeliveryJobPayload, done: @escaping @Sendable (Recorded) -> Void) {
            self.job = job
            self.payload = payload
            self.done = done
        }
    }

    /// Reads a claimed job's payload and settles at once what needs no device (an unreadable
    /// payload, an expired or acknowledged notification: recorded, `done` called later).
    /// - Returns: the job to look its device up for, or nil when it was settled here.
    private func prepare(_ job: JobRecord, done: @escaping @Sendable (Recorded) -> Void) -> Prepared? {
        let payload: DeliveryJobPayload
        do {
            payload = try DeliveryJobPayload.decode(job.payloadJSON)
        } catch {
            finish(job, .deadLetter(reason: "unreadable job payload: \(error)"), device: nil, origin: nil, done: done)
            return nil
        }
        return screen(job, payload: payload, done: done)
    }

    /// Settles at once a job that must not be sent (an expired or acknowledged notification).
    /// - Returns: the job to send, or nil when it was settled here.
    private func screen(_ job: JobRecord, payload: DeliveryJobPayload, done: @escaping @Sendable (Recorded) -> Void) -> Prepared? {
        let origin = payload.origin
        if payload.notification.hasExpired(atMilliseconds: clock.unixMilliseconds) {
            // NO-2: an expired notification is never sent, however late its job runs.
            skip(job, origin: origin, deviceID: payload.deviceID, outcome: .expired, note: "expired", done: done)
            return nil
        }
        if let origin, isAcknowledged(origin) {
            // NO-2 `unless_acked`: the session acknowledged the live event within its window.
            skip(job, origin: origin, deviceID: payload.deviceID, outcome: .suppressedAcked, note: "acked", done: done)
            return nil
        }
        return Prepared(job: job, payload: payload, done: done)
    }

    /// Sends one prepared job to its device (nil: deleted since it was queued) and records the
    /// outcome; `done` is called once, on `queue`, after its outcome's transaction.
    private func deliver(_ prepared: Prepared, device found: DeviceRecord?) {
        let job = prepared.job, payload = prepared.payload, done = prepared.done
        let deviceID = payload.deviceID
        let origin = payload.origin
        let clock = self.clock
        switch found {
        case nil:
            // Deleted since the job was queued (logout, dead token): nothing to send.
            skip(job, origin: origin, deviceID: deviceID, outcome: .skippedSession, note: "device_gone", done: done)
        case let device? where origin != nil && !device.sessionActive:
            // The session ended or expired after planning (DV-4): its devices get no pushes.
            skip(job, origin: origin, deviceID: deviceID, outcome: .skippedSession, note: "session_inactive", done: done)
        case let device?:
            guard let apnsID = PushID(payload.apnsID) else {
                return finish(job, .deadLetter(reason: "invalid apns_id in job"), device: device, origin: origin, done: done)
            }
            // Device rows keep the provider as text; this is where it becomes a `PushProviderID`.
            guard let provider = PushProviderID(rawValue: device.provider) else {
                return finish(job, providers.unsupported(provider: device.provider).outcome, device: device, origin: origin, done: done)
            }
            let target = PushTarget(provider: provider, token: device.token, environment: device.environment)
            let sentAt = clock.unixMilliseconds
            // Leases are not renewed: a push still unsent (or unanswered) near the lease's end is
            // dropped (timed out), so its outcome is recorded before another claim may send it again.
            let sendBy = job.leaseUntil.map { SendByDeadline(leaseUntil: $0, leaseMilliseconds: configuration.leaseMilliseconds) }
            providers.send(payload.notification, to: target, pushID: apnsID, app: device.app, sendBy: sendBy) { [self] classification in
                // Read from `prepared` here rather than captured one by one: the closure's
                // context then holds one reference for the job and its payload (issue 17).
                let job = prepared.job, origin = prepared.payload.origin
                if case .expired = classification.outcome {
                    // NO-2: expired before (re)sending, e.g. while a refused credential was
                    // renewed: the same end as the check before sending, not a dead letter.
                    return skip(job, origin: origin, deviceID: prepared.payload.deviceID, outcome: .expired, note: "expired", done: prepared.done)
                }
                var outcome = classification.outcome
                // Accepted, confirmed later: the receipt job asks (PU-8a).
                var receipt: PushReceiptJobPayload?
                if case .delivered = outcome, let receiptID = classification.receiptID {
                    receipt = PushReceiptJobPayload(provider: provider, receiptID: receiptID, sentAt: sentAt, delivery: prepared.payload)
                    receipt?.app = device.app == "default" ? nil : device.app
                }
                // PU-5a counts per provider and app: one app's wrong topic must not stop another
                // app's dead tokens from being deleted (ADR 0006). The default app keeps the plain name.
                let guarded = device.app == "default" ? device.provider : "\(device.provider)@\(device.app)"
                switch outcome {
                case .deleteDevice(let reason, _):
                    // Asked before each deletion, so a misconfiguration deletes at most the guard's burst.
                    if case .keep(let justTripped) = massDeletionGuard.verdict(provider: guarded, reason: reason) {
                        if justTripped {
                            // Once per trip: every job it keeps is a dead letter with its own warning.
                            log.error("provider rejects nearly every token alike: not deleting devices (check the credentials, topic and environment)",
                                      ["provider": guarded, "reason": reason])
                        }
                        outcome = .deadLetter(reason: "provider_misconfigured: \(reason)")
                    }
                case .delivered:
                    // Only a confirmed delivery clears a misconfigured provider: with receipts
                    // still to come, acceptance proves nothing about the credentials behind it.
                    massDeletionGuard.recordOther(provider: guarded, delivered: receipt == nil)
                case .deadLetter(let reason) where classification.isConfigurationError && providers.provider(provider) is any PushReceiptProvider:
                    // A relay (Expo) reports the app's APNs/FCM credentials at the relay as wrong
                    // per message: show the provider as misconfigured (PU-8a). APNs and FCM keep
                    // their own rule: only the guard's wall of rejections trips it.
                    noteMisconfiguration(provider: guarded, reason: reason)
                default:
                    massDeletionGuard.recordOther(provider: guarded, delivered: false)
                }
                finish(job, outcome, device: device, origin: origin, receipt: receipt, done: prepared.done)
            }
        }
    }

    /// NO-2 `unless_acked`: whether the planned push's session acknowledged the live event it
    /// waits for. Only a push with both an `ack_event_id` and a session can be acknowledged.
    private func isAcknowledged(_ origin: DeliveryJobPayload.Origin) -> Bool {
        guard let presence, let event = origin.ackEventID, let session = origin.sessionID else { return false }
        return presence.hasAcknowledged(userID: origin.userID, sessionID: session, id: event)
    }

    /// Completes a planned push that must not be sent, recording why in its delivery record.
    private func skip(_ job: JobRecord, origin: DeliveryJobPayload.Origin?, deviceID: String, outcome: DeliveryOutcome, note: String,
                      done: @escaping @Sendable (Recorded) -> Void) {
        let clock = self.clock
        sendEnded()
        storage.write({ tx in
            try held(tx.jobs.complete(job.lease, note: note))
            try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: outcome, detail: note,
                            at: clock.unixMilliseconds)
        }) { [self] result in
            // Nothing was sent: the job coming back after its lease is skipped again, not held.
            if case .failure(let error) = result {
                logFailure("recording a skipped push failed", job: job, error: error)
            }
            queue.async { done(result.isSuccess ? .recorded : .notRecorded) }
        }
    }

    /// Logs a failed outcome transaction; one that failed because the job's lease was taken over
    /// is another claim's to record, so it is only a warning.
    func logFailure(_ message: String, job: JobRecord, error: any Error) {
        if error is LeaseLost {
            log.warning("push outcome not recorded: the job's lease ran out and another claim took it over", ["job_id": String(job.id)])
        } else {
            log.error(message, ["job_id": String(job.id), "error": "\(error)"])
        }
    }

    /// Appends to a planned push's delivery record (NO-8); plain pushes have none.
    /// - Parameter at: unix ms of the outcome.
    static func record(_ tx: any StorageTransaction, origin: DeliveryJobPayload.Origin?, deviceID: String, jobID: Int64,
                               outcome: DeliveryOutcome, messageID: String? = nil, detail: String? = nil, at: Int64) throws(StorageError) {
        guard let origin else { return }
        try tx.deliveries.record(DeliveryEntry(
            notificationID: origin.notificationID, userID: origin.userID, deviceID: deviceID, sessionID: origin.sessionID,
            outcome: outcome, providerMessageID: messageID, jobID: jobID, deliveryID: origin.deliveryID, detail: detail,
            at: at))
    }

    /// Records one job's outcome in one transaction (fenced by the job's lease), then calls `done`;
    /// when the write fails for a passing fault, holds the outcome (see the type's notes).
    ///
    /// Outcomes whose first write is the fenced job update (all but a device deletion) are
    /// group-committed: they queue on `queue` while an outcome write is in the writer, and the
    /// next write takes every one queued meanwhile (see `flushOutcomes`).
    private func finish(_ job: JobRecord, _ outcome: PushOutcome, device: DeviceRecord?, origin: DeliveryJobPayload.Origin?,
                        receipt: PushReceiptJobPayload? = nil, done: @escaping @Sendable (Recorded) -> Void) {
        // Drawn outside the transaction so a rolled-back outcome does not change the sequence tests see.
        let write = OutcomeWrite(job: job, lease: job.lease, outcome: outcome, device: device, origin: origin, receipt: receipt, random: jitter())
        if case .deleteDevice = outcome {
            writeOne(write, done: done)
            return sendEnded()
        }
        // One hop for both: the outcome joins the next write, and the freed slot is claimed for.
        sending.subtract(1, ordering: .relaxed)
        queue.async { [self] in
            pendingOutcomes.append(PendingOutcome(write: write, done: done))
            afterSendEnded()
        }
    }

    /// An outcome waiting for the next group commit. A class: the list of them is copied into
    /// the write and back (a struct's outcome, job and device were copied field by field).
    private final class PendingOutcome: Sendable {
        let write: OutcomeWrite
        let done: @Sendable (Recorded) -> Void

        init(write: OutcomeWrite, done: @escaping @Sendable (Recorded) -> Void) {
            self.write = write
            self.done = done
        }
    }

    /// What the worker's combined write returns: each outcome's counts (nil: its lease was lost),
    /// the claim's limit (0: no slot was free) and the jobs it leased.
    private struct Written: Sendable {
        var outcomes: [Counters?]
        var want: Int
        var claimed: [JobRecord]
    }

    /// Starts the worker's next write unless one is in the writer (its completion calls this
    /// again): every outcome waiting, and the claim a poll asked for, in one transaction. Under
    /// load a write is whatever finished during the previous one, one commit for many pushes and
    /// the next claim with it: the worker takes the writer once per turn, not twice (claim, then
    /// outcomes) while the API's writes queue behind. A lone outcome is written at once.
    ///
    /// The claim takes every slot free when the write runs (`maxInFlight` less the jobs being
    /// sent, read in the writer), so claims grow with the room the connections have, not a fixed
    /// batch, and include the slots of outcomes still waiting for a write.
    ///
    /// Each outcome starts with its fenced job update, so one whose lease was lost changes nothing
    /// and is skipped (`notRecorded`) without rolling back the others. A write that fails for a
    /// passing fault holds every outcome in it (RL-2, as one would be held alone) and leaves the
    /// claim to the next poll; one refused for a lasting reason is written again outcome by
    /// outcome, so one bad outcome does not lose the others.
    private func flush() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard writes < Self.maxWrites else { return }
        let batch = pendingOutcomes
        let maxInFlight = configuration.maxInFlight
        // Slots only free up until the write runs: one free now is free then.
        let claim = state == .polling && claimWanted && maxInFlight - sending.load(ordering: .relaxed) > 0
        guard !batch.isEmpty || claim else { return }
        writes += 1
        if claim { claimWanted = false }
        pendingOutcomes.removeAll(keepingCapacity: true)
        let next: @Sendable () -> Void = { [self] in
            queue.async { [self] in
                writes -= 1
                flush()
            }
        }
        if batch.count == 1, !claim {
            let only = batch[0]
            return writeOne(only.write) { [self] recorded in
                only.done(recorded)
                writes -= 1
                flush()
            }
        }
        let bodies = batch.map { outcomeTransaction($0.write) }
        let lease = configuration.leaseMilliseconds, clock = self.clock
        let counted = ClaimCount()
        storage.write({ tx in
            var results: [Counters?] = []
            results.reserveCapacity(bodies.count)
            for body in bodies {
                do {
                    results.append(try body(tx))
                } catch is LeaseLost {
                    results.append(nil)
                }
            }
            let want = claim ? max(0, maxInFlight - self.sending.load(ordering: .relaxed)) : 0
            let claimed = want > 0
                ? try tx.jobs.claim(kind: DeliveryJobPayload.kind, limit: want, leaseMilliseconds: lease, now: clock.unixMilliseconds)
                : []
            // Counted here, before the other write of the worker can run its claim; taken back
            // below if this transaction does not commit.
            self.sending.add(claimed.count, ordering: .relaxed)
            counted.value.store(claimed.count, ordering: .relaxed)
            return Written(outcomes: results, want: want, claimed: claimed)
        }) { [self] result in
            switch result {
            case .success(let written):
                if written.want > 0 { noteClaim(written.claimed, limit: written.want) }
                var total = Counters()
                for (item, counts) in zip(batch, written.outcomes) {
                    guard let counts else {
                        logFailure("recording a push outcome failed", job: item.write.job, error: LeaseLost())
                        continue
                    }
                    total.delivered += counts.delivered
                    total.retried += counts.retried
                    total.dead += counts.dead
                    total.devicesDeleted += counts.devicesDeleted
                }
                add(total)
                // One hop for every outcome of the write (and the next claim's sends after them).
                queue.async { [self] in
                    for (item, counts) in zip(batch, written.outcomes) { item.done(counts == nil ? .notRecorded : .recorded) }
                    writes -= 1
                    if written.want > 0 {
                        let jobs = adoptHeld(written.claimed)
                        // Jobs whose outcome is held here are not sent: no slot.
                        sending.subtract(written.claimed.count - jobs.count, ordering: .relaxed)
                        send(jobs, counted: true) { _ in }
                        // A full claim may have left more due; a short one took all that was due
                        // (a wake meanwhile still asks again: its jobs may have come after).
                        if written.claimed.count == written.want { claimWanted = true }
                    }
                    flush()
                }
            case .failure(let error) where Self.passes(error):
                sending.subtract(counted.value.load(ordering: .relaxed), ordering: .relaxed)
                queue.async { [self] in
                    if claim { logClaimFailure(error) }
                    if !batch.isEmpty {
                        log.error("recording push outcomes failed; they are held and written again, the pushes are not sent again",
                                  ["count": String(batch.count), "error": "\(error)"])
                    }
                    let at = clock.unixMilliseconds + outcomeBackoff(afterFailures: 1)
                    for item in batch {
                        heldOutcomes[item.write.job.id] = HeldOutcome(write: item.write, failures: 1, nextAttemptAt: at)
                        item.done(.held)
                    }
                    // The claim waits for the next poll (the timer's), not a loop of failing writes.
                    writes -= 1
                    flush()
                }
            case .failure(let error):
                sending.subtract(counted.value.load(ordering: .relaxed), ordering: .relaxed)
                if claim { queue.async { [self] in logClaimFailure(error) } }
                for item in batch { writeOne(item.write, done: item.done) }
                next()
            }
        }
    }

    /// Writes one outcome in its own transaction, then calls `done` on `queue`; holds it when the
    /// write fails for a passing fault.
    private func writeOne(_ write: OutcomeWrite, done: @escaping @Sendable (Recorded) -> Void) {
        let job = write.job
        storage.write(outcomeTransaction(write)) { [self] result in
            switch result {
            case .success(let counts):
                add(counts)
                queue.async { done(.recorded) }
            case .failure(let error) where Self.passes(error):
                queue.async { [self] in
                    log.error("recording a push outcome failed; it is held and written again, the push is not sent again",
                              ["job_id": String(job.id), "error": "\(error)"])
                    heldOutcomes[job.id] = HeldOutcome(write: write, failures: 1,
                                               nextAttemptAt: clock.unixMilliseconds + outcomeBackoff(afterFailures: 1))
                    done(.held)
                }
            case .failure(let error):
                // The lease will expire and the job come back: nothing is lost, it may be sent twice.
                logFailure("recording a push outcome failed", job: job, error: error)
                queue.async { done(.notRecorded) }
            }
        }
    }

    /// The outcome's unit of work, fenced by `write.lease`. - Returns: the counts it adds once
    /// committed.
    private func outcomeTransaction(_ write: OutcomeWrite) -> @Sendable (any StorageTransaction) throws -> Counters {
        let policy = configuration.retry
        let receiptDelay = configuration.receiptDelayMilliseconds
        let log = self.log, clock = self.clock
        let receipt = write.receipt
        let job = write.job, lease = write.lease, outcome = write.outcome, device = write.device, origin = write.origin
        let deviceID = device?.id ?? "", random = write.random
        let provider = device?.provider
        let cause = { @Sendable (reason: String) in DeadLetterCause(provider: provider, reason: DeadLetterCause.code(of: reason)) }
        return { tx in
            let now = clock.unixMilliseconds
            var counts = Counters()
            switch outcome {
            case .delivered(let messageID):
                try held(tx.jobs.complete(lease, note: messageID.map { "delivered: \($0)" }))
                if let receipt {
                    // Same transaction: a recorded ticket always has its receipt check queued.
                    try tx.jobs.enqueue(kind: PushReceiptJobPayload.kind, payloadJSON: receipt.jsonText(), app: job.app, runAt: now + receiptDelay,
                                        now: now)
                }
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .sent, messageID: messageID, at: now)
                counts.delivered += 1
            case .deleteDevice(let reason, let timestamp):
                // DV-6, PU-5c: a device that registered again after the provider's verdict stays.
                var deleted = false
                if let device { deleted = try tx.devices.deleteInvalid(id: device.id, invalidSince: timestamp) }
                let note = deleted ? "device_deleted: \(reason)" : "token_rejected_but_reregistered: \(reason)"
                try held(tx.jobs.complete(lease, note: note))
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .failed, detail: note, at: now)
                if deleted {
                    counts.devicesDeleted += 1
                    log.info("deleted a device its provider reported invalid", ["device_id": device?.id ?? "", "reason": reason])
                }
            case .retry(_, let reason), .refreshAuthAndRetryOnce(let reason), .notSent(_, let reason):
                // The provider already used its one auth refresh; what is left is a plain retry.
                // An attempt that never reached the provider does not count toward the cap.
                var retryAfter: Int64?
                var countsAttempt = true
                switch outcome {
                case .retry(let seconds?, _): retryAfter = Int64(seconds) * 1000
                case .notSent(let seconds, _):
                    countsAttempt = false
                    retryAfter = seconds.map { Int64($0) * 1000 }
                default: break
                }
                let counted = job.countedAttempts - (countsAttempt ? 0 : 1)
                let elapsed = now - (job.firstAttemptAt ?? now)
                let decision = policy.decide(attempts: job.attempts, countedAttempts: counted, elapsedMilliseconds: elapsed,
                                             retryAfterMilliseconds: retryAfter, random: random)
                switch decision {
                case .retry(let delay):
                    try held(tx.jobs.retry(lease, runAt: now + delay, error: reason, countsAttempt: countsAttempt))
                    try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .retrying,
                                    detail: "\(reason); next attempt in \(delay) ms", at: now)
                    counts.retried += 1
                case .giveUp, .budgetSpent:
                    let error = decision == .budgetSpent
                        ? "\(reason) (retry budget of \(policy.budgetMilliseconds / 1000) s spent after \(job.attempts) attempts)"
                        : "\(reason) (after \(job.attempts) attempts)"
                    try held(tx.jobs.deadLetter(lease, error: error, cause: cause(reason), now: now))
                    try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .dead, detail: error, at: now)
                    counts.dead += 1
                    log.warning("push job dead after its last attempt", ["job_id": String(job.id), "reason": reason])
                }
            case .expired:
                // NO-2, as `skip` records it (the worker takes that path; here for completeness).
                try held(tx.jobs.complete(lease, note: "expired"))
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .expired, detail: "expired", at: now)
            case .deadLetter(let reason):
                try held(tx.jobs.deadLetter(lease, error: reason, cause: cause(reason), now: now))
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .dead, detail: reason, at: now)
                counts.dead += 1
                log.warning("push job dead-lettered", ["job_id": String(job.id), "reason": reason])
            }
            return counts
        }
    }
}

/// A fenced job update found the job no longer leased under this worker's claim.
struct LeaseLost: Error {}

/// How many jobs a write's claim counted in `sending` before its commit, to take back when the
/// transaction fails.
private final class ClaimCount: Sendable {
    let value = Atomic<Int>(0)
}

/// Rolls the outcome's transaction back (device deletion, delivery record) when the job's lease
/// was lost: the claim that took the job over records its own outcome.
@inline(__always)
func held(_ fenced: Bool) throws(LeaseLost) {
    if !fenced { throw LeaseLost() }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
