import HeraldCore
/// The durable job queue's SQL (PU-5). A job is claimed with a lease: a worker that crashes while
/// holding it leaves it due again once the lease passes, so a `kill -9` loses nothing. Writes run
/// on the `Database` writer, which also makes claims atomic.
enum JobStore {
    /// Adds a job of app `app` (ADR 0006). - Returns: its id.
    /// - Parameters:
    ///   - runAt: unix ms at which it becomes due.
    ///   - now: unix ms.
    @discardableResult
    ///   - ack: what the job waits for (ADR 0025); nil: nothing, no entry in `jobs_awaiting_ack`.
    static func enqueue(_ connection: SQLiteConnection, kind: String, payloadJSON: String, app: String = "default", runAt: Int64,
                        now: Int64, awaiting ack: AwaitedAck? = nil) throws(SQLiteError) -> Int64 {
        if let ack {
            try connection.run("""
                INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, created_at, ack_session, ack_event_id)
                VALUES (?, ?, ?, 'queued', 0, ?, ?, ?, ?)
                """, [kind, payloadJSON, app, runAt, now, ack.sessionID, ack.eventID])
        } else {
            try connection.run("INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, created_at) VALUES (?, ?, ?, 'queued', 0, ?, ?)",
                               [kind, payloadJSON, app, runAt, now])
        }
        noteDue(connection, kind: kind, at: runAt)
        return connection.lastInsertRowID
    }

    /// Adds a job of app `app` already leased until `leaseUntil` (unix ms), as a claim at `now`
    /// would leave it: attempt 1, first attempt and due at `now` (ADR 0007). It is marked
    /// `leased_at_insert`, out of `jobs_due` until it leaves that lease, and found from the lease
    /// floor meanwhile (ADR 0017).
    /// - Returns: the job as stored.
    static func enqueueLeased(_ connection: SQLiteConnection, kind: String, payloadJSON: String, app: String, leaseUntil: Int64,
                              now: Int64) throws(SQLiteError) -> JobRecord {
        // `now` bound once for its three columns: each value bound is an existential boxed,
        // opened and bound per push.
        try connection.run("""
            INSERT INTO jobs (kind, payload_json, app, state, attempts, run_at, lease_until, first_attempt_at, created_at, leased_at_insert)
            VALUES (?1, ?2, ?3, 'leased', 1, ?4, ?5, ?4, ?4, 1)
            """, [kind, payloadJSON, app, now, leaseUntil])
        let id = connection.lastInsertRowID
        try LeaseFloor.leased(connection, id: id)
        noteDue(connection, kind: kind, at: leaseUntil)
        return JobRecord(id: id, kind: kind, payloadJSON: payloadJSON, state: .leased, attempts: 1, runAt: now,
                         leaseUntil: leaseUntil, lastError: nil, createdAt: now, deadAt: nil, uncountedAttempts: 0, firstAttemptAt: now,
                         deadCause: nil, app: app)
    }

    /// Leases up to `limit` due jobs of `kind` (queued and due, or leased with an expired lease),
    /// oldest due first (`run_at`, then id), counting an attempt for each. Each job's `lease` is
    /// the fencing token its outcome is recorded with.
    ///
    /// Reads the due rows, then leases them one by one by id, in one write transaction (the
    /// caller's when one is open, as on the `Database` writer; else its own, `BEGIN IMMEDIATE`):
    /// no other writer can run between the read and the updates, so no job is claimed twice. A
    /// failure inside the caller's transaction leaves its updates to the caller's rollback.
    ///
    /// - Parameters:
    ///   - limit: most jobs; must not be negative.
    ///   - leaseMilliseconds: how long the worker may hold them.
    ///   - now: unix ms.
    /// - Returns: the leased jobs as stored after the claim, in due order.
    /// - Throws: `SQLiteError` from the reads or updates; nothing is claimed then.
    static func claim(_ connection: SQLiteConnection, kind: String, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(SQLiteError) -> [JobRecord] {
        precondition(limit >= 0, "a negative LIMIT means no limit in SQLite")
        guard limit > 0 else { return [] }
        guard connection.isInTransaction else {
            return try connection.inWriteTransaction { () throws(SQLiteError) in
                try claim(connection, kind: kind, limit: limit, leaseMilliseconds: leaseMilliseconds, now: now)
            }
        }
        // Issue 17: one `UPDATE … WHERE id IN (…) RETURNING *` cost ~100k instructions per job
        // at small claims, most of it in the ephemeral tables SQLite builds for the `IN` list,
        // the union's order and RETURNING's rows. Here each read is an index range scan already
        // in (run_at, id) order (queued rows through (state, kind, due time), whose entries end in
        // the rowid; leased ones through the same index by lease end, normally an empty
        // range), merged here, and each update is a rowid seek. What is left is mostly the
        // updates themselves (~25k a job: the row and both indexes rewritten).
        let queued = try connection.query(claimQueuedSQL, [kind, now, limit])
        // Ordering expired leases by run_at sorts them (~27k instructions even when there are
        // none); the probe, a seek into the due index, is nearly free, and that range is
        // empty unless a worker lost its leases.
        let anyExpired = try connection.queryOne(anyExpiredSQL, [kind, now]) != nil
        var expired = anyExpired ? try connection.query(claimExpiredSQL, [kind, now, limit]) : []
        // Jobs leased at insert are not in that index (ADR 0017): the floor's job has the earliest
        // lease end of them, so only once it is over are they walked, from the floor up (and when
        // this transaction leased some below it, whose lease end only their rows know).
        let floor = try LeaseFloor.committed(connection)
        if let start = try LeaseFloor.walkStart(connection), floor.leaseUntil <= now || connection.pendingLeaseFloor.lowestLeased != nil {
            let leasedAtInsert = try connection.query(claimExpiredAtInsertSQL, [start, kind, now, limit])
            if !leasedAtInsert.isEmpty {
                try LeaseFloor.leftAny(connection)
                var keyed: [(runAt: Int64, id: Int64, row: Row)] = []
                for row in expired + leasedAtInsert { keyed.append((try row[1], try row[0], row)) }
                expired = keyed.sorted { ($0.runAt, $0.id) < ($1.runAt, $1.id) }.map(\.row)
            }
        }
        var due: [JobRecord] = []
        due.reserveCapacity(min(limit, queued.count + expired.count))
        var q = 0, e = 0
        while due.count < limit, q < queued.count || e < expired.count {
            let takeQueued: Bool
            if q == queued.count {
                takeQueued = false
            } else if e == expired.count {
                takeQueued = true
            } else {
                takeQueued = try (queued[q][1, as: Int64.self], queued[q][0, as: Int64.self])
                    < (expired[e][1, as: Int64.self], expired[e][0, as: Int64.self])
            }
            if takeQueued {
                due.append(try claimed(queued[q], kind: kind, until: now + leaseMilliseconds, now: now))
                q += 1
            } else {
                due.append(try claimed(expired[e], kind: kind, until: now + leaseMilliseconds, now: now))
                e += 1
            }
        }
        if due.isEmpty {
            try noteClaim(connection, kind: kind, due: due, limit: limit, floor: floor, leaseUntil: now + leaseMilliseconds)
            return []
        }
        // No savepoint of its own: the `Database` writer's units roll back when their body throws,
        // so a partial claim is never committed, and a savepoint would add two statements a claim.
        // One statement checked out for the whole claim: a cache look-up hashes the SQL (~1.5k
        // instructions), once a claim rather than once a job.
        let lease = try connection.prepare("""
            UPDATE jobs SET state = 'leased', lease_until = ?, attempts = ?, first_attempt_at = ?, leased_at_insert = 0 WHERE id = ?
            """)
        for job in due {
            try lease.run([job.leaseUntil, Int64(job.attempts), job.firstAttemptAt, job.id])
        }
        try noteClaim(connection, kind: kind, due: due, limit: limit, floor: floor, leaseUntil: now + leaseMilliseconds)
        return due
    }

    /// Tells the writer's claim horizon what a claim of `kind` saw, after its leases (issue 17): a
    /// claim that took fewer than `limit` took every job due now, and sets the time the next job
    /// left is due (`JobClaimHorizon`); a full one forgets it. The jobs this transaction leased at
    /// insert below the floor are not in the floor's lease end: forgotten then too.
    /// - Parameters:
    ///   - floor: the committed lease floor the claim read.
    ///   - leaseUntil: the lease end of the jobs it took (unix ms).
    private static func noteClaim(_ connection: SQLiteConnection, kind: String, due: [JobRecord], limit: Int, floor: LeaseFloor.Committed,
                                  leaseUntil: Int64) throws(SQLiteError) {
        guard let horizon = connection.claimHorizon, horizon.kind == kind else { return }
        guard due.count < limit, connection.pendingLeaseFloor.lowestLeased == nil else { return horizon.forget() }
        let next: Int64 = try connection.queryOne(nextDueSQL, [kind])?[0] ?? .max
        horizon.drained(nextDueAt: min(next, floor.leaseUntil, due.isEmpty ? .max : leaseUntil))
    }

    /// Notes in the writer's claim horizon that a job of `kind` may be due at `dueAt` (unix ms):
    /// a job queued, or leased at insert until then.
    private static func noteDue(_ connection: SQLiteConnection, kind: String, at dueAt: Int64) {
        if let horizon = connection.claimHorizon, horizon.kind == kind { horizon.noteDue(at: dueAt) }
    }

    /// Notes in the writer's claim horizon that some job may be due at `dueAt` (unix ms), of a kind
    /// the statement does not name (a retry, dead letters revived).
    private static func noteAnyDue(_ connection: SQLiteConnection, at dueAt: Int64) {
        connection.claimHorizon?.noteDue(at: dueAt)
    }

    /// The earliest due time of a kind's jobs in `jobs_due` (kind): queued ones by `run_at`,
    /// claimed ones by their lease's end; NULL when there is none. Two seeks of the index, one
    /// per state (its first entry in the kind's range), as `claim` reads them.
    private static let nextDueSQL = """
        SELECT min(coalesce((SELECT \(dueAt) FROM jobs INDEXED BY jobs_due WHERE state = 'queued' AND \(indexed) AND kind = ?1
                             ORDER BY \(dueAt) LIMIT 1), 9223372036854775807),
                   coalesce((SELECT \(dueAt) FROM jobs INDEXED BY jobs_due WHERE state = 'leased' AND \(indexed) AND kind = ?1
                             ORDER BY \(dueAt) LIMIT 1), 9223372036854775807))
        """

    /// The columns `claim` reads, in the order `claimed(_:kind:until:now:)` decodes them by index.
    private static let claimColumns = """
        id, run_at, payload_json, app, attempts, uncounted_attempts, first_attempt_at, last_error, created_at, dead_at, dead_provider, dead_reason,
        turned_away_attempts
        """
    /// When a job is due, as the `jobs_due` index has it (migration 16): its `run_at` while
    /// queued (`lease_until` is NULL but while leased), its lease's end while leased. A query
    /// uses the index only with this very expression.
    static let dueAt = "coalesce(lease_until, run_at)"
    /// Which rows `jobs_due` holds (migrations 20 and 21): all but the done ones and those leased
    /// at insert. A query's `WHERE` must imply it for SQLite to use the index: a state written in
    /// (`state = 'queued'`; a bound `state = ?` only through a prepare per bound value) and
    /// `indexed`.
    static let inDueIndex = "(state = 'queued' OR state = 'leased' OR state = 'dead') AND \(indexed)"
    /// The term of `jobs_due`'s condition that keeps jobs leased at insert out (migration 21).
    static let indexed = "leased_at_insert = 0"
    /// Jobs leased at insert, from the lease floor bound as `?N` up (ADR 0017): a walk of the
    /// primary key, with no index of their own.
    static func leasedAtInsert(from parameter: Int) -> String {
        "id >= ?\(parameter) AND state = 'leased' AND leased_at_insert = 1"
    }
    /// `claim`'s read of queued due jobs (kind, now, limit), in the index's order (for a queued
    /// row `dueAt` is its `run_at`); built once, not per claim.
    private static let claimQueuedSQL = """
        SELECT \(claimColumns) FROM jobs INDEXED BY jobs_due
        WHERE state = 'queued' AND \(indexed) AND kind = ? AND \(dueAt) <= ? ORDER BY \(dueAt), id LIMIT ?
        """
    /// Whether any leased job of a kind has its lease over (kind, now).
    private static let anyExpiredSQL = """
        SELECT 1 FROM jobs INDEXED BY jobs_due WHERE state = 'leased' AND \(indexed) AND kind = ? AND \(dueAt) <= ? LIMIT 1
        """
    /// `claim`'s read of leased jobs whose lease is over (kind, now, limit).
    private static let claimExpiredSQL = """
        SELECT \(claimColumns) FROM jobs INDEXED BY jobs_due
        WHERE state = 'leased' AND \(indexed) AND kind = ? AND \(dueAt) <= ? ORDER BY run_at, id LIMIT ?
        """
    /// `claim`'s read of jobs leased at insert whose lease is over (floor, kind, now, limit).
    private static let claimExpiredAtInsertSQL = """
        SELECT \(claimColumns) FROM jobs WHERE \(leasedAtInsert(from: 1)) AND kind = ?2 AND lease_until <= ?3 ORDER BY id LIMIT ?4
        """

    /// A due row read by `claim` as it will be once leased until `until` at `now`: one attempt
    /// more, the first attempt's time kept or set.
    private static func claimed(_ row: Row, kind: String, until: Int64, now: Int64) throws(SQLiteError) -> JobRecord {
        let deadReason: String? = try row[11]
        let deadProvider: String? = try row[10]
        let firstAttemptAt: Int64? = try row[6]
        return JobRecord(id: try row[0], kind: kind, payloadJSON: try row[2], state: .leased, attempts: Int(try row[4, as: Int64.self]) + 1,
                         runAt: try row[1], leaseUntil: until, lastError: try row[7], createdAt: try row[8], deadAt: try row[9],
                         uncountedAttempts: Int(try row[5, as: Int64.self]), firstAttemptAt: firstAttemptAt ?? now,
                         deadCause: deadReason.map { DeadLetterCause(provider: deadProvider, reason: $0) }, app: try row[3],
                         turnedAwayAttempts: Int(try row[12, as: Int64.self]))
    }

    /// Makes every leased job of `kind` due now. Run at start: with one process per database
    /// (enforced by `SQLiteProcessLock`), a lease still held belongs to a process that died
    /// (`kill -9`), and waiting out the lease would only delay its pushes. Claimed jobs are a
    /// range of `jobs_due`; jobs leased at insert a walk from the lease floor (ADR 0017), which
    /// then has none left. - Returns: how many.
    @discardableResult
    static func releaseLeases(_ connection: SQLiteConnection, kind: String, now: Int64) throws(SQLiteError) -> Int {
        try connection.inWriteTransaction { () throws(SQLiteError) in
            let released = "state = 'queued', lease_until = NULL, run_at = MIN(run_at, ?1)"
            try connection.run("UPDATE jobs SET \(released) WHERE state = 'leased' AND \(indexed) AND kind = ?2", [now, kind])
            var count = connection.changes
            if let floor = try LeaseFloor.walkStart(connection) {
                try connection.run("UPDATE jobs SET \(released), leased_at_insert = 0 WHERE \(leasedAtInsert(from: 3)) AND kind = ?2",
                                   [now, kind, floor])
                count += connection.changes
                if connection.changes > 0 { try LeaseFloor.leftAny(connection) }
            }
            if count > 0 { noteDue(connection, kind: kind, at: now) }
            return count
        }
    }

    /// Marks a leased job done, with an optional note of how it ended (e.g. the device was deleted).
    /// Fenced by `lease`. - Returns: false when the job is no longer leased under `lease`.
    static func complete(_ connection: SQLiteConnection, _ lease: JobLease, note: String? = nil) throws(SQLiteError) -> Bool {
        let completed = try JobCounts.changingDone(connection) { () throws(SQLiteError) in
            try connection.run("""
                UPDATE jobs SET state = 'done', lease_until = NULL, last_error = COALESCE(?, last_error)
                WHERE id = ? AND state = 'leased' AND attempts = ?
                """, [note, lease.jobID, lease.attempt])
            return connection.changes
        } > 0
        return try left(connection, lease, if: completed)
    }

    /// Tells the lease floor that the job under `lease` left its lease (ADR 0017) when `changed`.
    /// - Returns: `changed`.
    private static func left(_ connection: SQLiteConnection, _ lease: JobLease, if changed: Bool) throws(SQLiteError) -> Bool {
        if changed { try LeaseFloor.left(connection, id: lease.jobID) }
        return changed
    }

    /// Puts a leased job back in the queue, due at `runAt` (unix ms), remembering why. Fenced by
    /// `lease`; `.uncounted` adds the attempt to `uncounted_attempts` (it never reached the
    /// provider), `.turnedAway` to it and to `turned_away_attempts` (not sent for its turn).
    /// - Returns: false when the job is no longer leased under `lease`.
    static func retry(_ connection: SQLiteConnection, _ lease: JobLease, runAt: Int64, error: String,
                      attempt: JobAttempt = .counted) throws(SQLiteError) -> Bool {
        try connection.run("""
            UPDATE jobs SET state = 'queued', run_at = ?1, lease_until = NULL, last_error = ?2, uncounted_attempts = uncounted_attempts + ?3,
                            turned_away_attempts = turned_away_attempts + ?4, leased_at_insert = 0
            WHERE id = ?5 AND state = 'leased' AND attempts = ?6
            """, [runAt, error, Int64(attempt == .counted ? 0 : 1), Int64(attempt == .turnedAway ? 1 : 0), lease.jobID, lease.attempt])
        guard connection.changes > 0 else { return false }
        noteAnyDue(connection, at: runAt)
        return try left(connection, lease, if: true)
    }

    /// Gives a leased job up with its reason (a dead letter), at `now` (unix ms), keeping its
    /// cause for bulk retry (nil: the reason's code from `error`, no provider). Fenced by
    /// `lease`. - Returns: false when the job is no longer leased under `lease`.
    static func deadLetter(_ connection: SQLiteConnection, _ lease: JobLease, error: String, cause: DeadLetterCause? = nil,
                           now: Int64) throws(SQLiteError) -> Bool {
        let cause = cause ?? DeadLetterCause(provider: nil, reason: DeadLetterCause.code(of: error))
        try connection.run("""
            UPDATE jobs SET state = 'dead', lease_until = NULL, last_error = ?, dead_at = ?, dead_provider = ?, dead_reason = ?,
                            leased_at_insert = 0
            WHERE id = ? AND state = 'leased' AND attempts = ?
            """, [error, now, cause.provider, cause.reason, lease.jobID, lease.attempt])
        return try left(connection, lease, if: connection.changes > 0)
    }

    /// Cancels a queued job that has not started (e.g. a push suppressed by an ack in time).
    /// - Returns: false when it was already leased or finished.
    static func cancel(_ connection: SQLiteConnection, id: Int64, reason: String) throws(SQLiteError) -> Bool {
        try JobCounts.changingDone(connection) { () throws(SQLiteError) in
            try connection.run("UPDATE jobs SET state = 'done', last_error = ? WHERE id = ? AND state = 'queued'", [reason, id])
            return connection.changes
        } > 0
    }

    /// Whether a queued job of `app` waits for `userID`'s session `sessionID`'s ack of one of
    /// `eventIDs` (ADR 0025): one probe of `jobs_awaiting_ack` per id (`ack_event_id = ?` implies
    /// the index's condition); the user is checked on the few rows found.
    static func awaitsAck(_ connection: SQLiteConnection, app: String, userID: String, sessionID: String,
                          eventIDs: [String]) throws(SQLiteError) -> Bool {
        for eventID in eventIDs {
            for row in try connection.query(awaitingAckSQL, [app, sessionID, eventID])
            where AwaitedAck.isUsers(userID, payloadJSON: try row["payload_json", as: String.self]) {
                return true
            }
        }
        return false
    }

    /// Marks done, with `note`, the queued jobs of `app` waiting for `userID`'s session `sessionID`'s ack of one of
    /// `eventIDs` (ADR 0025). - Returns: the jobs cancelled, as they were before.
    static func cancelAcknowledged(_ connection: SQLiteConnection, app: String, userID: String, sessionID: String, eventIDs: [String],
                                   note: String) throws(SQLiteError) -> [JobRecord] {
        var cancelled: [JobRecord] = []
        for eventID in eventIDs {
            for row in try connection.query(awaitingAckSQL, [app, sessionID, eventID]) {
                let job = try JobRecord(row: row)
                if AwaitedAck.isUsers(userID, payloadJSON: job.payloadJSON), try cancel(connection, id: job.id, reason: note) { cancelled.append(job) }
            }
        }
        return cancelled
    }

    private static let awaitingAckSQL = "SELECT * FROM jobs WHERE app = ? AND ack_session = ? AND ack_event_id = ? AND state = 'queued'"

    /// A job by id, any app's (the queue's own bookkeeping and tests).
    static func find(_ connection: SQLiteConnection, id: Int64) throws(SQLiteError) -> JobRecord? {
        try connection.queryOne("SELECT * FROM jobs WHERE id = ?", [id]).map { row throws(SQLiteError) in try JobRecord(row: row) }
    }

    /// A job by id if it is app `app`'s: another app's job is not found (ADR 0006).
    static func find(_ connection: SQLiteConnection, id: Int64, app: String) throws(SQLiteError) -> JobRecord? {
        try connection.queryOne("SELECT * FROM jobs WHERE id = ? AND app = ?", [id, app]).map { row throws(SQLiteError) in try JobRecord(row: row) }
    }

    /// App `app`'s jobs in `state`, newest first, `limit` at most, with ids below `beforeID`
    /// (cursor paging).
    static func list(_ connection: SQLiteConnection, app: String = "default", state: JobState, limit: Int,
                     beforeID: Int64? = nil) throws(SQLiteError) -> [JobRecord] {
        // No index with the app: the (state, kind, due time) index narrows to the state as before,
        // and a listing is an operator's page, not a hot path; an index on (app, state, id) would
        // be rewritten by every claim and completion. Done rows are not in that index (migration
        // 20): their listing walks the ids down from the cursor, and done rows are most rows.
        // Leased jobs are in two places (ADR 0017): claimed ones in `jobs_due`, those leased at
        // insert from the lease floor up; each part gives at most a page, merged newest first.
        let floor = state == .leased ? try LeaseFloor.walkStart(connection) ?? Int64.max : Int64.max   // max: none
        let values: [any SQLiteBindable] = state == .leased ? [app, beforeID ?? Int64.max, limit, floor] : [app, beforeID ?? Int64.max, limit]
        return try connection.query(listSQL[state]!, values)
            .map { row throws(SQLiteError) in try JobRecord(row: row) }
    }

    /// `list`'s statement per state (app, before id, limit, lease floor), the state written in:
    /// SQLite picks the partial `jobs_due` for a state it can see the index holds; with the state
    /// bound it prepares the statement again whenever the bound state changes. The states are the
    /// enum's own values, not input.
    private static let listSQL: [JobState: String] = Dictionary(uniqueKeysWithValues: JobState.allCases.map { state in
        let page = "app = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3"
        let sql = switch state {
        case .done: "SELECT * FROM jobs WHERE state = 'done' AND \(page)"
        case .queued, .dead: "SELECT * FROM jobs WHERE state = '\(state.rawValue)' AND \(indexed) AND \(page)"
        case .leased: """
            SELECT * FROM (SELECT * FROM jobs WHERE state = 'leased' AND \(indexed) AND \(page))
            UNION ALL SELECT * FROM (SELECT * FROM jobs WHERE \(leasedAtInsert(from: 4)) AND \(page))
            ORDER BY id DESC LIMIT ?3
            """
        }
        return (state, sql)
    })

    /// What a retried dead letter starts again with: fresh attempts and retry budget, no dead-letter record.
    private static let revived = """
        state = 'queued', attempts = 0, uncounted_attempts = 0, turned_away_attempts = 0, first_attempt_at = NULL, lease_until = NULL,
        dead_at = NULL, dead_provider = NULL, dead_reason = NULL
        """

    /// Sends a dead job of app `app` back to the queue with fresh attempts and retry budget, due at `now`.
    /// - Returns: false when the job does not exist, is another app's, or is not dead.
    static func retryDead(_ connection: SQLiteConnection, id: Int64, app: String = "default", now: Int64) throws(SQLiteError) -> Bool {
        try connection.run("UPDATE jobs SET \(revived), run_at = ? WHERE id = ? AND app = ? AND state = 'dead'", [now, id, app])
        guard connection.changes > 0 else { return false }
        noteAnyDue(connection, at: now)
        return true
    }

    /// Sends every dead job matching `filter` (its app's only) back to the queue with fresh attempts and retry
    /// budget, due at `now` (e.g. after a provider outage or a credentials fix). - Returns: how many.
    @discardableResult
    static func retryDead(_ connection: SQLiteConnection, matching filter: DeadJobFilter, now: Int64) throws(SQLiteError) -> Int {
        try connection.run("""
            UPDATE jobs SET \(revived), run_at = :now
            WHERE state = 'dead' AND \(indexed) AND app = :app AND (:kind IS NULL OR kind = :kind)
              AND (:since IS NULL OR dead_at >= :since) AND (:until IS NULL OR dead_at < :until)
              AND (:provider IS NULL OR dead_provider = :provider) AND (:reason IS NULL OR dead_reason = :reason)
            """, [":now": now, ":app": filter.app.rawValue, ":kind": filter.kind, ":since": filter.deadSince, ":until": filter.deadUntil,
                   ":provider": filter.provider, ":reason": filter.reason])
        let revived = connection.changes
        if revived > 0 { noteAnyDue(connection, at: now) }
        return revived
    }

    /// `depth`'s count of the jobs in `jobs_due` by state: the index's pages alone. SQLite 3.40's
    /// plan says `USING INDEX`, not `COVERING` (it takes `leased_at_insert`, which `indexed`
    /// names, for a column the statement reads), but that term is the partial index's own and is
    /// never evaluated, and a count reads no other column: each entry's seek of its row is
    /// deferred and never made (measured: the index's pages only; ops11, `JobCountsTests`).
    static let depthCountsSQL = "SELECT state, COUNT(*) AS n FROM jobs WHERE \(inDueIndex) GROUP BY state"
    /// `depth`'s oldest due queued job (`?1`: now), one seek of `jobs_due` per kind queued: the
    /// kinds found by a skip scan of the index (each the next one above the last), and each
    /// kind's earliest due time the first entry of its range. A `MIN` over every queued job
    /// walked each one's entry (the index is ordered by kind before due time): 1.6 M virtual
    /// machine steps for 200,000 queued jobs, against ~100 (Benchmarks/RESULTS.md, ops11).
    static let oldestDueSQL = """
        WITH RECURSIVE kinds(kind) AS (
            SELECT (SELECT MIN(kind) FROM jobs WHERE state = 'queued' AND \(indexed))
            UNION ALL
            SELECT (SELECT MIN(kind) FROM jobs WHERE state = 'queued' AND \(indexed) AND kind > kinds.kind) FROM kinds WHERE kind IS NOT NULL)
        SELECT MIN((SELECT MIN(\(dueAt)) FROM jobs WHERE state = 'queued' AND \(indexed) AND kind = kinds.kind AND \(dueAt) <= ?1)) AS t
        FROM kinds WHERE kind IS NOT NULL
        """

    /// Jobs per state, and the age (ms) of the oldest due job (queue depth and lag for /metrics).
    /// The done jobs' count is `job_counts`' (`JobCounts`); the others are counted in `jobs_due`,
    /// which holds no done rows: a read of the index's entries for the jobs in flight and the dead
    /// letters, no row (`depthCountsSQL`), and the jobs leased at insert counted in a walk from
    /// the lease floor (ADR 0017).
    static func depth(_ connection: SQLiteConnection, now: Int64) throws(SQLiteError) -> (counts: [JobState: Int], oldestDueAgeMilliseconds: Int64) {
        var counts: [JobState: Int] = [:]
        for row in try connection.query(depthCountsSQL) {
            if let state = JobState(rawValue: try row["state"]) { counts[state] = Int(try row["n", as: Int64.self]) }
        }
        if let floor = try LeaseFloor.walkStart(connection),
           let leased = try connection.queryOne("SELECT count(*) FROM jobs WHERE \(leasedAtInsert(from: 1))", [floor])?[0, as: Int64.self],
           leased > 0 {
            counts[.leased, default: 0] += Int(leased)
        }
        let done = try JobCounts.done(connection)
        if done > 0 { counts[.done] = done }
        let oldest: Int64? = try connection.queryOne(oldestDueSQL, [now])?["t"]
        return (counts, oldest.map { now - $0 } ?? 0)
    }

    /// Deletes at most `limit` done jobs created before `cutoff` (unix ms), lowest id first.
    /// Done jobs are in no index (migration 20), so the delete walks ids up from the lowest, and
    /// stops at the first job created at or after `cutoff`: jobs are created in id order (give or
    /// take the writer's queue), and without that bound the call that finds nothing left, the
    /// last of every purge, would read every job since. A job created before `cutoff` with an id
    /// past the bound waits for a later purge. - Returns: how many.
    @discardableResult
    static func purgeDone(_ connection: SQLiteConnection, createdBefore cutoff: Int64, limit: Int) throws(SQLiteError) -> Int {
        let bound = try firstID(connection, createdAtOrAfter: cutoff)
        return -(try JobCounts.changingDone(connection) { () throws(SQLiteError) in
            try connection.run("""
                DELETE FROM jobs WHERE id IN (
                    SELECT id FROM jobs WHERE id < ?3 AND state = 'done' AND created_at < ?1 ORDER BY id LIMIT ?2)
                """, [cutoff, Int64(limit), bound])
            return -connection.changes
        })
    }

    /// An id that parts the jobs created before `time` from those created at or after it: jobs
    /// with a lower id were created before, as far as a bisection of the ids can tell (creation
    /// times grow with them); ~20 seeks of the primary key, where a scan for the first young job
    /// would read every older one, on a first purge a million of them. The lowest id when every
    /// job is young, one past the highest when every job is older, 0 for no jobs.
    static func firstID(_ connection: SQLiteConnection, createdAtOrAfter time: Int64) throws(SQLiteError) -> Int64 {
        guard let row = try connection.queryOne("SELECT min(id) AS low, max(id) AS high FROM jobs") else { return 0 }
        let low: Int64? = try row["low"], high: Int64? = try row["high"]
        guard let low, let high else { return 0 }
        // Jobs below `lower` are older, jobs at or above `upper` younger; each turn narrows it.
        var lower = low, upper = high + 1
        while lower < upper {
            let middle = lower + (upper - lower) / 2
            let next = try connection.queryOne("SELECT id, created_at FROM jobs WHERE id >= ? AND id < ? ORDER BY id LIMIT 1",
                                               [middle, upper])
            guard let next else {
                upper = middle     // no job in middle..<upper: those from middle on are the younger ones
                continue
            }
            let id: Int64 = try next["id"], created: Int64 = try next["created_at"]
            if created >= time { upper = id } else { lower = id + 1 }
        }
        return upper
    }

    /// Deletes app `app`'s jobs and the push jobs of its devices (the app's deletion; jobs queued
    /// before schema 13 carry the default app's name), keeping the count of done jobs. Run before
    /// the devices are deleted. - Returns: how many.
    @discardableResult
    static func delete(_ connection: SQLiteConnection, app: String) throws(SQLiteError) -> Int {
        let ofDevices = "json_valid(payload_json) AND json_extract(payload_json, '$.device_id') IN (SELECT id FROM devices WHERE app = ?)"
        var deleted = 0
        for (matching, values) in [(ofDevices, [app]), ("app = ?", [app])] {
            _ = try JobCounts.changingDone(connection) { () throws(SQLiteError) in
                let done = try connection.queryOne("SELECT count(*) FROM jobs WHERE state = 'done' AND \(matching)", values)?[0, as: Int64.self] ?? 0
                try connection.run("DELETE FROM jobs WHERE \(matching)", values)
                deleted += connection.changes
                return -Int(done)
            }
        }
        // Jobs leased at insert may have gone with them, the floor's among them (ADR 0017).
        if deleted > 0 { try LeaseFloor.leftAny(connection) }
        return deleted
    }
}
