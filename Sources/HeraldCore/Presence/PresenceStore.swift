/// Who is connected, per session and per channel, whether each session is in the foreground
/// (RT-7, RT-7a), what it acknowledged, and which of its connections were written which
/// personal-channel message: the one place the push planner asks "did session S see event E live,
/// in the foreground" (NO-2).
///
/// Transports report into it from every event loop; the API and the planner read it from any
/// thread. Foreground is a lease, not a flag: a connection counts only while it showed app-level
/// life (a WebSocket frame or pong, a state report, an ack, or opening) within the lease. SSE
/// transports never report `life`: bytes a stream writes say nothing about the app. A WebSocket
/// whose server ping goes unanswered is closed by its transport, which reports `disconnected`
/// at once instead of letting the lease run out (issue 18).
///
/// # Synchronous by design
/// Every call is synchronous because transports call it on an event loop, per connection event
/// and per personal-channel message written. The memory adapter answers under one mutex. A remote
/// adapter must not block a loop on the network: it answers from a local cache fed by the broker
/// (presence and receipts of other nodes arrive as messages) and writes through in the background;
/// hence no call throws.
public protocol PresenceStore: Sendable {
    // MARK: Reports from transports

    /// A connection opened (counts as app-level life).
    /// - Parameters:
    ///   - sessionID: the token's `sid`; nil makes the connection its own session.
    ///   - channels: its channels, the personal one `user:{userID}` included or not.
    func connected(connectionID: String, userID: String, sessionID: String?, transport: StreamTransport,
                   state: AppState, channels: [ChannelName])

    /// Whether connection `connectionID`, just reported by `connected`, is known to every node's
    /// planner; when not yet, `done` is called once it is (SC-1, NO-8: a stream sends `ready`
    /// only then, so a notification that enters at another node after `ready` finds the
    /// connection and waits for its receipt instead of pushing as well).
    ///
    /// - Returns: true when the connection is known everywhere now (one process: always); `done`
    ///   is then never called. False: `done` will be called exactly once, on another thread —
    ///   when this node told the others (its presence message reached the broker), when that
    ///   failed (the connection is then as unknown there as without the wait, and a push errs
    ///   towards the device), or when the connection or the store is gone.
    func awaitAnnounced(connectionID: String, _ done: @escaping @Sendable () -> Void) -> Bool

    /// A connection closed. A session with a `sid` keeps its acks until `sweep` forgets it.
    func disconnected(connectionID: String)

    /// Channels added to or removed from a live connection (WebSocket subscribe/unsubscribe).
    func channelsChanged(connectionID: String, added: [ChannelName], removed: [ChannelName])

    /// App-level life on a connection (a WebSocket frame or pong): renews its lease.
    func life(connectionID: String)

    /// One connection reports its app state (WebSocket `state` frame); renews its lease.
    func setState(connectionID: String, _ state: AppState)

    /// Every live connection of a session takes `state` (`PUT /v1/me/sessions/current/state`).
    /// - Returns: how many connections changed.
    @discardableResult
    func setState(userID: String, sessionID: String, _ state: AppState) -> Int

    /// A session acknowledges event ids (WebSocket `ack`, `POST /v1/me/acks`); renews the lease of
    /// its connections. Kept per session, bounded (oldest dropped first).
    /// - Parameters:
    ///   - sessionID: the token's `sid`; when nil, the acks belong to `connectionID`'s own session.
    func acknowledge(sessionID: String?, connectionID: String?, userID: String, ids: [String])

    /// Records that the personal-channel message with stream sequence `sequence` was written to
    /// (or queued for) the connection. Called on the connection's loop for every such message.
    func deliveredPersonal(connectionID: String, sequence: UInt64)

    // MARK: Queries

    /// True when the session has a live `foreground` connection whose lease is fresh.
    func isForeground(userID: String, sessionID: String) -> Bool

    /// The planner's question (NO-2, NO-8): every live connection of `userID`, whether it was
    /// written the personal-channel message at stream sequence `sequence` on `user:{userID}` (or
    /// a later one), and whether it is in the foreground with a fresh lease now. One consistent
    /// picture of the user, sorted by connection id.
    func receipts(userID: String, personalSequence sequence: UInt64) -> [Presence.Receipt]

    /// Calls `done` once every connection of each user on *other nodes* has reported a receipt
    /// at or past its sequence, or when the store's deadline passes (ADR 0005: a receipt that
    /// does not come in time counts as not received, so the device gets a push). Background
    /// connections are waited for too: they do not change the push, but the delivery record
    /// names every connection that was written the event (`live_delivered`), as in one process.
    /// The push planner calls it after the local loop barrier and before `receipts`. A store that
    /// knows every connection exactly (one process) calls `done` at once, on the caller's thread.
    /// - Parameter wanted: users and the personal-channel sequence of their event.
    func awaitRemoteReceipts(_ wanted: [(userID: String, personalSequence: UInt64)], _ done: @escaping @Sendable () -> Void)

    /// True when session `sessionID` of `userID` acknowledged event id `id` (`unless_acked`).
    func hasAcknowledged(userID: String, sessionID: String, id: String) -> Bool

    /// Live sessions of a user, newest change first.
    func sessions(userID: String) -> [Presence.SessionSummary]

    /// Sessions with a connection subscribed to `channel`, each listing only those connections
    /// (for `user:{id}`, every connection of that user).
    func sessions(channel: ChannelName) -> [Presence.SessionSummary]

    /// Sessions with a live connection, and those of them in the foreground with a fresh lease.
    func sessionCounts() -> (live: Int, foreground: Int)

    /// Open connections by transport and reported state, e.g. `["sse|foreground": 3]` (metrics).
    func connectionCounts() -> [String: Int]

    /// Forgets sessions that have had no connection and no ack for `idleSeconds` (their acks
    /// matter only within the ack-or-push window). Called every few seconds.
    func sweep(idleSeconds: Int64)
}

extension PresenceStore {
    /// One process: the planner reads the same store the transports report into.
    public func awaitAnnounced(connectionID: String, _ done: @escaping @Sendable () -> Void) -> Bool {
        true
    }

    /// One process: every connection is local and the loop barrier already covered it.
    public func awaitRemoteReceipts(_ wanted: [(userID: String, personalSequence: UInt64)], _ done: @escaping @Sendable () -> Void) {
        done()
    }

    /// `sweep(idleSeconds:)` with the default idle time, 600 s.
    public func sweep() { sweep(idleSeconds: 600) }
}
