import HeraldCore
/// What a route hands the transport to open an SSE stream (RT-1): who the caller is, which
/// channels it may hear, and where it resumes. Authentication and grants are decided before.
public struct EventStreamRequest: Sendable {
    /// The token's `sub`.
    public var userID: String
    /// The token's `sid`, if any.
    public var sessionID: String?
    /// Channels to subscribe, personal channel first, no duplicates.
    public var channels: [ChannelName]
    /// From `Last-Event-ID` or `?last_event_id=`.
    public var resume: ResumePoint
    /// Unix seconds at which the stream must end with `token_expired` (RT-8c); nil = never.
    public var expiresAt: Int64?
    /// `?state=`, for presence (RT-7).
    public var appState: AppState
    /// Extra response headers (CORS).
    public var headers: HTTPHeaders
    /// The app the token was verified for (ADR 0006): deleting the app ends the stream.
    public var app: String = "default"

    /// The key presence and the per-user stream limit file the user under: apps' equal user ids
    /// are different users (ADR 0006).
    public var presenceUserID: String { Presence.userKey(app: app, userID: userID) }

    public init(userID: String, sessionID: String?, channels: [ChannelName], resume: ResumePoint,
                expiresAt: Int64?, appState: AppState = .foreground, headers: HTTPHeaders = HTTPHeaders()) {
        self.userID = userID
        self.sessionID = sessionID
        self.channels = channels
        self.resume = resume
        self.expiresAt = expiresAt
        self.appState = appState
        self.headers = headers
    }
}
