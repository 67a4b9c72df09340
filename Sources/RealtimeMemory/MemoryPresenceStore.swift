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
///
/// Memory (issue 17: ≤ 1.2 KiB per idle SSE stream): every connection costs one entry in
/// `connections` and one in `byUser`, nothing else. A session is its connections; it gets an
/// entry of its own in `sessions` only when the connections alone cannot say what it is (two
/// connections at once, acks, or a session that outlives its connections until the sweep). Before,
/// each connection also had a session record and a user → sessions entry: 568 of an idle stream's
/// 1,625 heap bytes at 2,000 streams, 280 after (massif).
public final class MemoryPresenceStore: PresenceStore {
    /// Channels beyond the personal one, boxed: most connections have none, and inline the set
    /// would cost every connection's entry 16 bytes more.
    private final class ExtraChannels {
        var names: SmallSet<ChannelName>
        init(_ names: SmallSet<ChannelName>) { self.names = names }
    }

    /// One live connection, as kept under the lock (its id is the key).
    private struct Record {
        let userID: String
        let sessionID: String?
        /// nil when the connection is on its personal channel only.
        var extras: ExtraChannels?
        /// Wall-clock ms of opening.
        let openedAt: Int64
        /// Wall-clock ms of the last change of this connection (open, state report): the session's
        /// `lastChangeAt` while the session has no entry of its own.
        var changedAt: Int64
        /// Monotonic ns of the last app-level life.
        var lastLifeAt: UInt64
        /// Sequence of the newest message on the personal channel written to this connection.
        var personalSequence: UInt64
        let transport: StreamTransport
        /// The app state as one byte: `AppState` is a String (16 bytes), and with it the record
        /// took 96 bytes a bucket instead of 80 in a dictionary of 16,384 buckets at 10,000
        /// streams (issue 17: 27 of an idle stream's bytes).
        private var isForeground: Bool

        var state: AppState {
            get { isForeground ? .foreground : .background }
            set { isForeground = newValue == .foreground }
        }

        init(userID: String, sessionID: String?, extras: ExtraChannels?, openedAt: Int64, changedAt: Int64,
             lastLifeAt: UInt64, personalSequence: UInt64, transport: StreamTransport, state: AppState) {
            self.userID = userID
            self.sessionID = sessionID
            self.extras = extras
            self.openedAt = openedAt
            self.changedAt = changedAt
            self.lastLifeAt = lastLifeAt
            self.personalSequence = personalSequence
            self.transport = transport
            self.isForeground = state == .foreground
        }

        /// Channels the connection is subscribed to, the personal one first.
        var channels: [ChannelName] {
            (ChannelName.personal(userID: userID).map { [$0] } ?? []) + (extras?.names.sorted() ?? [])
        }

        func sessionKey(connectionID: String) -> String {
            MemoryPresenceStore.sessionKey(sessionID, userID: userID, connectionID: connectionID)
        }
    }

    /// What a session is beyond its connections. Kept only for a session that held two
    /// connections at once, acknowledged something, or must outlive its connections; a session
    /// with one connection and no acks is that connection (its times are the connection's).
    private struct Session {
        let userID: String
        var lastChangeAt: Int64 = 0
        var lastLifeAt: UInt64 = 0
        var acks: AckLog?
    }

    /// Acknowledged event ids of a session, oldest first, bounded.
    private struct AckLog {
        var ids: [String] = []
        var set: Set<String> = []
        var lastAt: Int64 = 0
    }

    private struct State: ~Copyable {
        var connections: [String: Record] = [:]
        var sessions: [String: Session] = [:]
        var byUser: [String: SmallSet<String>] = [:]        // user → connection ids
        var byChannel: [ChannelName: SmallSet<String>] = [:] // non-personal channel → connection ids

        /// Live connections of session `key` of `userID`.
        func connectionIDs(ofSession key: String, userID: String) -> [String] {
            guard let ids = byUser[userID] else { return [] }
            return ids.filter { id in connections[id]?.sessionKey(connectionID: id) == key }
        }
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

    private func isFresh(_ record: Record, now: UInt64) -> Bool {
        record.state == .foreground && now &- record.lastLifeAt <= leaseNanoseconds
    }

    // MARK: - Reports from transports

    /// A connection opened (counts as app-level life).
    public func connected(connectionID: String, userID: String, sessionID: String?, transport: StreamTransport,
                          state appState: AppState, channels: [ChannelName]) {
        let now = monotonic()
        let wall = wallClockMilliseconds()
        let personal = ChannelName.personal(userID: userID)
        let extras = SmallSet(channels.filter { $0 != personal })
        state.withLock { state in
            let key = Self.sessionKey(sessionID, userID: userID, connectionID: connectionID)
            // A second connection of the session: from now on the session's times are its own.
            if state.sessions[key] == nil, sessionID != nil, !state.connectionIDs(ofSession: key, userID: userID).isEmpty {
                state.sessions[key] = Session(userID: userID)
            }
            state.sessions[key]?.lastChangeAt = wall
            state.sessions[key]?.lastLifeAt = now
            state.connections[connectionID] = Record(
                userID: userID, sessionID: sessionID, extras: extras.isEmpty ? nil : ExtraChannels(extras),
                openedAt: wall, changedAt: wall, lastLifeAt: now, personalSequence: 0, transport: transport, state: appState)
            state.byUser[userID, default: []].insert(connectionID)
            for channel in extras { state.byChannel[channel, default: []].insert(connectionID) }
        }
    }

    /// A connection closed.
    public func disconnected(connectionID: String) {
        let wall = wallClockMilliseconds()
        state.withLock { state in
            guard let connection = state.connections.removeValue(forKey: connectionID) else { return }
            // A peak's buckets go back once it has passed (issue 17, Benchmarks/peak.py).
            state.connections.shrinkIfSparse()
            for channel in connection.extras?.names ?? [] { Self.remove(connectionID, from: channel, in: &state) }
            state.byUser[connection.userID]?.remove(connectionID)
            if state.byUser[connection.userID]?.isEmpty == true {
                state.byUser[connection.userID] = nil
                state.byUser.shrinkIfSparse()
            }
            let key = connection.sessionKey(connectionID: connectionID)
            guard state.sessions[key] != nil else { return }
            state.sessions[key]!.lastChangeAt = wall
            // A session with a sid keeps its acks while its client reconnects (`sweep` ends that);
            // a connection-only session ends with its connection.
            if connection.sessionID == nil || state.sessions[key]!.acks?.ids.isEmpty ?? true,
               state.connectionIDs(ofSession: key, userID: connection.userID).isEmpty {
                state.sessions[key] = nil
                state.sessions.shrinkIfSparse()
            }
        }
    }

    /// Channels added to or removed from a live connection (WebSocket subscribe/unsubscribe).
    public func channelsChanged(connectionID: String, added: [ChannelName], removed: [ChannelName]) {
        state.withLock { state in
            guard let connection = state.connections[connectionID] else { return }
            let personal = ChannelName.personal(userID: connection.userID)
            let extras = connection.extras ?? ExtraChannels([])
            for channel in added where channel != personal {
                extras.names.insert(channel)
                state.byChannel[channel, default: []].insert(connectionID)
            }
            for channel in removed where channel != personal {
                extras.names.remove(channel)
                Self.remove(connectionID, from: channel, in: &state)
            }
            state.connections[connectionID]!.extras = extras.names.isEmpty ? nil : extras
        }
    }

    /// App-level life on a connection (a WebSocket frame or pong): renews its lease.
    public func life(connectionID: String) {
        let now = monotonic()
        state.withLock { state in
            guard let connection = state.connections[connectionID] else { return }
            state.connections[connectionID]!.lastLifeAt = now
            guard !state.sessions.isEmpty else { return }
            state.sessions[connection.sessionKey(connectionID: connectionID)]?.lastLifeAt = now
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
            state.connections[connectionID]!.changedAt = wall
            let key = connection.sessionKey(connectionID: connectionID)
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
            let ids = state.connectionIDs(ofSession: key, userID: userID)
            guard !ids.isEmpty || state.sessions[key] != nil else { return 0 }
            for id in ids {
                state.connections[id]!.state = appState
                state.connections[id]!.lastLifeAt = now
                state.connections[id]!.changedAt = wall
            }
            state.sessions[key]?.lastChangeAt = wall
            state.sessions[key]?.lastLifeAt = now
            return ids.count
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
            let connectionIDs = state.connectionIDs(ofSession: key, userID: userID)
            // The session's change time so far is its one connection's, if it has one.
            var session = state.sessions[key]
                ?? Session(userID: userID, lastChangeAt: connectionIDs.first.flatMap { state.connections[$0]?.changedAt } ?? 0)
            var log = session.acks ?? AckLog()
            for id in ids where !log.set.contains(id) {
                log.ids.append(id)
                log.set.insert(id)
            }
            if log.ids.count > maxAcksPerSession {
                let excess = log.ids.count - maxAcksPerSession
                for id in log.ids.prefix(excess) { log.set.remove(id) }
                log.ids.removeFirst(excess)
            }
            log.lastAt = wall
            session.acks = log
            session.lastLifeAt = now
            for id in connectionIDs { state.connections[id]!.lastLifeAt = now }
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
            state.connectionIDs(ofSession: Self.sessionKey(userID: userID, sessionID: sessionID), userID: userID).contains { id in
                isFresh(state.connections[id]!, now: now)
            }
        }
    }

    /// True when a live, foreground (fresh lease) connection of the session was written the
    /// personal-channel message with stream sequence `sequence` (or a later one).
    public func receivedInForeground(userID: String, sessionID: String, personalSequence sequence: UInt64) -> Bool {
        let now = monotonic()
        return state.withLock { state in
            state.connectionIDs(ofSession: Self.sessionKey(userID: userID, sessionID: sessionID), userID: userID).contains { id in
                let c = state.connections[id]!
                return isFresh(c, now: now) && c.personalSequence >= sequence
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
            for id in state.byUser[userID] ?? [] {
                guard let c = state.connections[id] else { continue }
                receipts.append(Presence.Receipt(connectionID: id, sessionID: c.sessionID, transport: c.transport,
                                                 received: c.personalSequence >= sequence, foreground: isFresh(c, now: now)))
            }
            return receipts.sorted { $0.connectionID < $1.connectionID }
        }
    }

    /// True when the session acknowledged event id `id`.
    public func hasAcknowledged(userID: String, sessionID: String, id: String) -> Bool {
        state.withLock { $0.sessions[Self.sessionKey(userID: userID, sessionID: sessionID)]?.acks?.set.contains(id) ?? false }
    }

    /// Live (and recently acknowledging) sessions of a user, newest change first.
    public func sessions(userID: String) -> [Presence.SessionSummary] {
        let now = monotonic()
        return state.withLock { state in
            var keys: [String] = []
            for id in state.byUser[userID] ?? [] {
                guard let key = state.connections[id]?.sessionKey(connectionID: id), !keys.contains(key) else { continue }
                keys.append(key)
            }
            return keys.compactMap { key in summary(key, userID: userID, state: state, now: now) }
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
                for id in state.byUser[String(channel.rawValue.dropFirst(5))] ?? [] { ids.insert(id) }
            }
            var sessionsSeen: [String: String] = [:]   // session key → user
            for id in ids {
                if let c = state.connections[id] { sessionsSeen[c.sessionKey(connectionID: id)] = c.userID }
            }
            return sessionsSeen.compactMap { key, userID -> Presence.SessionSummary? in
                guard let full = summary(key, userID: userID, state: state, now: now) else { return nil }
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
            // A session without an entry has exactly one connection: it counts through it.
            for (id, c) in state.connections where state.sessions.isEmpty || state.sessions[c.sessionKey(connectionID: id)] == nil {
                live += 1
                if isFresh(c, now: now) { foreground += 1 }
            }
            for (key, session) in state.sessions {
                let ids = state.connectionIDs(ofSession: key, userID: session.userID)
                guard !ids.isEmpty else { continue }
                live += 1
                if ids.contains(where: { isFresh(state.connections[$0]!, now: now) }) { foreground += 1 }
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

    /// Session `key` of `userID` as shown; nil when it has no live connection.
    private func summary(_ key: String, userID: String, state: borrowing State, now: UInt64) -> Presence.SessionSummary? {
        let ids = state.connectionIDs(ofSession: key, userID: userID)
        guard !ids.isEmpty else { return nil }
        let records = ids.map { ($0, state.connections[$0]!) }.sorted { $0.1.openedAt < $1.1.openedAt }
        let session = state.sessions[key]
        let foreground = records.contains { isFresh($0.1, now: now) }
        let connections = records.map { id, r in
            Presence.Connection(connectionID: id, userID: r.userID, sessionID: r.sessionID, transport: r.transport,
                                state: r.state, channels: r.channels, openedAt: r.openedAt,
                                leaseAgeMilliseconds: Int64((now &- r.lastLifeAt) / 1_000_000),
                                leaseFresh: now &- r.lastLifeAt <= leaseNanoseconds)
        }
        // Without an entry the session is its one connection.
        let lastChangeAt = session?.lastChangeAt ?? records[0].1.changedAt
        let lastLifeAt = session?.lastLifeAt ?? records[0].1.lastLifeAt
        return Presence.SessionSummary(sessionID: records[0].1.sessionID, userID: userID, connections: connections, foreground: foreground,
                              lastChangeAt: lastChangeAt,
                              leaseAgeMilliseconds: Int64((now &- lastLifeAt) / 1_000_000),
                              lastAck: session?.acks?.ids.last, lastAckAt: session?.acks?.lastAt)
    }

    /// Forgets sessions that have had no connection and no ack for `idleSeconds` (their acks
    /// matter only within the ack-or-push window). Called periodically.
    public func sweep(idleSeconds: Int64) {
        let cutoff = wallClockMilliseconds() - idleSeconds * 1000
        state.withLock { state in
            var stale: [String] = []
            for (key, s) in state.sessions where max(s.lastChangeAt, s.acks?.lastAt ?? 0) < cutoff
                && state.connectionIDs(ofSession: key, userID: s.userID).isEmpty {
                stale.append(key)
            }
            for key in stale { state.sessions[key] = nil }
            state.sessions.shrinkIfSparse()
        }
    }

    private static func remove(_ connectionID: String, from channel: ChannelName, in state: inout State) {
        state.byChannel[channel]?.remove(connectionID)
        if state.byChannel[channel]?.isEmpty == true {
            state.byChannel[channel] = nil
            state.byChannel.shrinkIfSparse()
        }
    }
}
