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

    public init(id: Int64, kind: String, payloadJSON: String, state: JobState, attempts: Int, runAt: Int64, leaseUntil: Int64?,
                lastError: String?, createdAt: Int64) {
        self.id = id
        self.kind = kind
        self.payloadJSON = payloadJSON
        self.state = state
        self.attempts = attempts
        self.runAt = runAt
        self.leaseUntil = leaseUntil
        self.lastError = lastError
        self.createdAt = createdAt
    }
}
