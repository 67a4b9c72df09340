/// The values the `PresenceStore` port speaks in (RT-7, RT-7a, NO-2): a namespace, so call sites
/// read `Presence.Receipt`, `Presence.SessionSummary`.
public enum Presence {
    /// The key presence files a user under: the user id itself in the `default` app,
    /// `~{app}~{id}` in any other (ADR 0006), so two apps' equal user ids never meet. A `default`
    /// user id that itself starts with `~` is filed as `~default~{id}`, so no user id can name
    /// another app's user (an app id has no `~`, and `default` is no stored app's).
    public static func userKey(app: String, userID: String) -> String {
        if app == "default" && userID.utf8.first != UInt8(ascii: "~") { return userID }
        return AppNamespace.qualified(userID, app: app)
    }

    /// The user id a `userKey(app:userID:)` was made from (the key itself for `default`).
    public static func userID(fromKey key: String) -> String {
        AppNamespace.split(key).map { String($0.name) } ?? key
    }

    /// One live connection as presence sees it, at the moment it was read.
    public struct Connection: Sendable {
        public let connectionID: String
        public let userID: String
        public let sessionID: String?
        public let transport: StreamTransport
        public let state: AppState
        /// Channels the connection is subscribed to, the personal one first.
        public let channels: [ChannelName]
        /// Wall-clock ms of opening.
        public let openedAt: Int64
        /// Age of the connection's last app-level life when read, ms.
        public let leaseAgeMilliseconds: Int64
        /// The RT-7a lease was fresh when read (last life within the lease).
        public let leaseFresh: Bool

        public init(connectionID: String, userID: String, sessionID: String?, transport: StreamTransport, state: AppState,
                    channels: [ChannelName], openedAt: Int64, leaseAgeMilliseconds: Int64, leaseFresh: Bool) {
            self.connectionID = connectionID
            self.userID = userID
            self.sessionID = sessionID
            self.transport = transport
            self.state = state
            self.channels = channels
            self.openedAt = openedAt
            self.leaseAgeMilliseconds = leaseAgeMilliseconds
            self.leaseFresh = leaseFresh
        }
    }

    /// A session's summary (`GET /v1/users/{id}/sessions/live`).
    public struct SessionSummary: Sendable {
        public let sessionID: String?
        public let userID: String
        public let connections: [Connection]
        /// True when a connection is `foreground` with a fresh lease.
        public let foreground: Bool
        /// Wall-clock ms of the last state change or connect/disconnect.
        public let lastChangeAt: Int64
        /// Age of the freshest app-level life, ms.
        public let leaseAgeMilliseconds: Int64
        /// Newest event id the session acknowledged, if any.
        public let lastAck: String?
        /// Wall-clock ms of the last ack.
        public let lastAckAt: Int64?

        public init(sessionID: String?, userID: String, connections: [Connection], foreground: Bool, lastChangeAt: Int64,
                    leaseAgeMilliseconds: Int64, lastAck: String?, lastAckAt: Int64?) {
            self.sessionID = sessionID
            self.userID = userID
            self.connections = connections
            self.foreground = foreground
            self.lastChangeAt = lastChangeAt
            self.leaseAgeMilliseconds = leaseAgeMilliseconds
            self.lastAck = lastAck
            self.lastAckAt = lastAckAt
        }
    }

    /// How one live connection of a user stands towards one personal-channel message: the answer
    /// to the push planner's question (NO-2, NO-8).
    public struct Receipt: Sendable, Equatable {
        public let connectionID: String
        public let sessionID: String?
        public let transport: StreamTransport
        /// The message (or a later one of the personal channel) was written to the connection.
        public let received: Bool
        /// `foreground` with a fresh lease (RT-7a) when asked.
        public let foreground: Bool

        public init(connectionID: String, sessionID: String?, transport: StreamTransport, received: Bool, foreground: Bool) {
            self.connectionID = connectionID
            self.sessionID = sessionID
            self.transport = transport
            self.received = received
            self.foreground = foreground
        }
    }
}
