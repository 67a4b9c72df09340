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

    init(row: Row) throws(StorageError) {
        id = try row["id"]
        kind = try row["kind"]
        payloadJSON = try row["payload_json"]
        let rawState: String = try row["state"]
        guard let state = JobState(rawValue: rawState) else {
            throw .decode(column: "state", expected: "queued|leased|done|dead", found: rawState)
        }
        self.state = state
        attempts = Int(try row["attempts", as: Int64.self])
        runAt = try row["run_at"]
        leaseUntil = try row["lease_until"]
        lastError = try row["last_error"]
        createdAt = try row["created_at"]
    }
}
