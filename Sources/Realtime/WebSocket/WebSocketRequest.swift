import Foundation
import HeraldCore

/// Who a stream belongs to and what it may hear, as decided by the API from an access token.
public struct StreamIdentity: Sendable {
    /// The token's `sub`.
    public var userID: String
    /// The token's `sid`, if any.
    public var sessionID: String?
    /// Channels granted beyond the personal one (the token's `channels` claim).
    public var grants: [ChannelGrant]
    /// Unix seconds at which the stream must end (token `exp` plus leeway); nil = never.
    public var expiresAt: Int64?
    /// The app the token was verified for (ADR 0006): deleting the app ends the stream.
    public var app: String = "default"

    public init(userID: String, sessionID: String?, grants: [ChannelGrant], expiresAt: Int64?) {
        self.userID = userID
        self.sessionID = sessionID
        self.grants = grants
        self.expiresAt = expiresAt
    }

    /// The key presence and the per-user stream limit file the user under: apps' equal user ids
    /// are different users (ADR 0006).
    public var presenceUserID: String { Presence.userKey(app: app, userID: userID) }

    /// The personal channel `user:{sub}`, in the app's namespace (ADR 0006).
    public var personalChannel: ChannelName? { ChannelName.personal(userID: userID).map { ChannelName.scoped($0, app: app) } }

    /// True when the identity may subscribe to `channel`, as the client names it: its personal
    /// channel or a granted one.
    public func allows(_ channel: ChannelName) -> Bool {
        scoped(channel) == personalChannel || grants.contains { $0.allows(channel) }
    }

    /// `channel` (as the client names it) in the app's namespace: what the broker and hub use.
    public func scoped(_ channel: ChannelName) -> ChannelName { ChannelName.scoped(channel, app: app) }
}

/// Verifies an access token sent inside a WebSocket (`auth` and `refresh` frames): the identity,
/// or the error to report.
public typealias StreamTokenVerifier = @Sendable (String) -> Result<StreamIdentity, HTTPError>

/// Checks a `herald`-mode text message's bytes (UTF-8) before they are read as JSON: nil to read
/// it, or the refusal sent back as an `error` message (its `code`, `message` and `field`; the
/// status is not used). The API gives the same strict RFC 8259 check its request bodies pass, so
/// a message naming a member twice (`{"type":"ping","type":"auth"}`) is refused rather than read
/// by whichever copy Foundation keeps.
public typealias WebSocketMessageCheck = @Sendable ([UInt8]) -> HTTPError?

/// Keeps a WebSocket `ack` where a restart cannot lose it (ADR 0026), after the connection took it
/// in memory: called with the connection's identity and the acked event ids (at most 1,000 of a
/// message, or several messages' merged), off the connection's read loop. `done` is called once,
/// on any thread: nil once the ack is kept, else the error the client is told (its `code` and
/// `message`; the status is not used).
public typealias WebSocketAckKeeper = @Sendable (_ identity: StreamIdentity, _ ids: [String],
                                                 _ done: @escaping @Sendable (HTTPError?) -> Void) -> Void

/// What a route hands the transport to upgrade a connection to a WebSocket (RT-2).
public struct WebSocketRequest: Sendable {
    /// `herald`: the JSON protocol of docs/protocol.md. `echo`: every message echoed back, no
    /// auth (conformance testing only, behind `HERALD_WS_ECHO=1`).
    public enum Mode: Sendable { case herald, echo }

    public var mode: Mode
    /// The validated `Sec-WebSocket-Key`.
    public var key: String
    /// Known from the upgrade request's token; nil = the client must send an `auth` frame first.
    public var identity: StreamIdentity?
    /// Channels from `?channels=` to subscribe once authenticated (grants are checked then).
    public var channels: [ChannelName]
    /// `?last_event_id=` for those channels.
    public var resume: ResumePoint
    /// `?state=`.
    public var appState: AppState
    /// Checks tokens of `auth` / `refresh` frames.
    public var verifyToken: StreamTokenVerifier
    /// Checks each message's JSON syntax before it is read; nil reads every message as Foundation does.
    public var checkMessage: WebSocketMessageCheck?
    /// Keeps `ack` messages in storage, each answered `acked` once kept; nil keeps them in memory
    /// only and answers them at once (no storage behind the server).
    public var keepAcks: WebSocketAckKeeper?

    public init(mode: Mode, key: String, identity: StreamIdentity?, channels: [ChannelName] = [], resume: ResumePoint = .fresh,
                appState: AppState = .foreground, checkMessage: WebSocketMessageCheck? = nil, keepAcks: WebSocketAckKeeper? = nil,
                verifyToken: @escaping StreamTokenVerifier) {
        self.mode = mode
        self.key = key
        self.identity = identity
        self.channels = channels
        self.resume = resume
        self.appState = appState
        self.verifyToken = verifyToken
        self.checkMessage = checkMessage
        self.keepAcks = keepAcks
    }
}

/// Checks an HTTP request is a valid WebSocket opening handshake (RFC 6455 §4.2.1).
public enum WebSocketUpgrade {
    /// - Returns: the `Sec-WebSocket-Key`.
    /// - Throws: `HTTPError` 400 `upgrade_required` when it is not an upgrade (no `Upgrade: websocket`
    ///   / `Connection: upgrade`, not HTTP/1.1, bad key); 426 `unsupported_websocket_version` with
    ///   `Sec-WebSocket-Version: 13` for any other version.
    public static func validate(_ request: HTTPRequest) throws(HTTPError) -> String {
        let upgrade = request.headers.values("Upgrade").flatMap { $0.split(separator: ",") }
            .contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "websocket" }
        let connection = request.headers.values("Connection").flatMap { $0.split(separator: ",") }
            .contains { $0.trimmingCharacters(in: .whitespaces).lowercased() == "upgrade" }
        guard upgrade, connection, request.versionMinor >= 1 else {
            throw HTTPError(400, "upgrade_required", "this endpoint needs a WebSocket upgrade (Upgrade: websocket, Connection: Upgrade, HTTP/1.1)")
        }
        guard request.headers["Sec-WebSocket-Version"]?.trimmingCharacters(in: .whitespaces) == "13" else {
            throw HTTPError(426, "unsupported_websocket_version", "only WebSocket version 13 is supported",
                            headers: [("Sec-WebSocket-Version", "13")])
        }
        guard let key = request.headers["Sec-WebSocket-Key"]?.trimmingCharacters(in: .whitespaces),
              WebSocketHandshake.isValidKey(key) else {
            throw HTTPError(400, "upgrade_required", "Sec-WebSocket-Key must be the base64 of 16 bytes")
        }
        return key
    }
}

