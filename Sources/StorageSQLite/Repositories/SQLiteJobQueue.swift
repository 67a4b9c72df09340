import HeraldCore

/// `JobQueue` over `JobStore`: a claim reads and leases its jobs in one transaction on the writer, so atomic.
struct SQLiteJobQueue: JobQueue {
    let connection: SQLiteConnection

    func enqueue(kind: String, payloadJSON: String, app: String, runAt: Int64, now: Int64) throws(StorageError) -> Int64 {
        try mapped { () throws(SQLiteError) in
            try JobStore.enqueue(connection, kind: kind, payloadJSON: payloadJSON, app: app, runAt: runAt, now: now)
        }
    }

    func enqueue(kind: String, payloadJSON: String, app: String, runAt: Int64, now: Int64, awaiting ack: AwaitedAck) throws(StorageError) -> Int64 {
        try mapped { () throws(SQLiteError) in
            try JobStore.enqueue(connection, kind: kind, payloadJSON: payloadJSON, app: app, runAt: runAt, now: now, awaiting: ack)
        }
    }

    func awaitsAck(app: String, userID: String, sessionID: String, eventIDs: [String]) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in
            try JobStore.awaitsAck(connection, app: app, userID: userID, sessionID: sessionID, eventIDs: eventIDs)
        }
    }

    func cancelAcknowledged(app: String, userID: String, sessionID: String, eventIDs: [String], note: String) throws(StorageError) -> [JobRecord] {
        try mapped { () throws(SQLiteError) in
            try JobStore.cancelAcknowledged(connection, app: app, userID: userID, sessionID: sessionID, eventIDs: eventIDs, note: note)
        }
    }

    func enqueueLeased(kind: String, payloadJSON: String, app: String, leaseUntil: Int64, now: Int64) throws(StorageError) -> JobRecord {
        try mapped { () throws(SQLiteError) in
            try JobStore.enqueueLeased(connection, kind: kind, payloadJSON: payloadJSON, app: app, leaseUntil: leaseUntil, now: now)
        }
    }

    func claim(kind: String, limit: Int, leaseMilliseconds: Int64, now: Int64) throws(StorageError) -> [JobRecord] {
        try mapped { () throws(SQLiteError) in try JobStore.claim(connection, kind: kind, limit: limit, leaseMilliseconds: leaseMilliseconds, now: now) }
    }

    func complete(_ lease: JobLease, note: String?) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try JobStore.complete(connection, lease, note: note) }
    }

    func retry(_ lease: JobLease, runAt: Int64, error: String, attempt: JobAttempt) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try JobStore.retry(connection, lease, runAt: runAt, error: error, attempt: attempt) }
    }

    func deadLetter(_ lease: JobLease, error: String, cause: DeadLetterCause, now: Int64) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try JobStore.deadLetter(connection, lease, error: error, cause: cause, now: now) }
    }

    func movePushJobs(fromDevices: [String], toDevice: String) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try JobStore.movePushJobs(connection, fromDevices: fromDevices, toDevice: toDevice) }
    }

    func releaseLeases(kind: String, now: Int64) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try JobStore.releaseLeases(connection, kind: kind, now: now) }
    }

    func find(id: Int64, app: String) throws(StorageError) -> JobRecord? {
        try mapped { () throws(SQLiteError) in try JobStore.find(connection, id: id, app: app) }
    }

    func list(app: String, state: JobState, limit: Int, beforeID: Int64?) throws(StorageError) -> [JobRecord] {
        try mapped { () throws(SQLiteError) in try JobStore.list(connection, app: app, state: state, limit: limit, beforeID: beforeID) }
    }

    func retryDead(id: Int64, app: String, now: Int64) throws(StorageError) -> Bool {
        try mapped { () throws(SQLiteError) in try JobStore.retryDead(connection, id: id, app: app, now: now) }
    }

    func retryDead(matching filter: DeadJobFilter, now: Int64) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try JobStore.retryDead(connection, matching: filter, now: now) }
    }

    func depth(now: Int64) throws(StorageError) -> JobQueueDepth {
        let (counts, age) = try mapped { () throws(SQLiteError) in try JobStore.depth(connection, now: now) }
        return JobQueueDepth(counts: counts, oldestDueAgeMilliseconds: age)
    }

    func purgeDone(createdBefore cutoff: Int64, limit: Int) throws(StorageError) -> Int {
        try mapped { () throws(SQLiteError) in try JobStore.purgeDone(connection, createdBefore: cutoff, limit: limit) }
    }
}
