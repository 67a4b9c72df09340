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
    enum State { case idle, polling, stopped }

    /// What became of one job's outcome.
    enum Recorded: Sendable {
        case recorded
        /// Not written, and not to be: the lease was lost, or a lasting failure.
        case notRecorded
        /// Not written yet: held, to be written again (its slot stays taken).
        case held
    }

    /// One job's outcome transaction, everything it needs to run again.
    ///
    /// What does not change is held in one object (`Facts`): a write is copied into the pending
    /// list, the write's closure and back, and as fields each copy retained and released the
    /// job's and the device's two dozen strings (issue 17).
    struct OutcomeWrite: Sendable {
        /// The claim the write is fenced with: the job's, or a later claim's that took it back.
        var lease: JobLease
        let facts: Facts

        init(job: JobRecord, lease: JobLease, outcome: PushOutcome, device: DeviceRecord?, origin: DeliveryJobPayload.Origin?,
             receipt: PushReceiptJobPayload?, random: Double) {
            self.lease = lease
            facts = Facts(job: job, outcome: outcome, device: device, origin: origin, receipt: receipt, random: random)
        }

        var job: JobRecord { facts.job }
        var outcome: PushOutcome { facts.outcome }
        var device: DeviceRecord? { facts.device }
        var origin: DeliveryJobPayload.Origin? { facts.origin }
        var receipt: PushReceiptJobPayload? { facts.receipt }
        var random: Double { facts.random }

        /// The outcome's parts that every write of it shares.
        final class Facts: Sendable {
            let job: JobRecord
            let outcome: PushOutcome
            let device: DeviceRecord?
            let origin: DeliveryJobPayload.Origin?
            /// The receipt check to queue with a delivered outcome (providers with receipts, PU-8a).
            let receipt: PushReceiptJobPayload?
            /// The jitter draw for a retry's backoff, drawn once so every write decides alike.
            let random: Double

            init(job: JobRecord, outcome: PushOutcome, device: DeviceRecord?, origin: DeliveryJobPayload.Origin?,
                 receipt: PushReceiptJobPayload?, random: Double) {
                self.job = job
                self.outcome = outcome
                self.device = device
                self.origin = origin
                self.receipt = receipt
                self.random = random
            }
        }
    }

    /// An outcome whose write failed for a passing storage fault.
    struct HeldOutcome {
        var write: OutcomeWrite
        /// Failed writes so far.
        var failures: Int
        /// Unix ms (the worker's clock) of the next write.
        var nextAttemptAt: Int64
        /// A write of it is in the writer now.
        var writing = false
        /// A claim took its job back while it was held (its lease ran out) and that was logged:
        /// said once, not at every lease of a long outage.
        var reclaimLogged = false
    }

    /// What an outcome's transaction did, to act on once it committed: its counts, and the lines
    /// that say so. Logged after the commit, not in the body: a body a full volume refuses at
    /// `COMMIT` runs again at every retry of the held outcome, and a line written there said a
    /// job was dead-lettered (or a device deleted) at each try while nothing was stored.
    struct OutcomeWritten: Sendable {
        var counts = Counters()
        var notes: [Note] = []

        /// One line of the log, at `level`.
        struct Note: Sendable {
            var level: Logger.Level
            var message: String
            var metadata: [String: String]
        }

        /// Writes the notes to `log`, in order.
        func log(to log: Logger) {
            for note in notes { log.write(note.level, note.message, note.metadata) }
        }
    }

    let storage: any Storage
    /// `storage.pushAudience`, read once: nil, a device is always read again before a send that
    /// waited.
    let pushAudience: PushAudienceChange?
    /// `storage.pushRotations`, read once: the token rotations that moved jobs in this storage
    /// (ADR 0014); a change between a job's device read and its send looks the job row up again.
    let pushRotations: PushJobRotation.Count
    /// `storage.jobClaimHorizon`, read once: when a claim can find nothing, the claim after a send
    /// is left out (nil: always made).
    let claimHorizon: JobClaimHorizon?
    let providers: PushProviders
    let presence: (any PresenceStore)?
    let clock: any Clock
    let jitter: @Sendable () -> Double
    let configuration: Configuration
    let queue = DispatchQueue(label: "herald.delivery")
    let counters = Mutex(Counters())
    /// PU-5a: stops device deletion when one provider rejects nearly every token alike.
    public let massDeletionGuard: MassDeletionGuard
    /// OP-3: which providers answer no request (degraded), per provider and app as the guard.
    public let providerHealth: ProviderHealth
    /// Told of every claim, so the API's calls wait while this worker is far behind (issue 17);
    /// `/metrics` shows it.
    public let backlog: PushBacklog?
    let log: Logger
    // Confined to `queue`.
    var state = State.idle
    // Made by `start()`: a dispatch source must not be released without ever having run.
    var timer: DispatchSourceTimer?
    var inFlight = 0
    /// A poll asked for a claim that no write has made yet: the worker's next write makes it.
    var claimWanted = false
    /// Claimed jobs whose send has not ended (their outcome is not known yet): what
    /// `maxInFlight` bounds. Read by the worker's write when it claims, so streams freed while
    /// that write waited for the writer are claimed for too.
    let sending = Atomic<Int>(0)
    /// Polling (between `start()` and `stop(deadline:)`): jobs may be leased at insert to this
    /// worker (ADR 0007). Read in the API's write units, off `queue`.
    let handoffOpen = Atomic<Bool>(false)
    /// Jobs leased at insert whose unit committed, waiting for `queue` to send them.
    let handed = Mutex<[Handed]>([])
    /// Jobs leased at insert without a slot (taken against `leasedAtInsertBacklog`), committed or
    /// not yet: what `waitingHanded` holds past `waitingHead`, plus those still in their unit.
    let backlogged = Atomic<Int>(0)
    /// Committed jobs leased at insert that wait for a slot, oldest first from `waitingHead`
    /// (taken from the front without shifting the rest each time). Confined to `queue`.
    var waitingHanded: [Handed] = []
    var waitingHead = 0
    /// Jobs from `waitingHanded` that hold a slot now and wait for their devices to be read again
    /// (`sendWaited`), oldest first; confined to `queue`. One such read runs at a time
    /// (`waitedReading`): reads end in any order, and the backlog goes out oldest first (ADR 0007).
    var waitedToRead: [Prepared] = []
    var waitedReading = false
    /// Outcomes held for writing again, by job id; each keeps its slot in `inFlight`.
    var heldOutcomes: [Int64: HeldOutcome] = [:]
    // Set while `stop` waits; signalled when `inFlight` reaches 0.
    var drained: DispatchSemaphore?
    // A full disk fails every poll (4 a second): one line per 30 s says as much.
    var claimFailureLog = LogThrottle()
    // Receipt rounds fail as often (every second) while storage is down: the same bound.
    var receiptClaimFailureLog = LogThrottle()
    /// A provider's refused certificate fails every push (ADR 0018): one line per 30 s. Written
    /// from the provider's threads and the test push route, hence the lock (failures only).
    let certificateRejectionLog = Mutex(LogThrottle())
    /// Outcomes waiting for the worker's next write (`flush`); each keeps its slot.
    var pendingOutcomes: [PendingOutcome] = []
    /// The worker's writes (outcomes, a claim, or both) in the writer: at most `maxWrites`.
    var writes = 0
    /// Two: while one write waits behind the API's, the next gathers what finished meanwhile and
    /// queues too, so the worker has a write in each turn of the writer's queue. With one, the
    /// choke point's worker pushed a third fewer per second than with the claim and the
    /// outcomes on writes of their own.
    static let maxWrites = 2
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
    ///   - providerHealth: shared with `/readyz` and `/metrics` through `providerHealth`.
    ///   - jitter: a uniform value in `0..<1` per retry, scaling the backoff (full jitter); tests
    ///     pass a constant.
    ///   - backlog: told what each claim leased (the `Notifier`'s pacing); nil: nobody paces.
    public init(storage: any Storage, providers: PushProviders, presence: (any PresenceStore)? = nil,
                clock: any Clock = SystemClock(), configuration: Configuration = Configuration(), log: Logger = .silent,
                massDeletionGuard: MassDeletionGuard = MassDeletionGuard(), providerHealth: ProviderHealth = ProviderHealth(),
                backlog: PushBacklog? = nil,
                jitter: @escaping @Sendable () -> Double = {
                    var random = PooledRandomNumberGenerator()
                    return Double.random(in: 0..<1, using: &random)
                }) {
        self.storage = storage
        self.pushAudience = storage.pushAudience
        self.pushRotations = storage.pushRotations
        self.claimHorizon = storage.jobClaimHorizon.flatMap { $0.kind == DeliveryJobPayload.kind ? $0 : nil }
        self.providers = providers
        self.presence = presence
        self.clock = clock
        self.jitter = jitter
        self.configuration = configuration
        self.log = log
        self.massDeletionGuard = massDeletionGuard
        self.providerHealth = providerHealth
        self.backlog = backlog
    }

    /// Tells the backlog what a committed claim of at most `limit` jobs leased.
    func noteClaim(_ claimed: [JobRecord], limit: Int) {
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
        let clock = self.clock, lease = configuration.leaseMilliseconds, rotations = pushRotations
        queue.async { [self] in
            guard state != .stopped else { return completion(.success(Round())) }
            writeHeld { [self] written in
                storage.write({ tx in
                    // Before the claim: a rotation that moves a claimed job counts after it (ADR 0014).
                    let generation = rotations.current
                    return (try tx.jobs.claim(kind: DeliveryJobPayload.kind, limit: limit, leaseMilliseconds: lease, now: clock.unixMilliseconds),
                            generation)
                }) { [self] result in
                    queue.async { [self] in
                        switch result {
                        case .failure(let error):
                            // Its claim may have set the horizon from rows it rolled back.
                            claimHorizon?.forget()
                            completion(.failure(error))
                        case .success(let (claimed, generation)):
                            noteClaim(claimed, limit: limit)
                            let jobs = adoptHeld(claimed)
                            let round = Round(claimed: claimed.count, held: claimed.count - jobs.count, heldWritten: written)
                            guard !jobs.isEmpty else { return completion(.success(round)) }
                            let tally = Mutex(round)
                            let left = Mutex(jobs.count)
                            send(jobs, generation: generation) { recorded in
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
    func logClaimFailure(_ error: any Error) {
        logThrottled(&claimFailureLog, "claiming push jobs failed", error)
    }

    /// Logs a failed receipt claim at most once per 30 s (on `queue`), as `logClaimFailure` does.
    func logReceiptClaimFailure(_ error: any Error) {
        logThrottled(&receiptClaimFailureLog, "claiming push receipt jobs failed", error)
    }

    private func logThrottled(_ throttle: inout LogThrottle, _ message: String, _ error: any Error) {
        guard let held = throttle.admit(now: clock.monotonicNanoseconds) else { return }
        var metadata = ["error": "\(error)"]
        if held > 0 { metadata["repeated"] = String(held) }
        log.error(message, metadata)
    }

    /// Asks for a claim: made by the worker's next write, with the outcomes waiting by then (see
    /// `flush`), so under load a claim costs no transaction of its own.
    func poll() {
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
    /// The devices of the whole batch are read in one snapshot (`deliverReadingDevices`: one read
    /// transaction per claim, not one per job: a claim of 64 jobs paid 64 transactions before).
    /// - Parameters:
    ///   - counted: the claim already counted the jobs in `sending` (in its write, so the
    ///     worker's next write does not claim their slots again).
    ///   - generation: `pushRotations.current` read in the claim's write, before it
    ///     claimed (ADR 0014: a rotation since may have moved the jobs).
    func send(_ jobs: [JobRecord], counted: Bool = false, generation: UInt64, recorded: @escaping @Sendable (Recorded) -> Void) {
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
            if let prepared = prepare(job, generation: generation, done: done) { ready.append(prepared) }
        }
        deliverReadingDevices(ready)
    }

    /// Reads the devices of `ready` (and whether their users have push switched off) in one
    /// snapshot, then delivers each: to its device as read now (nil: deleted since it was queued),
    /// or skipped for the switch.
    ///
    /// The devices of the whole batch are read in one snapshot and one statement, not one read
    /// transaction per job.
    /// - Parameter then: called (on the storage's thread) once every job of `ready` was handed to
    ///   `deliver`, or settled for a failed read.
    func deliverReadingDevices(_ ready: [Prepared], then: (@Sendable () -> Void)? = nil) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !ready.isEmpty else { then?(); return }
        let batch = ready
        let ids = batch.map(\.payload.deviceID)
        let now = clock.unixMilliseconds
        // Before the read: a write counted after it gives the send back from its stream queue.
        let audience = pushAudience?.current
        storage.read({ tx in
            let found = try tx.devices.find(ids: ids, now: now)
            var byID: [String: DeviceRecord] = [:]
            byID.reserveCapacity(found.count)
            for device in found { byID[device.id] = device }
            // NO-4: a user may turn push off while their push waits (a retry through an outage):
            // the switch is read again here, in the same snapshot, one statement per app.
            var usersByApp: [String: Set<String>] = [:]
            for device in found { usersByApp[device.app, default: []].insert(device.userID) }
            var switchedOff: [String: Set<String>] = [:]
            for (app, users) in usersByApp {
                let off = try tx.preferences.switchedOff(app: app, userIDs: Array(users))
                if !off.isEmpty { switchedOff[app] = off }
            }
            return ids.map { id in
                byID[id].map { device in (device, switchedOff[device.app]?.contains(device.userID) == true) }
            }
        }) { [self] result in
            switch result {
            case .failure(let error):
                for item in batch {
                    finish(item.job, .retry(afterSeconds: nil, reason: "database: \(error)"), device: nil, origin: item.payload.origin, done: item.done)
                }
            case .success(let devices):
                for (item, found) in zip(batch, devices) { deliver(item, device: found?.0, pushDisabled: found?.1 ?? false, audience: audience) }
            }
            then?()
        }
    }

    // MARK: One job

    /// A claimed job whose payload was read and that is still to be sent: its device comes next.
    /// Its `done` is called once, on `queue`, when its outcome was written (or held, or given up):
    /// the outcomes of one group commit reach `queue` in one hop, not one each.
    ///
    /// A class for the reason `Handed` is one: passed along and captured by the send's
    /// completion, it is one reference instead of a job and a payload copied field by field.
    final class Prepared: Sendable {
        let job: JobRecord
        let payload: DeliveryJobPayload
        /// `pushRotations.current` before the job's device was read (ADR 0014).
        let generation: UInt64
        /// The user the push was made for: the owner of the device its inserting unit read (a job
        /// leased at insert), else a planned push's recipient or a plain push's `user_id`; nil: not
        /// known (a plain push stored before `user_id` was written).
        /// A device of another user now (its token moved, DV-1) does not get it.
        let owner: String?
        /// Given back by the transport once already (`PushClassification.audienceChanged`) and its
        /// device read again: it is not given back a second time.
        let rechecked: Bool
        let done: @Sendable (Recorded) -> Void

        init(job: JobRecord, payload: DeliveryJobPayload, generation: UInt64, owner: String? = nil, rechecked: Bool = false,
             done: @escaping @Sendable (Recorded) -> Void) {
            self.job = job
            self.payload = payload
            self.generation = generation
            self.owner = owner ?? payload.origin?.userID ?? payload.userID
            self.rechecked = rechecked
            self.done = done
        }
    }

    /// Reads a claimed job's payload and settles at once what needs no device (an unreadable
    /// payload, an expired or acknowledged notification: recorded, `done` called later).
    /// - Returns: the job to look its device up for, or nil when it was settled here.
    func prepare(_ job: JobRecord, generation: UInt64, done: @escaping @Sendable (Recorded) -> Void) -> Prepared? {
        let payload: DeliveryJobPayload
        do {
            payload = try DeliveryJobPayload.decode(job.payloadJSON)
        } catch {
            finish(job, .deadLetter(reason: "unreadable job payload: \(error)"), device: nil, origin: nil, done: done)
            return nil
        }
        return screen(job, payload: payload, generation: generation, done: done)
    }

    /// Settles at once a job that must not be sent (an expired or acknowledged notification).
    /// - Returns: the job to send, or nil when it was settled here.
    /// - Parameters:
    ///   - generation: `pushRotations.current` before its device was read.
    ///   - owner: the user of the device its inserting unit read (`Prepared.owner`); nil: the
    ///     planned push's recipient, if any.
    func screen(_ job: JobRecord, payload: DeliveryJobPayload, generation: UInt64, owner: String? = nil,
                done: @escaping @Sendable (Recorded) -> Void) -> Prepared? {
        let origin = payload.origin
        if payload.notification.hasExpired(atMilliseconds: clock.unixMilliseconds) {
            // NO-2: an expired notification is never sent, however late its job runs.
            skip(job, origin: origin, deviceID: payload.deviceID, outcome: .expired, note: "expired", done: done)
            return nil
        }
        if let origin, isAcknowledged(origin) {
            // NO-2 `unless_acked`: the session acknowledged the live event within its window.
            skip(job, origin: origin, deviceID: payload.deviceID, outcome: .suppressedAcked, note: AcknowledgedPushes.note, done: done)
            return nil
        }
        return Prepared(job: job, payload: payload, generation: generation, owner: owner, done: done)
    }

    /// Sends one prepared job to its device (nil: deleted since it was queued) and records the
    /// outcome; `done` is called once, on `queue`, after its outcome's transaction.
    ///
    /// A device not found, or read before a token rotation that may have moved the job
    /// (`pushRotations` counted one), is looked up again through the job row first
    /// (`resolveRotation`, ADR 0014); with neither, as on nearly every send, nothing more is read.
    /// - Parameters:
    ///   - pushDisabled: the device's user has the global push switch off now.
    ///   - resolved: `found` was read after the job row (no second look).
    ///   - audience: `pushAudience`'s count before `found` was read (nil: no counter); with it,
    ///     the transport gives the push back unsent when a write is counted while it
    ///     waits for an HTTP/2 stream, and it is read again once (`SendByDeadline.audience`).
    func deliver(_ prepared: Prepared, device found: DeviceRecord?, pushDisabled: Bool = false, resolved: Bool = false,
                 audience: UInt64? = nil) {
        if !resolved, found == nil || prepared.generation != pushRotations.current {
            return resolveRotation(prepared, device: found, pushDisabled: pushDisabled)
        }
        let job = prepared.job, payload = prepared.payload, done = prepared.done
        let deviceID = payload.deviceID
        let origin = payload.origin
        let clock = self.clock
        switch found {
        case nil:
            // Deleted since the job was queued (logout, dead token): nothing to send.
            skip(job, origin: origin, deviceID: deviceID, outcome: .skippedSession, note: "device_gone", done: done)
        case let device? where prepared.owner.map { $0 != device.userID } ?? false:
            // Its token moved to another user since (DV-1: a sign-in on the same install): that
            // user must not get a push written for the one before.
            skip(job, origin: origin, deviceID: deviceID, outcome: .skippedSession, note: "device_owner_changed", done: done)
        case .some where pushDisabled:
            // NO-4: turned off after planning; a direct push too, as `POST /v1/push` skips such users.
            skip(job, origin: origin, deviceID: deviceID, outcome: .skippedPreferences, note: "push_disabled", done: done)
        case let device? where !device.sessionActive:
            // The session ended or passed its expiry since the push was made (DV-4): its devices
            // get no pushes, a plain push's neither (`POST /v1/push` skips such a device too).
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
            let watched = prepared.rechecked ? nil : audience.flatMap { pushAudience?.mark(at: $0) }
            let sendBy = job.leaseUntil.map { SendByDeadline(leaseUntil: $0, leaseMilliseconds: configuration.leaseMilliseconds, audience: watched) }
            providers.send(payload.notification, to: target, pushID: apnsID, app: device.app, sendBy: sendBy) { [self] classification in
                // Read from `prepared` here rather than captured one by one: the closure's
                // context then holds one reference for the job and its payload (issue 17).
                if case .notSent = classification.outcome, classification == .audienceChanged { return readAgain(prepared) }
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
                let guarded = Self.healthKey(provider: device.provider, app: device.app)
                if countsTowardHealth(provider: device.provider, app: device.app) { noteHealth(provider: guarded, classification) }
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
                case .deadLetter(let reason) where classification.isConfigurationError && providers.confirmsLater(provider, app: device.app):
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

    /// A push the transport gave back from its stream queue (`PushClassification.audienceChanged`):
    /// a device may have left pushes while it waited (a delete answered meanwhile). Its device is
    /// read again, as a claim's is, and it is sent (or skipped) without being given back again.
    private func readAgain(_ prepared: Prepared) {
        let again = Prepared(job: prepared.job, payload: prepared.payload, generation: prepared.generation, owner: prepared.owner,
                             rechecked: true, done: prepared.done)
        queue.async { [self] in deliverReadingDevices([again]) }
    }

    /// NO-2 `unless_acked`: whether the planned push's session acknowledged the live event it
    /// waits for. Only a push with both an `ack_event_id` and a session can be acknowledged.
    func isAcknowledged(_ origin: DeliveryJobPayload.Origin) -> Bool {
        guard let presence, let event = origin.ackEventID, let session = origin.sessionID else { return false }
        return presence.hasAcknowledged(userID: origin.userID, sessionID: session, id: event)
    }

    /// Completes a planned push that must not be sent, recording why in its delivery record.
    func skip(_ job: JobRecord, origin: DeliveryJobPayload.Origin?, deviceID: String, outcome: DeliveryOutcome, note: String,
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

    /// Logs a failed outcome transaction; one that failed because the job is no longer this
    /// lease's is another claim's to record, or gone, so it is only a warning.
    func logFailure(_ message: String, job: JobRecord, error: any Error) {
        if error is LeaseLost {
            // The fence cannot tell the two apart without a read, and this path is rare.
            log.warning("push outcome not recorded: the job is no longer under this lease (it ran out and another claim took the job, or the job was deleted with its app or device)",
                        ["job_id": String(job.id)])
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
    func finish(_ job: JobRecord, _ outcome: PushOutcome, device: DeviceRecord?, origin: DeliveryJobPayload.Origin?,
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
    final class PendingOutcome: Sendable {
        let write: OutcomeWrite
        let done: @Sendable (Recorded) -> Void

        init(write: OutcomeWrite, done: @escaping @Sendable (Recorded) -> Void) {
            self.write = write
            self.done = done
        }
    }

    /// What the worker's combined write returns: each outcome's counts (nil: its lease was lost),
    /// the claim's limit (0: no slot was free) and the jobs it leased.
    struct Written: Sendable {
        var outcomes: [OutcomeWritten?]
        var want: Int
        var claimed: [JobRecord]
        /// `pushRotations.current` before the claim.
        var generation: UInt64
    }
}
