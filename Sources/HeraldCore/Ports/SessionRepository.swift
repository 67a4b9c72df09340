/// Sessions, one per sign-in (an access token's `sid`, DV-4). Times are unix ms.
public protocol SessionRepository {
    /// Creates the session or refreshes it (`last_seen_at`; the expiry from the token unless the
    /// app backend set one). An ended session stays ended; a `sid` held by another user is left
    /// as it is (the record returned shows its owner).
    func touch(sid: String, userID: String, app: String, expiresAt: Int64?, now: Int64) throws(StorageError) -> SessionRecord

    /// App `app`'s session `sid`, if known (another app's session of that name is not found).
    func find(sid: String, app: String) throws(StorageError) -> SessionRecord?

    /// Ends app `app`'s session (creating its record if unknown, so its tokens are refused) and
    /// deletes its devices (of that app only).
    /// - Returns: devices deleted; nil when `sid` is another app's session (a `sid` is one app's,
    ///   ADR 0006): nothing changed then.
    func end(sid: String, app: String, now: Int64) throws(StorageError) -> Int?

    /// Sets or clears the expiry of app `app`'s session as its backend (`PUT /v1/sessions/{sid}`).
    /// - Returns: false when the app has no such session.
    func setExpiry(sid: String, app: String, expiresAt: Int64?) throws(StorageError) -> Bool

    /// Every ended session, every app's (loaded at start).
    func endedSessions() throws(StorageError) -> [SessionKey]
}

extension SessionRepository {
    /// `find(sid:app:)` for the default app.
    public func find(sid: String) throws(StorageError) -> SessionRecord? {
        try find(sid: sid, app: AppID.default.rawValue)
    }

    /// `end(sid:app:now:)` for the default app; 0 when `sid` is another app's.
    public func end(sid: String, now: Int64) throws(StorageError) -> Int {
        try end(sid: sid, app: AppID.default.rawValue, now: now) ?? 0
    }

    /// `setExpiry(sid:app:expiresAt:)` for the default app.
    public func setExpiry(sid: String, expiresAt: Int64?) throws(StorageError) -> Bool {
        try setExpiry(sid: sid, app: AppID.default.rawValue, expiresAt: expiresAt)
    }

    /// The default app's ended session ids.
    public func endedSessionIDs() throws(StorageError) -> [String] {
        try endedSessions().filter { $0.app == AppID.default.rawValue }.map(\.sid)
    }

    /// `touch(sid:userID:app:…)` for the default app.
    public func touch(sid: String, userID: String, expiresAt: Int64?, now: Int64) throws(StorageError) -> SessionRecord {
        try touch(sid: sid, userID: userID, app: "default", expiresAt: expiresAt, now: now)
    }
}
