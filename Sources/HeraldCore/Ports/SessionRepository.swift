/// Sessions, one per sign-in (an access token's `sid`, DV-4). Times are unix ms.
public protocol SessionRepository {
    /// Creates the session or refreshes it (`last_seen_at`; the expiry from the token unless the
    /// app backend set one). An ended session stays ended; a `sid` held by another user is left
    /// as it is (the record returned shows its owner).
    func touch(sid: String, userID: String, app: String, expiresAt: Int64?, now: Int64) throws(StorageError) -> SessionRecord

    /// The session, if known.
    func find(sid: String) throws(StorageError) -> SessionRecord?

    /// Ends a session (creating its record if unknown, so its tokens are refused) and deletes its
    /// devices. - Returns: devices deleted.
    func end(sid: String, now: Int64) throws(StorageError) -> Int

    /// Sets or clears the expiry as the app backend (`PUT /v1/sessions/{sid}`).
    /// - Returns: false when the session is unknown.
    func setExpiry(sid: String, expiresAt: Int64?) throws(StorageError) -> Bool

    /// Every ended session id (loaded at start).
    func endedSessionIDs() throws(StorageError) -> [String]
}

extension SessionRepository {
    /// `touch(sid:userID:app:…)` for the default app.
    public func touch(sid: String, userID: String, expiresAt: Int64?, now: Int64) throws(StorageError) -> SessionRecord {
        try touch(sid: sid, userID: userID, app: "default", expiresAt: expiresAt, now: now)
    }
}
