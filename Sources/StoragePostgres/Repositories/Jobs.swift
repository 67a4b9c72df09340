import HeraldCore

/// `JobQueue` on PostgreSQL (PU-5), for several nodes draining one queue.
///
/// - A claim locks due rows with `FOR UPDATE SKIP LOCKED` in a materialized CTE (so the planner
///   cannot fold it into the UPDATE and lock more rows than it returns), then leases them to this
///   node: two claimers never get the same job, and neither waits for the other's rows.
/// - A job whose lease ran out is claimable again (a node that died), with no leader.
/// - `complete`, `retry` and `deadLetter` are fenced by id, node (`locked_by`) and attempt.
/// - `enqueue` and a revived dead letter `NOTIFY` `herald_jobs` in their own transaction, so
///   listening nodes wake when it commits (`PostgresStorage.listenForJobs`).
struct PostgresJobQueue: JobQueue {
    let connection: PostgresConnection
    /// The node the storage claims for (`locked_by`).
    let node: String
    /// The storage's count of token rotations that moved push jobs (`Storage.pushRotations`).
    let rotations: PushJobRotation.Count

    /// The channel enqueues notify on.
    static let channel = "herald_jobs"

    func enqueue(kind: String, payloadJSON: String, app: String, runAt: Int64, now: Int64) throws(StorageError) -> Int64 {
        try mapped {
            guard let row = try connection.queryOne("""
                INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, created_at)
                VALUES ($1::text, $2::text, $5::text, 'queued', 0, $3::bigint, $4::bigint) RETURNING id
                """, [kind, payloadJSON, runAt, now, app]) else {
                throw PostgresError.misuse(message: "INSERT … RETURNING gave no row")
            }
            // Delivered at commit, once per transaction however many jobs it enqueued.
            _ = try connection.query("SELECT pg_notify('\(Self.channel)', $1::text)", [kind])
            return try row.value("id")
        }
    }

    func enqueue(kind: String, payloadJSON: String, app: String, runAt: Int64, now: Int64, awaiting ack: AwaitedAck) throws(StorageError) -> Int64 {
        try mapped {
            guard let row = try connection.queryOne("""
                INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, created_at, ack_session, ack_event_id)
                VALUES ($1::text, $2::text, $5::text, 'queued', 0, $3::bigint, $4::bigint, $6::text, $7::text) RETURNING id
                """, [kind, payloadJSON, runAt, now, app, ack.sessionID, ack.eventID]) else {
                throw PostgresError.misuse(message: "INSERT … RETURNING gave no row")
            }
            _ = try connection.query("SELECT pg_notify('\(Self.channel)', $1::text)", [kind])
            return try row.value("id")
        }
    }

    /// The queued jobs waiting for one session's ack of one event (ADR 0025), through
    /// `jobs_awaiting_ack`: `ack_event_id = $3` implies the index's condition.
    static let awaitingAckSQL = """
        SELECT * FROM jobs WHERE app = $1::text AND ack_session = $2::text AND ack_event_id = $3::text AND state = 'queued'
        """

    /// One probe of `jobs_awaiting_ack` per id (ADR 0025); the user checked on the rows found.
    func awaitsAck(app: String, userID: String, sessionID: String, eventIDs: [String]) throws(StorageError) -> Bool {
        try mapped {
            for eventID in eventIDs {
                for row in try connection.query(Self.awaitingAckSQL, [app, sessionID, eventID])
                where AwaitedAck.isUsers(userID, payloadJSON: try row.value("payload_json")) {
                    return true
                }
            }
            return false
        }
    }

    /// Only queued rows: a claimed job is past its window and its worker's (ADR 0025).
    func cancelAcknowledged(app: String, userID: String, sessionID: String, eventIDs: [String], note: String) throws(StorageError) -> [JobRecord] {
        try mapped {
            var cancelled: [JobRecord] = []
            for eventID in eventIDs {
                for row in try connection.query(Self.awaitingAckSQL + " FOR UPDATE", [app, sessionID, eventID]) {
                    let job = try JobRecord(row: row)
                    guard AwaitedAck.isUsers(userID, payloadJSON: job.payloadJSON) else { continue }
                    if try connection.run("UPDATE jobs SET state = 'done', last_error = $2::text WHERE id = $1::bigint AND state = 'queued'",
                                          [job.id, note]) > 0 {
                        cancelled.append(job)
                    }
                }
            }
            return cancelled
        }
    }

    /// Leased to this node (`locked_by`) from the start, so its fenced outcome is this node's to
    /// record; no `NOTIFY`: nobody else is to claim it (ADR 0007).
    func enqueueLeased(kind: String, payloadJSON: String, app: String, leaseUntil: Int64, now: Int64) throws(StorageError) -> JobRecord {
        try mapped {
            guard let row = try connection.queryOne("""
                INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, lease_until, locked_by, first_attempt_at, created_at)
                VALUES ($1::text, $2::text, $3::text, 'leased', 1, $4::bigint, $5::bigint, $6::text, $4::bigint, $4::bigint) RETURNING *
                """, [kind, payloadJSON, app, now, leaseUntil, node]) else {
                throw PostgresError.misuse(message: "INSERT … RETURNING gave no row")
            }
            return try JobRecord(row: row)
        }
    }

    func claim(kind: String, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(StorageError) -> [JobRecord] {
        precondition(limit >= 0, "a negative limit")
        // Queued rows through the partial index on due queued rows, rescued ones through the index
        // on leased rows, each cut at the limit; the oldest due of both are leased.
        return try mapped {
            try connection.query("""
                WITH queued AS MATERIALIZED (
                    SELECT id, run_at FROM jobs WHERE state = 'queued' AND run_at <= $1::bigint AND kind = $2::text
                    ORDER BY run_at, id LIMIT $3::bigint FOR UPDATE SKIP LOCKED),
                expired AS MATERIALIZED (
                    SELECT id, run_at FROM jobs WHERE state = 'leased' AND lease_until <= $1::bigint AND kind = $2::text
                    ORDER BY run_at, id LIMIT $3::bigint FOR UPDATE SKIP LOCKED),
                picked AS (
                    SELECT id FROM (SELECT * FROM queued UNION ALL SELECT * FROM expired) AS due ORDER BY run_at, id LIMIT $3::bigint)
                UPDATE jobs SET state = 'leased', attempts = jobs.attempts + 1, locked_by = $4::text, lease_until = $5::bigint,
                    first_attempt_at = COALESCE(jobs.first_attempt_at, $1::bigint)
                FROM picked WHERE jobs.id = picked.id
                RETURNING jobs.*
                """, [now, kind, limit, node, now + leaseMilliseconds])
                .map(JobRecord.init(row:))
                .sorted { ($0.runAt, $0.id) < ($1.runAt, $1.id) }
        }
    }

    func complete(_ lease: JobLease, note: String?) throws(StorageError) -> Bool {
        try mapped {
            try connection.run("""
                UPDATE jobs SET state = 'done', lease_until = NULL, locked_by = NULL, last_error = COALESCE($1::text, last_error)
                WHERE id = $2::bigint AND state = 'leased' AND locked_by = $3::text AND attempts = $4::integer
                """, [note, lease.jobID, node, lease.attempt]) > 0
        }
    }

    func retry(_ lease: JobLease, runAt: Int64, error: String, attempt: JobAttempt) throws(StorageError) -> Bool {
        try mapped {
            try connection.run("""
                UPDATE jobs SET state = 'queued', run_at = $1::bigint, lease_until = NULL, locked_by = NULL, last_error = $2::text,
                    uncounted_attempts = uncounted_attempts + $3::integer, turned_away_attempts = turned_away_attempts + $7::integer
                WHERE id = $4::bigint AND state = 'leased' AND locked_by = $5::text AND attempts = $6::integer
                """, [runAt, error, attempt == .counted ? 0 : 1, lease.jobID, node, lease.attempt, attempt == .turnedAway ? 1 : 0]) > 0
        }
    }

    func deadLetter(_ lease: JobLease, error: String, cause: DeadLetterCause, now: Int64) throws(StorageError) -> Bool {
        try mapped {
            try connection.run("""
                UPDATE jobs SET state = 'dead', lease_until = NULL, locked_by = NULL, last_error = $1::text, dead_at = $2::bigint,
                    dead_provider = $3::text, dead_reason = $4::text
                WHERE id = $5::bigint AND state = 'leased' AND locked_by = $6::text AND attempts = $7::integer
                """, [error, now, cause.provider, cause.reason, lease.jobID, node, lease.attempt]) > 0
        }
    }

    /// Makes due the jobs of `kind` leased by this node's name: with several nodes on one
    /// database, another node's lease may be a live one, so only a previous run under the same
    /// node name is taken as dead (a name unique per process releases nothing). Others come back
    /// when their lease runs out.
    func releaseLeases(kind: String, now: Int64) throws(StorageError) -> Int {
        try mapped {
            try connection.run("""
                UPDATE jobs SET state = 'queued', lease_until = NULL, locked_by = NULL, run_at = LEAST(run_at, $1::bigint)
                WHERE kind = $2::text AND state = 'leased' AND locked_by = $3::text
                """, [now, kind, node])
        }
    }

    func find(id: Int64, app: String) throws(StorageError) -> JobRecord? {
        try mapped {
            try connection.queryOne("SELECT * FROM jobs WHERE id = $1::bigint AND app = $2::text", [id, app]).map(JobRecord.init(row:))
        }
    }

    func list(app: String, state: JobState, limit: Int, beforeID: Int64?) throws(StorageError) -> [JobRecord] {
        // Through (state, id), the app checked on each row: no index with the app, which every
        // claim and completion would rewrite (as SQLite's).
        try mapped {
            try connection.query("""
                SELECT * FROM jobs WHERE state = $1::text AND id < $2::bigint AND app = $4::text ORDER BY id DESC LIMIT $3::bigint
                """, [state.rawValue, beforeID ?? Int64.max, limit, app]).map(JobRecord.init(row:))
        }
    }

    /// What a retried dead letter starts again with: fresh attempts and retry budget.
    private static let revived = """
        state = 'queued', attempts = 0, uncounted_attempts = 0, turned_away_attempts = 0, first_attempt_at = NULL, lease_until = NULL, locked_by = NULL,
        dead_at = NULL, dead_provider = NULL, dead_reason = NULL
        """

    func retryDead(id: Int64, app: String, now: Int64) throws(StorageError) -> Bool {
        try mapped {
            let changed = try connection.run("""
                UPDATE jobs SET \(Self.revived), run_at = $1::bigint WHERE id = $2::bigint AND app = $3::text AND state = 'dead'
                """, [now, id, app])
            if changed > 0 { _ = try connection.query("SELECT pg_notify('\(Self.channel)', 'retry')") }
            return changed > 0
        }
    }

    func retryDead(matching filter: DeadJobFilter, now: Int64) throws(StorageError) -> Int {
        try mapped {
            let changed = try connection.run("""
                UPDATE jobs SET \(Self.revived), run_at = $1::bigint
                WHERE state = 'dead' AND app = $7::text AND ($2::text IS NULL OR kind = $2::text)
                  AND ($3::bigint IS NULL OR dead_at >= $3::bigint) AND ($4::bigint IS NULL OR dead_at < $4::bigint)
                  AND ($5::text IS NULL OR dead_provider = $5::text) AND ($6::text IS NULL OR dead_reason = $6::text)
                """, [now, filter.kind, filter.deadSince, filter.deadUntil, filter.provider, filter.reason, filter.app.rawValue])
            if changed > 0 { _ = try connection.query("SELECT pg_notify('\(Self.channel)', 'retry')") }
            return changed
        }
    }

    func depth(now: Int64) throws(StorageError) -> JobQueueDepth {
        try mapped {
            var counts: [JobState: Int] = [:]
            for row in try connection.query("SELECT state, count(*) AS n FROM jobs GROUP BY state") {
                if let state = JobState(rawValue: try row.value("state")) { counts[state] = try row.value("n") }
            }
            let oldest: Int64? = try connection.queryOne("SELECT min(run_at) AS t FROM jobs WHERE state = 'queued' AND run_at <= $1::bigint",
                                                         [now])?.nullable("t")
            return JobQueueDepth(counts: counts, oldestDueAgeMilliseconds: oldest.map { now - $0 } ?? 0)
        }
    }

    func purgeDone(createdBefore cutoff: Int64, limit: Int) throws(StorageError) -> Int {
        // jobs_state_id walks the done jobs by id; the limit keeps each call a short write.
        try mapped { try connection.run(Self.purgeDoneBatch, [cutoff, Int64(limit)]) }
    }

    /// One batch of `purgeDone`: `$1` the cutoff (Unix ms), `$2` the limit. The ids are handed to
    /// the delete as an array (`= ANY`, a probe of the primary key each): an `IN (SELECT …)` may
    /// be planned as a hash join with a scan of every job kept (ADR 0012's finding on the
    /// notification purge, the same shape).
    static let purgeDoneBatch = """
        DELETE FROM jobs WHERE id = ANY (ARRAY(
            SELECT id FROM jobs WHERE state = 'done' AND created_at < $1::bigint ORDER BY id LIMIT $2::bigint))
        """
}

extension JobRecord {
    init(row: PostgresRow) throws {
        let rawState: String = try row.value("state")
        guard let state = JobState(rawValue: rawState) else {
            throw PostgresError.decode(column: "state", expected: "queued|leased|done|dead", found: rawState)
        }
        let deadReason: String? = try row.nullable("dead_reason")
        let deadProvider: String? = try row.nullable("dead_provider")
        self.init(id: try row.value("id"), kind: try row.value("kind"), payloadJSON: try row.value("payload_json"), state: state,
                  attempts: try row.value("attempts"), runAt: try row.value("run_at"), leaseUntil: try row.nullable("lease_until"),
                  lastError: try row.nullable("last_error"), createdAt: try row.value("created_at"), deadAt: try row.nullable("dead_at"),
                  uncountedAttempts: try row.value("uncounted_attempts"), firstAttemptAt: try row.nullable("first_attempt_at"),
                  deadCause: deadReason.map { DeadLetterCause(provider: deadProvider, reason: $0) }, app: try row.value("app"),
                  turnedAwayAttempts: try row.value("turned_away_attempts"))
    }
}
