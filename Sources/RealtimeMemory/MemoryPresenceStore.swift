import HeraldCore
import Synchronization

/// The in-process `PresenceStore` (RT-7, RT-7a, NO-2): one mutex over every connection, session
/// and channel membership of this node. Transports on every loop report into it; the API and the
/// push planner read it from any thread. Each call holds the lock for a few dictionary operations,
/// so it is safe to call on an event loop.
///
/// Foreground is a lease, not a flag: a connection counts only while it showed app-level life
/// (a WebSocket frame or pong, a state report, an ack, or opening) within `leaseNanoseconds`;
/// the transports end it sooner by disconnecting a WebSocket that stopped answering pings.
public final class MemoryPresenceStore: PresenceStore {
    /// One live connection, as kept under the lock.
    private struct Record {
        let connectionID: String
        let userID: String
        let sessionID: String?
        let transport: StreamTransport
        var state: AppState
        /// Channels beyond the personal one (every stream has `user:{userID}`; it is not stored
        /// per connection, and presence of a personal channel is answered from `byUser`).
        var extraChannels: SmallSet<ChannelName>
        /// Channels the connection is subscribed to, the personal one first.
        var channels: [ChannelName] {
            (ChannelName.personal(userID: userID).map { [$0] } ?? []) + extraChannels.sorted()
        }
        /// Wall-clock ms of opening.
        let openedAt: Int64
        /// Monotonic ns of the last app-level life.
        var lastLifeAt: UInt64
        /// Sequence of the newest message on the personal channel written to this connection.
        var personalSequence: UInt64
    }

    private struct Session {
        let userID: String
        var connectionIDs: SmallSet<String> = []
        var lastChangeAt: Int64 = 0
        var lastLifeAt: UInt64 = 0
        /// Acknowledged event ids, oldest first, bounded.
        var acks: [String] = []
        var ackSet: Set<String> = []
        var lastAckAt: Int64?
    }

    private struct State: ~Copyable {
        var connections: [String: Record] = [:]
        var sessions: [String: Session] = [:]
        var byUser: [String: SmallSet<String>] = [:]        // user → session keys
        var byChannel: [ChannelName: SmallSet<String>] = [:] // non-personal channel → connection ids
    }

    private let state = Mutex(State())
    /// RT-7a lease (`HERALD_FOREGROUND_LEASE_SECONDS`), ns.
    public let leaseNanoseconds: UInt64
    /// Acks kept per session.
    public let maxAcksPerSession: Int
    private let clock: any Clock

    /// - Parameters:
    ///   - leaseSeconds: how long app-level life keeps a connection foreground
    ///     (`HERALD_FOREGROUND_LEASE_SECONDS`).
    ///   - maxAcksPerSession: bound of the per-session ack memory.
    ///   - clock: monotonic time for leases, wall time for what is shown (tests pass a `ManualClock`).
    public init(leaseSeconds: Int = 45, maxAcksPerSession: Int = 256, clock: any Clock = SystemClock()) {
        self.leaseNanoseconds = UInt64(max(leaseSeconds, 1)) * 1_000_000_000
        self.maxAcksPerSession = max(maxAcksPerSession, 1)
        self.clock = clock
    }

    private func monotonic() -> UInt64 { clock.monotonicNanoseconds }
    private func wallClockMilliseconds() -> Int64 { clock.unixMilliseconds }

    /// Sessions are per user: two users whose tokens carry the same `sid` never share one.
    private static func sessionKey(_ sessionID: String?, userID: String, connectionID: String) -> String {
        // A token without `sid` has no session to share: its connection is its own session.
        sessionID.map { sessionKey(userID: userID, sessionID: $0) } ?? "c:" + connectionID
    }

    private static func sessionKey(userID: String, sessionID: String) -> String {
        "s:" + userID + "\u{0}" + sessionID
    }

    // MARK: - Reports from transports

    /// A connection opened (counts as app-level life).
    public func connected(connectionID: String, userID: String, sessionID: String?, transport: StreamTransport,
                          state appState: AppState, channels: [ChannelName]) {
        let now = monotonic()
        let wall = wallClockMilliseconds()
        let personal = ChannelName.personal(userID: userID)
        state.withLock { state in
            let key = Self.sessionKey(sessionID, userID: userID, connectionID: connectionID)
            state.connections[connectionID] = Record(
                connectionID: connectionID, userID: userID, sessionID: sessionID, transport: transport,
                state: appState, extraChannels: SmallSet(channels.filter { $0 != personal }), openedAt: wall, lastLifeAt: now,
                personalSequence: 0)
            state.sessions[key, default: Session(userID: userID)].connectionIDs.insert(connectionID)
            state.sessions[key]!.lastChangeAt = wall
            state.sessions[key]!.lastLifeAt = now
            state.byUser[userID, default: []].insert(key)
            for channel in channels where channel != personal { state.byChannel[channel, default: []].insert(connectionID) }
        }
    }

    /// A connection closed.
    public func disconnected(connectionID: String) {
        let wall = wallClockMilliseconds()
        state.withLock { state in
            guard let connection = state.connections.removeValue(forKey: connectionID) else { return }
            for channel in connection.extraChannels { Self.remove(connectionID, from: channel, in: &state) }
            let key = Self.sessionKey(connection.sessionID, userID: connection.userID, connectionID: connectionID)
            state.sessions[key]?.connectionIDs.remove(connectionID)
            state.sessions[key]?.lastChangeAt = wall
            // A session with a sid keeps its acks while its client reconnects (`sweep` ends that);
            // a connection-only session ends with its connection.
            if let session = state.sessions[key], session.connectionIDs.isEmpty,
               connection.sessionID == nil || session.acks.isEmpty {
                Self.forget(key, userID: session.userID, in: &state)
            }
        }
    }

    /// Channels added to or removed from a live connection (WebSocket subscribe/unsubscribe).
    public func channelsChanged(connectionID: String, added: [ChannelName], removed: [ChannelName]) {
        state.withLock { state in
            guard let connection = state.connections[connectionID] else { return }
            let personal = ChannelName.personal(userID: connection.userID)
            for channel in added where channel != personal {
                state.connections[connectionID]!.extraChannels.insert(channel)
                state.byChannel[channel, default: []].insert(connectionID)
            }
            for channel in removed where channel != personal {
                state.connections[connectionID]!.extraChannels.remove(channel)
                Self.remove(connectionID, from: channel, in: &state)
            }
        }
    }

    /// App-level life on a connection (a WebSocket frame or pong): renews its lease.
    public func life(connectionID: String) {
        let now = monotonic()
        state.withLock { state in
            guard let connection = state.connections[connectionID] else { return }
            state.connections[connectionID]!.lastLifeAt = now
            let key = Self.sessionKey(connection.sessionID, userID: connection.userID, connectionID: connectionID)
            state.sessions[key]?.lastLifeAt = now
        }
    }

    /// One connection reports its app state (WebSocket `state` frame). Renews its lease.
    public func setState(connectionID: String, _ appState: AppState) {
        let now = monotonic()
        let wall = wallClockMilliseconds()
        state.withLock { state in
            guard let connection = state.connections[connectionID] else { return }
            state.connections[connectionID]!.state = appState
            state.connections[connectionID]!.lastLifeAt = now
            let key = Self.sessionKey(connection.sessionID, userID: connection.userID, connectionID: connectionID)
            state.sessions[key]?.lastChangeAt = wall
            state.sessions[key]?.lastLifeAt = now
        }
    }

    /// Every live connection of a session takes `appState` (`PUT /v1/me/sessions/current/state`).
    /// - Returns: how many connections changed.
    @discardableResult
    public func setState(userID: String, sessionID: String, _ appState: AppState) -> Int {
        let now = monotonic()
        let wall = wallClockMilliseconds()
        return state.withLock { state in
            let key = Self.sessionKey(userID: userID, sessionID: sessionID)
            guard let session = state.sessions[key] else { return 0 }
            for id in session.connectionIDs {
                state.connections[id]?.state = appState
                state.connections[id]?.lastLifeAt = now
            }
            state.sessions[key]!.lastChangeAt = wall
            state.sessions[key]!.lastLifeAt = now
            return session.connectionIDs.count
        }
    }

    /// A session acknowledges event ids (WebSocket `ack`, `POST /v1/me/acks`); renews the lease of
    /// its connections. Kept per session, bounded (oldest dropped first).
    public func acknowledge(sessionID: String?, connectionID: String?, userID: String, ids: [String]) {
        let now = monotonic()
        let wall = wallClockMilliseconds()
        state.withLock { state in
            let key: String
            if let sessionID {
                key = Self.sessionKey(userID: userID, sessionID: sessionID)
            } else if let connectionID {
                key = "c:" + connectionID
            } else {
                return
            }
            var session = state.sessions[key] ?? Session(userID: userID)
            for id in ids where !session.ackSet.contains(id) {
                session.acks.append(id)
                session.ackSet.insert(id)
            }
            if session.acks.count > maxAcksPerSession {
                let excess = session.acks.count - maxAcksPerSession
                for id in session.acks.prefix(excess) { session.ackSet.remove(id) }
                session.acks.removeFirst(excess)
            }
            session.lastAckAt = wall
            session.lastLifeAt = now
            for id in session.connectionIDs { state.connections[id]?.lastLifeAt = now }
            if state.sessions[key] == nil { state.byUser[userID, default: []].insert(key) }
            state.sessions[key] = session
        }
    }

    /// Records that a message of the connection's personal channel was written to it.
    public func deliveredPersonal(connectionID: String, sequence: UInt64) {
        state.withLock { state in
            guard let current = state.connections[connectionID]?.personalSequence, sequence > current else { return }
            state.connections[connectionID]!.personalSequence = sequence
        }
    }

    // MARK: - Queries

    /// True when session `sessionID` has a live `foreground` connection whose lease is fresh.
    public func isForeground(userID: String, sessionID: String) -> Bool {
        let now = monotonic()
        return state.withLock { state in
            guard let session = state.sessions[Self.sessionKey(userID: userID, sessionID: sessionID)] else { return false }
            return session.connectionIDs.contains { id in
                guard let c = state.connections[id] else { return false }
                return c.state == .foreground && now &- c.lastLifeAt <= leaseNanoseconds
            }
        }
    }

    /// True when a live, foreground (fresh lease) connection of the session was written the
    /// personal-channel message with stream sequence `sequence` (or a later one).
    public func receivedInForeground(userID: String, sessionID: String, personalSequence sequence: UInt64) -> Bool {
        let now = monotonic()
        return state.withLock { state in
            guard let session = state.sessions[Self.sessionKey(userID: userID, sessionID: sessionID)] else { return false }
            return session.connectionIDs.contains { id in
                guard let c = state.connections[id] else { return false }
                return c.state == .foreground && now &- c.lastLifeAt <= leaseNanoseconds && c.personalSequence >= sequence
            }
        }
    }

    /// Every live connection of `userID` and whether it was written the personal-channel message
    /// with stream sequence `sequence` (NO-2, NO-8). One lock for the whole answer, so the planner
    /// sees one consistent picture of a user.
    public func receipts(userID: String, personalSequence sequence: UInt64) -> [Presence.Receipt] {
        let now = monotonic()
        return state.withLock { state in
            var receipts: [Presence.Receipt] = []
            for key in state.byUser[userID] ?? [] {
                guard let session = state.sessions[key] else { continue }
                for id in session.connectionIDs {
                    guard let c = state.connections[id] else { continue }
                    receipts.append(Presence.Receipt(connectionID: id, sessionID: c.sessionID, transport: c.transport,
                                            received: c.personalSequence >= sequence,
                                            foreground: c.state == .foreground && now &- c.lastLifeAt <= leaseNanoseconds))
                }
            }
            return receipts.sorted { $0.connectionID < $1.connectionID }
        }
    }

    /// True when the session acknowledged event id `id`.
    public func hasAcknowledged(userID: String, sessionID: String, id: String) -> Bool {
        state.withLock { $0.sessions[Self.sessionKey(userID: userID, sessionID: sessionID)]?.ackSet.contains(id) ?? false }
    }

    /// Live (and recently acknowledging) sessions of a user, newest change first.
    public func sessions(userID: String) -> [Presence.SessionSummary] {
        let now = monotonic()
        return state.withLock { state in
            (state.byUser[userID] ?? []).compactMap { key in summary(key, state: state, now: now) }
                .filter { !$0.connections.isEmpty }
                .sorted { $0.lastChangeAt > $1.lastChangeAt }
        }
    }

    /// Sessions with a connection subscribed to `channel`, each listing only those connections.
    public func sessions(channel: ChannelName) -> [Presence.SessionSummary] {
        let now = monotonic()
        return state.withLock { state in
            var ids = state.byChannel[channel] ?? []
            // A personal channel `user:{id}`: every connection of that user is on it.
            if channel.rawValue.hasPrefix("user:") {
                let userID = String(channel.rawValue.dropFirst(5))
                for key in state.byUser[userID] ?? [] {
                    for id in state.sessions[key]?.connectionIDs ?? [] { ids.insert(id) }
                }
            }
            var keys: Set<String> = []
            for id in ids {
                if let c = state.connections[id] { keys.insert(Self.sessionKey(c.sessionID, userID: c.userID, connectionID: id)) }
            }
            return keys.compactMap { key -> Presence.SessionSummary? in
                guard let full = summary(key, state: state, now: now) else { return nil }
                let onChannel = full.connections.filter { ids.contains($0.connectionID) }
                return Presence.SessionSummary(sessionID: full.sessionID, userID: full.userID, connections: onChannel,
                                      foreground: full.foreground, lastChangeAt: full.lastChangeAt,
                                      leaseAgeMilliseconds: full.leaseAgeMilliseconds, lastAck: full.lastAck, lastAckAt: full.lastAckAt)
            }.sorted { ($0.userID, $0.sessionID ?? "") < ($1.userID, $1.sessionID ?? "") }
        }
    }

    /// Sessions with a live connection, and those of them in the foreground with a fresh lease.
    public func sessionCounts() -> (live: Int, foreground: Int) {
        let now = monotonic()
        return state.withLock { state in
            var live = 0, foreground = 0
            for session in state.sessions.values where !session.connectionIDs.isEmpty {
                live += 1
                if session.connectionIDs.contains(where: { id in
                    guard let c = state.connections[id] else { return false }
                    return c.state == .foreground && now &- c.lastLifeAt <= leaseNanoseconds
                }) { foreground += 1 }
            }
            return (live, foreground)
        }
    }

    /// Open connections by transport and reported state, e.g. `["sse|foreground": 3]`.
    public func connectionCounts() -> [String: Int] {
        state.withLock { state in
            var counts: [String: Int] = [:]
            for c in state.connections.values { counts["\(c.transport.rawValue)|\(c.state)", default: 0] += 1 }
            return counts
        }
    }

    private func summary(_ key: String, state: borrowing State, now: UInt64) -> Presence.SessionSummary? {
        guard let session = state.sessions[key] else { return nil }
        let records = session.connectionIDs.compactMap { state.connections[$0] }.sorted { $0.openedAt < $1.openedAt }
        let userID = session.userID
        let foreground = records.contains { $0.state == .foreground && now &- $0.lastLifeAt <= leaseNanoseconds }
        let connections = records.map { r in
            Presence.Connection(connectionID: r.connectionID, userID: r.userID, sessionID: r.sessionID, transport: r.transport,
                                state: r.state, channels: r.channels, openedAt: r.openedAt,
                                leaseAgeMilliseconds: Int64((now &- r.lastLifeAt) / 1_000_000),
                                leaseFresh: now &- r.lastLifeAt <= leaseNanoseconds)
        }
        let sessionID: String? = key.hasPrefix("s:") ? key.split(separator: "\u{0}", maxSplits: 1).last.map(String.init) : nil
        return Presence.SessionSummary(sessionID: sessionID, userID: userID, connections: connections, foreground: foreground,
                              lastChangeAt: session.lastChangeAt,
                              leaseAgeMilliseconds: Int64((now &- session.lastLifeAt) / 1_000_000),
                              lastAck: session.acks.last, lastAckAt: session.lastAckAt)
    }

    /// Forgets sessions that have had no connection and no ack for `idleSeconds` (their acks
    /// matter only within the ack-or-push window). Called periodically.
    public func sweep(idleSeconds: Int64) {
        let cutoff = wallClockMilliseconds() - idleSeconds * 1000
        state.withLock { state in
            let stale = state.sessions.filter { _, s in
                s.connectionIDs.isEmpty && max(s.lastChangeAt, s.lastAckAt ?? 0) < cutoff
            }
            for (key, session) in stale { Self.forget(key, userID: session.userID, in: &state) }
        }
    }

    private static func forget(_ key: String, userID: String, in state: inout State) {
        state.sessions[key] = nil
        state.byUser[userID]?.remove(key)
        if state.byUser[userID]?.isEmpty == true { state.byUser[userID] = nil }
    }

    private static func remove(_ connectionID: String, from channel: ChannelName, in state: inout State) {
        state.byChannel[channel]?.remove(connectionID)
        if state.byChannel[channel]?.isEmpty == true { state.byChannel[channel] = nil }
    }
}
