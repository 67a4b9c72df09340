import Dispatch
import Foundation
import Synchronization

/// Outcomes: the worker's writes (every outcome waiting plus the claim a poll asked for, one
/// transaction), the held outcomes a passing storage fault left (RL-2), and the slots and counts
/// an outcome frees.
extension DeliveryWorker {
    // MARK: Held outcomes

    /// The claimed jobs to send: those whose outcome is held here are not (their push went);
    /// the held outcome takes the new claim's lease and is written at the next chance.
    func adoptHeld(_ claimed: [JobRecord]) -> [JobRecord] {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !heldOutcomes.isEmpty else { return claimed }
        return claimed.filter { job in
            guard heldOutcomes[job.id] != nil else { return true }
            heldOutcomes[job.id]!.write.lease = job.lease
            heldOutcomes[job.id]!.nextAttemptAt = clock.unixMilliseconds
            if !heldOutcomes[job.id]!.reclaimLogged {
                heldOutcomes[job.id]!.reclaimLogged = true
                log.warning("a push job came back while its outcome was held; the outcome is kept, the push not sent again",
                            ["job_id": String(job.id), "attempt": String(job.attempts)])
            }
            return false
        }
    }

    /// Writes the held outcomes whose backoff has passed (every one with `force`), then calls
    /// `completion` on `queue` with how many were written.
    func writeHeld(force: Bool = false, completion: @escaping @Sendable (Int) -> Void) {
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
    func settleHeld(_ write: OutcomeWrite, _ result: Result<OutcomeWritten, any Error>) -> Bool {
        dispatchPrecondition(condition: .onQueue(queue))
        let id = write.job.id
        guard var entry = heldOutcomes[id] else { return false }
        switch result {
        case .success(let written):
            heldOutcomes[id] = nil
            add(written.counts)
            written.log(to: log)
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
    func outcomeBackoff(afterFailures failures: Int) -> Int64 {
        let base = max(configuration.outcomeRetryBaseMilliseconds, 1), cap = configuration.outcomeRetryCapMilliseconds
        let doublings = min(max(failures - 1, 0), 30)
        return min(base << Int64(doublings), cap)
    }

    /// Whether a failed outcome write may succeed later: the storage was full, busy, read-only
    /// or unavailable for a while (RL-2), not refused for good.
    static func passes(_ error: any Error) -> Bool {
        switch error as? StorageError {
        case .diskFull?, .busy?, .readOnly?, .unavailable?, .stalled?: true
        default: false
        }
    }

    func add(_ counts: Counters) {
        counters.withLock { counters in
            counters.delivered += counts.delivered
            counters.retried += counts.retried
            counters.dead += counts.dead
            counters.devicesDeleted += counts.devicesDeleted
        }
    }

    /// An outcome is recorded (or given up): wakes `stop` when the last one is.
    func finished() {
        dispatchPrecondition(condition: .onQueue(queue))
        inFlight -= 1
        assert(inFlight >= 0, "more outcomes than claimed jobs")
        if inFlight == 0 { drained?.signal() }
    }

    /// A send ended (its outcome is known, to be written): its slot is free. While polling, the
    /// worker's next write claims for it, so the next jobs go out while this outcome waits for
    /// the writer instead of after it was committed (issue 17: under the API's writes a job held
    /// its slot for two turns of the writer, which capped the choke point's pushes).
    func sendEnded() {
        sending.subtract(1, ordering: .relaxed)
        queue.async { [self] in afterSendEnded() }
    }

    /// `sendEnded`'s work on `queue`, once the slot was given back.
    func afterSendEnded() {
        dispatchPrecondition(condition: .onQueue(queue))
        // Jobs leased at insert first: they are this worker's already, a claim would take others.
        if state == .polling { startWaiting() }
        if state == .polling, !nothingClaimable() { claimWanted = true }
        flush()
    }

    /// Whether a claim now would find no job (issue 17): the storage's horizon says none is due
    /// before a time still to come. With every push leased at insert, the claim after each send
    /// found nothing and cost the writer ~5k instructions a notification. The poll's claim is
    /// made whatever this says (`poll`), so a job the horizon cannot see (queued by another
    /// process) waits one poll at most, as on an idle server.
    func nothingClaimable() -> Bool {
        guard let claimHorizon else { return false }
        return claimHorizon.isQuiet(at: clock.unixMilliseconds)
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
    func flush() {
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
        let lease = configuration.leaseMilliseconds, clock = self.clock, rotations = pushRotations
        let counted = ClaimCount()
        storage.write({ tx in
            var results: [OutcomeWritten?] = []
            results.reserveCapacity(bodies.count)
            for body in bodies {
                do {
                    results.append(try body(tx))
                } catch is LeaseLost {
                    results.append(nil)
                }
            }
            let want = claim ? max(0, maxInFlight - self.sending.load(ordering: .relaxed)) : 0
            // Before the claim: a rotation that moves a claimed job counts after it (ADR 0014).
            let generation = rotations.current
            let claimed = want > 0
                ? try tx.jobs.claim(kind: DeliveryJobPayload.kind, limit: want, leaseMilliseconds: lease, now: clock.unixMilliseconds)
                : []
            // Counted here, before the other write of the worker can run its claim; taken back
            // below if this transaction does not commit.
            self.sending.add(claimed.count, ordering: .relaxed)
            counted.value.store(claimed.count, ordering: .relaxed)
            return Written(outcomes: results, want: want, claimed: claimed, generation: generation)
        }) { [self] result in
            switch result {
            case .success(let written):
                if written.want > 0 { noteClaim(written.claimed, limit: written.want) }
                var total = Counters()
                for (item, outcome) in zip(batch, written.outcomes) {
                    guard let outcome else {
                        logFailure("recording a push outcome failed", job: item.write.job, error: LeaseLost())
                        continue
                    }
                    outcome.log(to: log)
                    let counts = outcome.counts
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
                        send(jobs, counted: true, generation: written.generation) { _ in }
                        // A full claim may have left more due; a short one took all that was due
                        // (a wake meanwhile still asks again: its jobs may have come after).
                        if written.claimed.count == written.want { claimWanted = true }
                    }
                    flush()
                }
            case .failure(let error) where Self.passes(error):
                sending.subtract(counted.value.load(ordering: .relaxed), ordering: .relaxed)
                // Its claim may have set the horizon from rows it rolled back.
                if claim { claimHorizon?.forget() }
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
                if claim {
                    claimHorizon?.forget()
                    queue.async { [self] in logClaimFailure(error) }
                }
                for item in batch { writeOne(item.write, done: item.done) }
                next()
            }
        }
    }

    /// Writes one outcome in its own transaction, then calls `done` on `queue`; holds it when the
    /// write fails for a passing fault.
    func writeOne(_ write: OutcomeWrite, done: @escaping @Sendable (Recorded) -> Void) {
        let job = write.job
        storage.write(outcomeTransaction(write)) { [self] result in
            switch result {
            case .success(let written):
                add(written.counts)
                written.log(to: log)
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

    /// The outcome's unit of work, fenced by `write.lease`. - Returns: the counts it adds and the
    /// lines to log, both once committed.
    func outcomeTransaction(_ write: OutcomeWrite) -> @Sendable (any StorageTransaction) throws -> OutcomeWritten {
        let policy = configuration.retry
        let receiptDelay = configuration.receiptDelayMilliseconds
        let clock = self.clock
        // The facts as one reference, read inside: captured field by field, each was a copy.
        let facts = write.facts, lease = write.lease
        return { tx in
            let job = facts.job, outcome = facts.outcome, device = facts.device, origin = facts.origin, receipt = facts.receipt
            let deviceID = device?.id ?? "", random = facts.random
            let cause = { (reason: String) in DeadLetterCause(provider: device?.provider, reason: DeadLetterCause.code(of: reason)) }
            let now = clock.unixMilliseconds
            var counts = Counters()
            var notes: [OutcomeWritten.Note] = []
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
                    notes.append(.init(level: .info, message: "deleted a device its provider reported invalid",
                                       metadata: ["device_id": device?.id ?? "", "reason": reason]))
                }
            case .retry(_, let reason), .refreshAuthAndRetryOnce(let reason), .notSent(_, let reason), .busy(let reason):
                // The provider already used its one auth refresh; what is left is a plain retry.
                // An attempt that never reached the provider does not count toward the cap.
                var retryAfter: Int64?
                var attempt = JobAttempt.counted
                switch outcome {
                case .retry(let seconds?, _): retryAfter = Int64(seconds) * 1000
                case .notSent(let seconds, _):
                    attempt = .uncounted
                    retryAfter = seconds.map { Int64($0) * 1000 }
                case .busy: attempt = .turnedAway
                default: break
                }
                let counted = job.countedAttempts - (attempt == .counted ? 0 : 1)
                let elapsed = now - (job.firstAttemptAt ?? now)
                // Turned away for its turn (ADR 0024): a short wait, not the backoff its
                // turn-aways would grow while the origin stays busy; nor do they grow the backoff
                // of a real failure after them (`backoffAttempts`).
                let decision = if case .busy = outcome {
                    policy.decideBusy(elapsedMilliseconds: elapsed, random: random)
                } else {
                    policy.decide(attempts: job.backoffAttempts, countedAttempts: counted, elapsedMilliseconds: elapsed,
                                  retryAfterMilliseconds: retryAfter, random: random)
                }
                switch decision {
                case .retry(let delay):
                    try held(tx.jobs.retry(lease, runAt: now + delay, error: reason, attempt: attempt))
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
                    notes.append(.init(level: .warning, message: "push job dead after its last attempt",
                                       metadata: ["job_id": String(job.id), "reason": reason]))
                }
            case .expired:
                // NO-2, as `skip` records it (the worker takes that path; here for completeness).
                try held(tx.jobs.complete(lease, note: "expired"))
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .expired, detail: "expired", at: now)
            case .deadLetter(let reason):
                try held(tx.jobs.deadLetter(lease, error: reason, cause: cause(reason), now: now))
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .dead, detail: reason, at: now)
                counts.dead += 1
                notes.append(.init(level: .warning, message: "push job dead-lettered", metadata: ["job_id": String(job.id), "reason": reason]))
            }
            return OutcomeWritten(counts: counts, notes: notes)
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
