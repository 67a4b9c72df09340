/// Sessions, one per sign-in (an access token's `sid`, DV-4). Times are unix ms. A session is
/// named by its app and its `sid` (ADR 0019): two apps' sessions of one `sid` are two sessions,
/// and no call of one app reads or changes the other's.
public protocol SessionRepository {
    /// Creates app `app`'s session or refreshes it (`last_seen_at`; the expiry from the token
    /// unless the app backend set one). An ended session stays ended; a `sid` held by another
    /// user of the app is left as it is (the record returned shows its owner).
    func touch(sid: String, userID: String, app: String, expiresAt: Int64?, now: Int64) throws(StorageError) -> SessionRecord

    /// App `app`'s session `sid`, if known.
    func find(sid: String, app: String) throws(StorageError) -> SessionRecord?

    /// Ends app `app`'s session (creating its record if unknown, so its tokens are refused) and
    /// deletes its devices.
    /// - Returns: devices deleted.
    func end(sid: String, app: String, now: Int64) throws(StorageError) -> Int

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

    /// `end(sid:app:now:)` for the default app.
    public func end(sid: String, now: Int64) throws(StorageError) -> Int {
        try end(sid: sid, app: AppID.default.rawValue, now: now)
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
