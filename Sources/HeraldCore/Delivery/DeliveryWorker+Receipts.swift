import Dispatch
import Foundation
import Synchronization

/// Receipts (PU-8a): a provider that confirms deliveries later (`PushReceiptProvider`, Expo) gets
/// a `push.receipt` job per accepted push, due `receiptDelayMilliseconds` after the send. The
/// worker claims due receipt jobs in rounds (at most `receiptBatchSize`), asks each provider about
/// all of its receipts at once, and records each verdict on its own job, fenced by its lease:
///
/// | receipt | what happens |
/// |---|---|
/// | ok | the job is done; a misconfigured provider is cleared |
/// | not there yet | asked again after `receiptRecheckMilliseconds` (not counted), until `receiptWindowMilliseconds` after the send: then done as `receipt_unavailable` |
/// | the token is dead (`DeviceNotRegistered`) | the device the push went to is deleted through the mass-deletion guard, unless it registered again after the send; a device that replaced it since (a token rotation, ADR 0014) is kept |
/// | not delivered, try again (`MessageRateExceeded`) | the push is queued again (same push id) after a backoff, at most `maximumResends` times, then dead-lettered; to the device that replaced the one it went to, if a rotation moved the receipt job |
/// | refused for good (`MessageTooBig`, `InvalidCredentials`, `MismatchSenderId`) | the receipt job is dead-lettered with the provider's reason; configuration errors also mark the provider misconfigured (devices are kept) |
/// | the receipt request failed (429, 5xx, transport) | the receipt job is retried with the usual backoff |
///
/// A dead receipt job that an operator retries (`POST /v1/jobs/retry`) sends its push again: the
/// provider's verdict on a receipt never changes, so a new send is the only useful retry.
extension DeliveryWorker {
    /// Starts a receipt round when none is running, a provider checks receipts, and
    /// `receiptPollMilliseconds` of real time have passed since the last one.
    func pollReceiptsIfDue() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !checkingReceipts, providers.hasReceiptProviders else { return }
        let now = DispatchTime.now()
        if let last = lastReceiptPoll,
           now.uptimeNanoseconds &- last.uptimeNanoseconds < UInt64(configuration.receiptPollMilliseconds) * 1_000_000 { return }
        lastReceiptPoll = now
        checkingReceipts = true
        runReceiptRound { [self] result in
            queue.async { [self] in
                checkingReceipts = false
                if case .failure(let error) = result { logReceiptClaimFailure(error) }
            }
        }
    }

    /// Runs one receipt round at the clock's now: claims due `push.receipt` jobs, asks their
    /// providers, records every verdict; returns once all are recorded. For tests and tools;
    /// production rounds run from the poll timer.
    ///
    /// - Returns: how many receipt jobs were claimed, and how many outcomes were not recorded.
    /// - Throws: the claim's `StorageError`.
    @discardableResult
    public func runReceiptsDue() async throws -> Round {
        try await withCheckedThrowingContinuation { continuation in
            runReceiptRound { continuation.resume(with: $0) }
        }
    }

    /// One receipt round; `completion` once every claimed job's outcome is recorded (any thread).
    func runReceiptRound(completion: @escaping @Sendable (Result<Round, any Error>) -> Void) {
        let clock = self.clock, lease = configuration.leaseMilliseconds, limit = max(1, configuration.receiptBatchSize)
        storage.write({ tx in
            try tx.jobs.claim(kind: PushReceiptJobPayload.kind, limit: limit, leaseMilliseconds: lease, now: clock.unixMilliseconds)
        }) { [self] result in
            let jobs: [JobRecord]
            switch result {
            case .failure(let error): return completion(.failure(error))
            case .success(let claimed): jobs = claimed
            }
            guard !jobs.isEmpty else { return completion(.success(Round())) }
            let tally = Mutex((round: Round(claimed: jobs.count), left: jobs.count))
            let recorded: @Sendable (Bool) -> Void = { wasRecorded in
                let finished: Round? = tally.withLock { state in
                    if !wasRecorded { state.round.unrecorded += 1 }
                    state.left -= 1
                    return state.left == 0 ? state.round : nil
                }
                if let finished { completion(.success(finished)) }
            }
            // By provider and app: each app's receipts are asked with its own provider (ADR 0006).
            var byProvider: [ReceiptGroup: [(JobRecord, PushReceiptJobPayload)]] = [:]
            for job in jobs {
                let payload: PushReceiptJobPayload
                do {
                    payload = try PushReceiptJobPayload.decode(job.payloadJSON)
                } catch {
                    recordReceipt(job, nil, .deadLetter(reason: "unreadable receipt job payload: \(error)", configuration: false), done: recorded)
                    continue
                }
                if job.attempts == 1, job.lastError != nil {
                    // First claim since an operator retried it from the dead letters: send again.
                    recordReceipt(job, payload, .resend(reason: "retried_dead_receipt", afterMilliseconds: 0, counted: false), done: recorded)
                } else if let provider = PushProviderID(rawValue: payload.provider) {
                    byProvider[ReceiptGroup(provider: provider, app: payload.app ?? "default"), default: []].append((job, payload))
                } else {
                    recordReceipt(job, payload, .finish(note: "receipt_unchecked: unknown provider \(payload.provider)"), done: recorded)
                }
            }
            for (key, group) in byProvider {
                let provider = key.provider
                var seen = Set<String>()
                let ids = group.map(\.1.receiptID).filter { seen.insert($0).inserted }
                let asked = providers.checkReceipts(provider: provider, ids: ids, app: key.app) { [self] answer in
                    // A receipt request is one of the provider's requests (ADR 0015): unanswered, it counts.
                    if countsTowardHealth(provider: provider.rawValue, app: key.app) {
                        noteHealth(provider: Self.healthKey(provider: provider.rawValue, app: key.app), answer)
                    }
                    for (job, payload) in group { recordReceipt(job, payload, verdict(for: job, payload, answer), done: recorded) }
                }
                if !asked {
                    for (job, payload) in group {
                        recordReceipt(job, payload, .finish(note: "receipt_unchecked: no \(provider) adapter checks receipts now"), done: recorded)
                    }
                }
            }
        }
    }

    /// Receipt jobs asked about together: one provider of one app.
    struct ReceiptGroup: Hashable {
        var provider: PushProviderID
        var app: String
    }

    /// What to record for one receipt job.
    enum ReceiptVerdict: Sendable {
        /// Done, with a note (`receipt_ok`, `receipt_unavailable…`).
        case finish(note: String)
        /// Not there yet: ask again later; the attempt does not count.
        case recheck
        /// The check itself failed: retry the receipt job with backoff (floor in ms).
        case retryCheck(reason: String, afterMilliseconds: Int64?)
        /// The token is dead.
        case deleteDevice(reason: String)
        /// The push was not delivered: queue it again after `afterMilliseconds`.
        case resend(reason: String, afterMilliseconds: Int64, counted: Bool)
        /// Give up; `configuration`: the provider's credentials are wrong.
        case deadLetter(reason: String, configuration: Bool)
    }

    /// The verdict for one job from its provider's answer.
    func verdict(for job: JobRecord, _ payload: PushReceiptJobPayload, _ answer: PushReceiptAnswer) -> ReceiptVerdict {
        switch answer {
        case .failed(let classification):
            switch classification.outcome {
            case .deadLetter(let reason): return .deadLetter(reason: reason, configuration: classification.isConfigurationError)
            case .retry(let seconds, let reason), .notSent(let seconds, let reason):
                return .retryCheck(reason: reason, afterMilliseconds: seconds.map { Int64($0) * 1000 })
            case .refreshAuthAndRetryOnce(let reason), .deleteDevice(let reason, _):
                return .retryCheck(reason: reason, afterMilliseconds: nil)
            case .busy(let reason):
                return .retryCheck(reason: reason, afterMilliseconds: RetryPolicy.busyMilliseconds)
            case .delivered, .expired:
                return .retryCheck(reason: "receipt_request_inconclusive", afterMilliseconds: nil)
            }
        case .receipts(let receipts):
            guard let classification = receipts[payload.receiptID] else {
                if clock.unixMilliseconds - payload.sentAt >= configuration.receiptWindowMilliseconds {
                    return .finish(note: "receipt_unavailable: no receipt within \(configuration.receiptWindowMilliseconds / 1000) s of the send")
                }
                return .recheck
            }
            switch classification.outcome {
            case .delivered: return .finish(note: "receipt_ok")
            // Never sent, and never to be (NO-2): nothing to send again.
            case .expired: return .finish(note: "expired")
            case .deleteDevice(let reason, _): return .deleteDevice(reason: reason)
            case .deadLetter(let reason): return .deadLetter(reason: reason, configuration: classification.isConfigurationError)
            case .retry(let seconds, let reason), .notSent(let seconds, let reason):
                let resends = (payload.delivery.resends ?? 0) + 1
                let decision = configuration.retry.decide(afterAttempt: resends, retryAfterMilliseconds: seconds.map { Int64($0) * 1000 },
                                                          random: jitter())
                let delay: Int64 = if case .retry(let after) = decision { after } else { configuration.retry.capMilliseconds }
                return .resend(reason: reason, afterMilliseconds: delay, counted: true)
            case .refreshAuthAndRetryOnce(let reason):
                return .resend(reason: reason, afterMilliseconds: configuration.retry.baseMilliseconds, counted: true)
            case .busy(let reason):
                return .resend(reason: reason, afterMilliseconds: RetryPolicy.busyMilliseconds, counted: false)
            }
        }
    }

    /// Records one receipt job's verdict in one transaction fenced by its lease, then `done`.
    func recordReceipt(_ job: JobRecord, _ payload: PushReceiptJobPayload?, _ verdict: ReceiptVerdict,
                       done: @escaping @Sendable (Bool) -> Void) {
        let clock = self.clock, policy = configuration.retry, log = self.log
        let recheck = configuration.receiptRecheckMilliseconds, maximumResends = configuration.maximumResends
        let provider = payload?.provider
        let origin = payload?.delivery.origin
        let deviceID = payload?.delivery.deviceID ?? ""
        // The token the receipt judges is the one the push went to; a rotation since moved the
        // resend (`delivery`) to the device that replaced it, never this verdict (ADR 0014).
        let sentDeviceID = payload?.sentDeviceID ?? deviceID
        let random = jitter()
        // Asked before the transaction, like a send's rejection: the guard counts every verdict.
        var verdict = verdict
        switch verdict {
        case .deleteDevice(let reason):
            if case .keep(let justTripped) = massDeletionGuard.verdict(provider: provider ?? "", reason: reason) {
                if justTripped {
                    log.error("provider rejects nearly every token alike: not deleting devices (check the credentials)",
                              ["provider": provider ?? "", "reason": reason])
                }
                verdict = .deadLetter(reason: "provider_misconfigured: \(reason)", configuration: false)
            }
        case .finish(let note) where note == "receipt_ok":
            massDeletionGuard.recordOther(provider: provider ?? "", delivered: true)
        case .deadLetter(let reason, true):
            noteMisconfiguration(provider: provider ?? "", reason: reason)
        default: break
        }
        let finalVerdict = verdict
        // Counted and logged once committed, as a send's outcome (`OutcomeWritten`).
        storage.write({ tx in
            let now = clock.unixMilliseconds
            var written = OutcomeWritten()
            func cause(_ reason: String) -> DeadLetterCause { DeadLetterCause(provider: provider, reason: DeadLetterCause.code(of: reason)) }
            switch finalVerdict {
            case .finish(let note):
                try held(tx.jobs.complete(job.lease, note: note))
            case .recheck:
                try held(tx.jobs.retry(job.lease, runAt: now + recheck, error: "receipt_not_ready", countsAttempt: false))
            case .retryCheck(let reason, let floor):
                let elapsed = now - (job.firstAttemptAt ?? now)
                switch policy.decide(attempts: job.attempts, countedAttempts: job.countedAttempts, elapsedMilliseconds: elapsed,
                                     retryAfterMilliseconds: floor, random: random) {
                case .retry(let delay):
                    try held(tx.jobs.retry(job.lease, runAt: now + delay, error: reason))
                case .giveUp, .budgetSpent:
                    try held(tx.jobs.deadLetter(job.lease, error: "\(reason) (receipt check gave up after \(job.attempts) attempts)",
                                                cause: cause(reason), now: now))
                }
            case .deleteDevice(let reason):
                // A device registered again after the send keeps its new token (PU-5c).
                let deleted = try tx.devices.deleteInvalid(id: sentDeviceID, invalidSince: payload?.sentAt)
                let note = deleted ? "device_deleted: \(reason)" : "token_rejected_but_reregistered: \(reason)"
                try held(tx.jobs.complete(job.lease, note: note))
                try Self.record(tx, origin: origin, deviceID: sentDeviceID, jobID: job.id, outcome: .failed, detail: note, at: now)
                if deleted {
                    written.counts.devicesDeleted += 1
                    written.notes.append(.init(level: .info, message: "deleted a device its provider's receipt reported invalid",
                                               metadata: ["device_id": sentDeviceID, "reason": reason]))
                }
            case .resend(let reason, let delay, let counted):
                guard var delivery = payload?.delivery else { throw LeaseLost() }
                if counted {
                    let resends = (delivery.resends ?? 0) + 1
                    guard resends <= maximumResends else {
                        let error = "\(reason) (receipt after \(resends - 1) resends)"
                        try held(tx.jobs.deadLetter(job.lease, error: error, cause: cause(reason), now: now))
                        try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .dead, detail: error, at: now)
                        written.counts.dead += 1
                        return written
                    }
                    delivery.resends = resends
                }
                try held(tx.jobs.complete(job.lease, note: "resent: \(reason)"))
                try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: delivery.jsonText(), app: job.app, runAt: now + delay, now: now)
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .retrying,
                                detail: "\(reason); sent again in \(delay) ms", at: now)
                written.counts.retried += 1
            case .deadLetter(let reason, _):
                try held(tx.jobs.deadLetter(job.lease, error: reason, cause: cause(reason), now: now))
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .dead, detail: reason, at: now)
                written.counts.dead += 1
                written.notes.append(.init(level: .warning, message: "push receipt dead-lettered", metadata: ["job_id": String(job.id), "reason": reason]))
            }
            return written
        }) { [self] result in
            switch result {
            case .success(let written):
                add(written.counts)
                written.log(to: log)
            case .failure(let error):
                logFailure("recording a push receipt failed", job: job, error: error)
            }
            done(result.isSuccess)
        }
    }

    /// Marks `provider` misconfigured in the guard; logs once per episode.
    func noteMisconfiguration(provider: String, reason: String) {
        if massDeletionGuard.recordMisconfiguration(provider: provider, reason: reason) {
            log.error("the provider reports its credentials as wrong: pushes are dead-lettered, devices kept (check the credentials)",
                      ["provider": provider, "reason": reason])
        }
    }
}
