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

    public init(sid: String, app: String = "default", userID: String, createdAt: Int64, lastSeenAt: Int64, expiresAt: Int64? = nil,
                endedAt: Int64? = nil) {
        self.sid = sid
        self.app = app
        self.userID = userID
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.expiresAt = expiresAt
        self.endedAt = endedAt
    }

    /// The session's name across apps.
    public var key: SessionKey { SessionKey(app: app, sid: sid) }

    /// Alive at `now` (unix ms): not ended and not past its expiry.
    public func isActive(at now: Int64) -> Bool {
        endedAt == nil && (expiresAt.map { $0 > now } ?? true)
    }
}

/// A session named with its app (ADR 0006): ending app A's session `s1` must not end, close or
/// refuse anything of another app's `s1`.
public struct SessionKey: Hashable, Sendable {
    /// The app id (`AppID.rawValue`).
    public var app: String
    /// The access tokens' `sid`.
    public var sid: String

    public init(app: String, sid: String) {
        self.app = app
        self.sid = sid
    }
}
