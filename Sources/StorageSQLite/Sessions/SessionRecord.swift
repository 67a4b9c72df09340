/// One sign-in (an access token's `sid`) as stored (DV-4).
public struct SessionRecord: Sendable, Equatable {
    public var sid: String
    public var app: String
    public var userID: String
    /// Unix ms.
    public var createdAt: Int64
    public var lastSeenAt: Int64
    /// Unix ms after which the session gets no pushes; nil = no expiry.
    public var expiresAt: Int64?
    /// Unix ms the session was ended (logout); nil while alive.
    public var endedAt: Int64?

    init(row: Row) throws(StorageError) {
        sid = try row["sid"]
        app = try row["app"]
        userID = try row["user_id"]
        createdAt = try row["created_at"]
        lastSeenAt = try row["last_seen_at"]
        expiresAt = try row["expires_at"]
        endedAt = try row["ended_at"]
    }

    /// Alive at `now` (unix ms): not ended and not past its expiry.
    public func isActive(at now: Int64) -> Bool {
        endedAt == nil && (expiresAt.map { $0 > now } ?? true)
    }
}
