/// A job's place in its life: `queued` (due at `run_at`), `leased` (a worker has it until
/// `lease_until`), `done`, or `dead` (given up; listed and retried through the server API).
public enum JobState: String, Sendable, CaseIterable {
    case queued, leased, done, dead
}

/// One durable job (PU-5), e.g. `push.deliver` for one device.
public struct JobRecord: Sendable, Equatable {
    public var id: Int64
    public var kind: String
    /// The job's input, JSON text.
    public var payloadJSON: String
    public var state: JobState
    /// Attempts started so far (a claim counts as one).
    public var attempts: Int
    /// Unix ms at which the job is due.
    public var runAt: Int64
    /// Unix ms until which a worker holds it; past it, the job is due again (crash recovery).
    public var leaseUntil: Int64?
    public var lastError: String?
    public var createdAt: Int64
    /// Unix ms the job was dead-lettered; nil unless `dead` (and for jobs that died before schema 6).
    public var deadAt: Int64?

    public init(id: Int64, kind: String, payloadJSON: String, state: JobState, attempts: Int, runAt: Int64, leaseUntil: Int64?,
                lastError: String?, createdAt: Int64, deadAt: Int64? = nil) {
        self.id = id
        self.kind = kind
        self.payloadJSON = payloadJSON
        self.state = state
        self.attempts = attempts
        self.runAt = runAt
        self.leaseUntil = leaseUntil
        self.lastError = lastError
        self.createdAt = createdAt
        self.deadAt = deadAt
    }

    /// The fencing token of the claim that leased it: its id and attempt number. Meaningful for a
    /// job returned by `claim`; a later claim (after the lease ran out) counts another attempt,
    /// so this one no longer completes, retries or dead-letters the job.
    public var lease: JobLease { JobLease(jobID: id, attempt: attempts) }
}

/// Proof of one claim of a job (its fencing token): complete, retry and dead-letter succeed only
/// while the job is still leased under this attempt, so a worker whose lease ran out and whose
/// job another claim took over cannot record an outcome for it.
public struct JobLease: Hashable, Sendable {
    public let jobID: Int64
    /// The job's attempt count right after the claim.
    public let attempt: Int

    public init(jobID: Int64, attempt: Int) {
        self.jobID = jobID
        self.attempt = attempt
    }
}

/// Which dead jobs a bulk retry sends back to the queue. Every condition given must hold.
public struct DeadJobFilter: Sendable, Equatable {
    /// Only jobs of this kind (e.g. `push.deliver`); nil: any kind.
    public var kind: String?
    /// Only jobs dead-lettered at or after this unix ms; nil: whenever. Jobs that died before
    /// schema 6 have no such time and match only when this is nil.
    public var deadSince: Int64?

    public init(kind: String? = nil, deadSince: Int64? = nil) {
        self.kind = kind
        self.deadSince = deadSince
    }
}
