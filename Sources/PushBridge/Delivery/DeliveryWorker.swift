import Dispatch
import Foundation
import HeraldCore
import Synchronization

/// Drains the durable `push.deliver` queue (PU-5): claims due jobs with a lease, sends each
/// through `PushProviders` (the adapter of the device's provider), and records the outcome — done, retried with backoff and jitter,
/// dead-lettered, or the device deleted when the provider says its token is dead (DV-6).
/// A crash while jobs are leased loses nothing: their leases expire and they are due again.
///
/// Its bookkeeping (`inFlight`, `claiming`) is confined to `queue`.
public final class DeliveryWorker: @unchecked Sendable {
    /// Limits of the worker, with safe defaults.
    public struct Configuration: Sendable {
        /// Jobs claimed per round.
        public var batchSize = 64
        /// Most jobs being sent at once.
        public var maxInFlight = 256
        /// How long a claimed job is held before another worker may take it, ms.
        public var leaseMilliseconds: Int64 = 60_000
        /// How often the queue is polled when nobody wakes the worker, ms.
        public var pollMilliseconds = 250
        public var retry = RetryPolicy()
        /// Asked just before a planned push is sent: a reason to drop it (e.g. `acked`: the
        /// session acknowledged the live event within its window, NO-2 `unless_acked`), or nil
        /// to send. The API supplies it from presence; PushBridge knows nothing of connections.
        public var suppression: (@Sendable (DeliveryJobPayload.Origin) -> String?)?
        public init() {}
    }

    /// Counts of outcomes since start (metrics, tests).
    public struct Counters: Sendable, Equatable {
        public var delivered = 0, retried = 0, dead = 0, devicesDeleted = 0
    }

    private let database: any Storage
    private let providers: PushProviders
    private let configuration: Configuration
    private let queue = DispatchQueue(label: "herald.delivery")
    private let timer: DispatchSourceTimer
    private let counters = Mutex(Counters())
    /// PU-5a: stops device deletion when one provider rejects nearly every token alike.
    public let massDeletionGuard: MassDeletionGuard
    private let log: Logger
    // Confined to `queue`.
    private var inFlight = 0
    private var claiming = false
    private var stopped = false

    public init(database: any Storage, providers: PushProviders, configuration: Configuration = Configuration(), log: Logger = .silent,
                massDeletionGuard: MassDeletionGuard = MassDeletionGuard()) {
        self.massDeletionGuard = massDeletionGuard
        self.log = log
        self.database = database
        self.providers = providers
        self.configuration = configuration
        self.timer = DispatchSource.makeTimerSource(queue: queue)
    }

    public var outcomeCounts: Counters { counters.withLock { $0 } }

    /// Starts polling the queue, first making due again the jobs a previous process left leased.
    public func start() {
        let log = self.log
        do {
            let released = try database.writeSync { tx in
                try tx.jobs.releaseLeases(kind: DeliveryJobPayload.kind, now: unixMillisecondsNow())
            }
            if released > 0 { log.info("push jobs left leased by a previous run are due again", ["count": String(released)]) }
        } catch {
            log.error("could not release leased push jobs; they come back when their lease expires", ["error": "\(error)"])
        }
        timer.setEventHandler { [weak self] in self?.poll() }
        timer.schedule(deadline: .now(), repeating: .milliseconds(configuration.pollMilliseconds))
        timer.resume()
    }

    /// Asks for a poll now (after jobs were enqueued), instead of at the next tick.
    public func wake() {
        queue.async { [weak self] in self?.poll() }
    }

    /// Stops claiming, then waits up to `deadline` for the sends in flight to finish and record
    /// their outcome; queued jobs stay for the next start (OP-5). A send still running at the
    /// deadline keeps its lease, which the next start releases: it may go twice, never zero times.
    ///
    /// - Parameter deadline: seconds to wait for in-flight sends.
    /// - Returns: how many sends were still in flight when it gave up (0 = drained).
    @discardableResult
    public func stop(deadline seconds: Double = 10) -> Int {
        queue.sync {
            stopped = true
            timer.cancel()
        }
        let until = DispatchTime.now() + seconds
        while true {
            let left = queue.sync { inFlight }
            if left == 0 || DispatchTime.now() >= until { return left }
            // Shutdown only: a short poll keeps the send paths free of drain bookkeeping.
            usleep(10_000)
        }
    }

    private func poll() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !stopped, !claiming, inFlight < configuration.maxInFlight else { return }
        claiming = true
        let want = min(configuration.batchSize, configuration.maxInFlight - inFlight)
        let lease = configuration.leaseMilliseconds
        database.write({ tx in
            try tx.jobs.claim(kind: DeliveryJobPayload.kind, limit: want, leaseMilliseconds: lease, now: unixMillisecondsNow())
        }) { [self] result in
            queue.async { [self] in
                claiming = false
                switch result {
                case .success(let jobs):
                    inFlight += jobs.count
                    for job in jobs { process(job) }
                    if jobs.count == want { poll() }
                case .failure(let error):
                    log.error("claiming push jobs failed", ["error": "\(error)"])
                }
            }
        }
    }

    private func process(_ job: JobRecord) {
        let payload: DeliveryJobPayload
        do {
            payload = try DeliveryJobPayload.decode(job.payloadJSON)
        } catch {
            return finish(job, .deadLetter(reason: "unreadable job payload: \(error)"), device: nil, origin: nil)
        }
        let deviceID = payload.deviceID
        let origin = payload.origin
        if let expiresAt = payload.notification.expiresAt, Int64(expiresAt) * 1000 <= unixMillisecondsNow() {
            // NO-2: an expired notification is never sent, however late its job runs.
            return skip(job, origin: origin, deviceID: deviceID, outcome: .expired, note: "expired")
        }
        if let origin, let reason = configuration.suppression?(origin) {
            return skip(job, origin: origin, deviceID: deviceID, outcome: .suppressedAcked, note: reason)
        }
        database.read({ tx in try tx.devices.find(id: deviceID, now: unixMillisecondsNow()) }) { [self] result in
            switch result {
            case .failure(let error):
                finish(job, .retry(afterSeconds: nil, reason: "database: \(error)"), device: nil, origin: origin)
            case .success(nil):
                // Deleted since the job was queued (logout, dead token): nothing to send.
                skip(job, origin: origin, deviceID: deviceID, outcome: .skippedSession, note: "device_gone")
            case .success(let device?) where origin != nil && !device.sessionActive:
                // The session ended or expired after planning (DV-4): its devices get no pushes.
                skip(job, origin: origin, deviceID: deviceID, outcome: .skippedSession, note: "session_inactive")
            case .success(let device?):
                guard let apnsID = PushID(payload.apnsID) else {
                    return finish(job, .deadLetter(reason: "invalid apns_id in job"), device: device, origin: origin)
                }
                // Device rows keep the provider as text; this is where it becomes a `PushProviderID`.
                guard let provider = PushProviderID(rawValue: device.provider) else {
                    return finish(job, providers.unsupported(provider: device.provider).outcome, device: device, origin: origin)
                }
                let target = PushTarget(provider: provider, token: device.token, environment: device.environment)
                providers.send(payload.notification, to: target, pushID: apnsID) { [self] classification in
                    var outcome = classification.outcome
                    switch outcome {
                    case .deleteDevice(let reason, _):
                        if !massDeletionGuard.allowDeletion(provider: device.provider, reason: reason) {
                            log.error("provider rejects nearly every token alike: not deleting devices (check the credentials, topic and environment)",
                                      ["provider": device.provider, "reason": reason])
                            outcome = .deadLetter(reason: "provider_misconfigured: \(reason)")
                        }
                    case .delivered:
                        massDeletionGuard.recordOther(provider: device.provider, delivered: true)
                    default:
                        massDeletionGuard.recordOther(provider: device.provider, delivered: false)
                    }
                    finish(job, outcome, device: device, origin: origin)
                }
            }
        }
    }

    /// Completes a planned push that must not be sent, recording why in its delivery record.
    private func skip(_ job: JobRecord, origin: DeliveryJobPayload.Origin?, deviceID: String, outcome: DeliveryOutcome, note: String) {
        database.write({ tx in
            try held(tx.jobs.complete(job.lease, note: note))
            try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: outcome, detail: note)
        }) { [self] result in
            if case .failure(let error) = result {
                logFailure("recording a skipped push failed", job: job, error: error)
            }
            queue.async { [self] in
                inFlight -= 1
                pollAfterFinish()
            }
        }
    }

    /// After a send finishes: claim again once a batch's worth of slots is free (or the worker
    /// is nearly idle), not for every single slot — a claim is a write transaction.
    private func pollAfterFinish() {
        dispatchPrecondition(condition: .onQueue(queue))
        if inFlight <= max(configuration.maxInFlight - configuration.batchSize, 0) || inFlight < configuration.batchSize / 2 {
            poll()
        }
    }

    /// Logs a failed outcome transaction; one that failed because the job's lease was taken over
    /// is another claim's to record, so it is only a warning.
    private func logFailure(_ message: String, job: JobRecord, error: any Error) {
        if error is LeaseLost {
            log.warning("push outcome not recorded: the job's lease ran out and another claim took it over", ["job_id": String(job.id)])
        } else {
            log.error(message, ["job_id": String(job.id), "error": "\(error)"])
        }
    }

    /// Appends to a planned push's delivery record (NO-8); plain pushes have none.
    private static func record(_ tx: any StorageTransaction, origin: DeliveryJobPayload.Origin?, deviceID: String, jobID: Int64,
                               outcome: DeliveryOutcome, messageID: String? = nil, detail: String? = nil) throws(StorageError) {
        guard let origin else { return }
        try tx.deliveries.record(DeliveryEntry(
            notificationID: origin.notificationID, userID: origin.userID, deviceID: deviceID, sessionID: origin.sessionID,
            outcome: outcome, providerMessageID: messageID, jobID: jobID, deliveryID: origin.deliveryID, detail: detail,
            at: unixMillisecondsNow()))
    }

    /// Records one job's outcome, then frees its slot.
    private func finish(_ job: JobRecord, _ outcome: PushOutcome, device: DeviceRecord?, origin: DeliveryJobPayload.Origin?) {
        let policy = configuration.retry
        let log = self.log
        let deviceID = device?.id ?? ""
        database.write({ [self] tx in
            let now = unixMillisecondsNow()
            switch outcome {
            case .delivered(let messageID):
                try held(tx.jobs.complete(job.lease, note: messageID.map { "delivered: \($0)" }))
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .sent, messageID: messageID)
                self.counters.withLock { $0.delivered += 1 }
            case .deleteDevice(let reason, let timestamp):
                var deleted = false
                if let device { deleted = try tx.devices.deleteInvalid(id: device.id, invalidSince: timestamp) }
                let note = deleted ? "device_deleted: \(reason)" : "token_rejected_but_reregistered: \(reason)"
                try held(tx.jobs.complete(job.lease, note: note))
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .failed, detail: note)
                if deleted {
                    self.counters.withLock { $0.devicesDeleted += 1 }
                    log.info("deleted a device its provider reported invalid", ["device_id": device?.id ?? "", "reason": reason])
                }
            case .retry(_, let reason), .refreshAuthAndRetryOnce(let reason):
                // The provider already used its one auth refresh; what is left is a plain retry.
                var retryAfter: Int64?
                if case .retry(let seconds?, _) = outcome { retryAfter = Int64(seconds) * 1000 }
                switch policy.decide(afterAttempt: job.attempts, retryAfterMilliseconds: retryAfter) {
                case .retry(let delay):
                    try held(tx.jobs.retry(job.lease, runAt: now + delay, error: reason))
                    try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .retrying,
                                    detail: "\(reason); next attempt in \(delay) ms")
                    self.counters.withLock { $0.retried += 1 }
                case .giveUp:
                    let error = "\(reason) (after \(job.attempts) attempts)"
                    try held(tx.jobs.deadLetter(job.lease, error: error, now: now))
                    try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .dead, detail: error)
                    self.counters.withLock { $0.dead += 1 }
                    log.warning("push job dead after its last attempt", ["job_id": String(job.id), "reason": reason])
                }
            case .deadLetter(let reason):
                try held(tx.jobs.deadLetter(job.lease, error: reason, now: now))
                try Self.record(tx, origin: origin, deviceID: deviceID, jobID: job.id, outcome: .dead, detail: reason)
                self.counters.withLock { $0.dead += 1 }
                log.warning("push job dead-lettered", ["job_id": String(job.id), "reason": reason])
            }
        }) { [self] result in
            if case .failure(let error) = result {
                // The lease will expire and the job come back: nothing is lost, it may be sent twice.
                logFailure("recording a push outcome failed", job: job, error: error)
            }
            queue.async { [self] in
                inFlight -= 1
                pollAfterFinish()
            }
        }
    }
}

/// A fenced job update found the job no longer leased under this worker's claim.
struct LeaseLost: Error {}

/// Rolls the outcome's transaction back (device deletion, delivery record) when the job's lease
/// was lost: the claim that took the job over records its own outcome.
@inline(__always)
private func held(_ fenced: Bool) throws(LeaseLost) {
    if !fenced { throw LeaseLost() }
}

/// Wall-clock unix milliseconds.
func unixMillisecondsNow() -> Int64 {
    Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
}
