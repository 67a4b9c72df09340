import HeraldCore

extension JobRecord {
    init(row: Row) throws(SQLiteError) {
        let rawState: String = try row["state"]
        guard let state = JobState(rawValue: rawState) else {
            throw .decode(column: "state", expected: "queued|leased|done|dead", found: rawState)
        }
        let deadReason: String? = try row["dead_reason"]
        let deadProvider: String? = try row["dead_provider"]
        self.init(id: try row["id"], kind: try row["kind"], payloadJSON: try row["payload_json"], state: state,
                  attempts: Int(try row["attempts", as: Int64.self]), runAt: try row["run_at"], leaseUntil: try row["lease_until"],
                  lastError: try row["last_error"], createdAt: try row["created_at"], deadAt: try row["dead_at"],
                  uncountedAttempts: Int(try row["uncounted_attempts", as: Int64.self]), firstAttemptAt: try row["first_attempt_at"],
                  deadCause: deadReason.map { DeadLetterCause(provider: deadProvider, reason: $0) }, app: try row["app"],
                  turnedAwayAttempts: Int(try row["turned_away_attempts", as: Int64.self]))
    }
}
