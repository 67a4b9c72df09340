/// NO-2 `unless_acked`, ADR 0025: an answered ack (`POST /v1/me/acks`) cancels in storage the
/// planned pushes waiting for it, so a restart inside their window cannot send them. Presence
/// keeps the ack too (the worker's check in the live case, and acks of events no push waits for).
public enum AcknowledgedPushes {
    /// The job's note and the delivery record's detail of a push cancelled by an ack, here or by
    /// the worker's in-memory check when the job comes due.
    static let note = "acked"

    /// Keeps an ack where a restart cannot lose it (ADR 0025, 0026; `POST /v1/me/acks` and the
    /// WebSocket `ack` alike): reads whether a queued push of app `app` waits for user `userID`'s
    /// session `sessionID`'s ack of one of `eventIDs`, and only when one does cancels them in one
    /// write. The in-memory ack (presence) is the caller's, before this.
    /// - Parameter clock: when the cancelled pushes' delivery records say they were acked.
    /// - Parameter completion: called once, on a storage thread: success once no push waiting for
    ///   the ids is left queued; else the read's or write's error (`StorageError` mostly), and the
    ///   ack may not be stored (repeating it is idempotent).
    public static func keep(in storage: any Storage, app: String, userID: String, sessionID: String, eventIDs: [String],
                            clock: any Clock = SystemClock(), completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        storage.read({ tx in try awaited(in: tx, app: app, userID: userID, sessionID: sessionID, eventIDs: eventIDs) }) { found in
            guard case .success(true) = found else { return completion(found.map { _ in () }) }
            storage.write({ tx in
                _ = try cancel(in: tx, app: app, userID: userID, sessionID: sessionID, eventIDs: eventIDs, now: clock.unixMilliseconds)
            }, completion: completion)
        }
    }

    /// Whether a queued push of app `app` waits for user `userID`'s (the `sub`) session
    /// `sessionID`'s ack of one of `eventIDs`: a read, so an ack no push waits for (nearly every
    /// one) writes nothing.
    /// - Throws: `StorageError` from the read.
    public static func awaited(in tx: any StorageTransaction, app: String, userID: String, sessionID: String,
                               eventIDs: [String]) throws(StorageError) -> Bool {
        try tx.jobs.awaitsAck(app: app, userID: userID, sessionID: sessionID, eventIDs: eventIDs)
    }

    /// Completes the queued pushes of app `app` waiting for user `userID`'s session `sessionID`'s
    /// ack of one of `eventIDs`, recording `suppressed_acked` at `now` (unix ms) in each one's delivery record.
    /// - Returns: how many were cancelled (a job already claimed is past its window: its worker's).
    /// - Throws: `StorageError` from the writes; nothing is cancelled then.
    public static func cancel(in tx: any StorageTransaction, app: String, userID: String, sessionID: String, eventIDs: [String],
                              now: Int64) throws -> Int {
        let cancelled = try tx.jobs.cancelAcknowledged(app: app, userID: userID, sessionID: sessionID, eventIDs: eventIDs, note: note)
        for job in cancelled {
            // A payload that does not decode has no delivery record to write to; the job is
            // cancelled all the same, as the worker skips it.
            guard let payload = try? DeliveryJobPayload.decode(job.payloadJSON) else { continue }
            try DeliveryWorker.record(tx, origin: payload.origin, deviceID: payload.deviceID, jobID: job.id, outcome: .suppressedAcked,
                                      detail: note, at: now)
        }
        return cancelled.count
    }
}
