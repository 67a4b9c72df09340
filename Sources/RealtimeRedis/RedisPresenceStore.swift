import Dispatch
import Foundation
import HeraldCore
import RealtimeMemory
import Synchronization

/// The `PresenceStore` of a cluster (SC-1, ADR 0005): synchronous answers from memory, fed by the
/// other nodes over Redis pub/sub, so an event loop never waits on the network.
///
/// - This node's connections live in a `MemoryPresenceStore` (exact, as in one process). Acks and
///   session state changes taken by any node are applied by every node to its own store, so
///   `hasAcknowledged` and the leases of a session's connections agree everywhere.
/// - Other nodes' connections live in a cache: each node publishes its changes every
///   `flushMilliseconds` (coalesced per connection: a personal-channel write or a WebSocket pong
///   per message costs nothing extra), a heartbeat every `heartbeatMilliseconds` (also its
///   expiry in the index `{namespace}:presence:nodes`), and its full set every
///   `fullSyncMilliseconds` (repairing a lost change; also written to
///   `{namespace}:presence:<node>`, which a starting node reads for the nodes alive in the index).
/// - A node not heard from for `nodeTTLMilliseconds` is dead: its connections drop out of every
///   answer, so a device whose foreground connection was there gets pushes again.
///
/// After an outage of Redis longer than `nodeTTLMilliseconds`, every node took the others for dead
/// (and a restarted Redis lost their snapshots). When its presence subscription comes back, a node
/// sends its full set, its heartbeat and its snapshot at once, then reads the snapshots the others
/// wrote: presence is whole again within a reconnect (at most the client's maximum backoff, 2 s,
/// after Redis answers), not at the next periodic full set. A full set that fails is sent again
/// at every heartbeat until one goes through.
///
/// Receipts of other nodes' connections are as fresh as their last flush: the planner waits for
/// them (`awaitRemoteReceipts`, bounded), and a remote connection whose receipt has not arrived
/// by then counts as not having received the event (a push; never neither, ADR 0005). A stream
/// sends `ready` only after the flush that announced it (`awaitAnnounced`), so a connection the
/// client knows to be open is one the others wait for.
///
/// # Thread safety
/// `remote` and `outbox` are guarded by their mutexes; Redis I/O runs on the client threads and
/// the flush thread.
public final class RedisPresenceStore: PresenceStore {
    /// Where Redis is and how often nodes talk.
    public struct Configuration: Sendable {
        public var endpoint: RedisEndpoint
        /// The broker's namespace: nodes of one cluster share it.
        public var namespace: String
        /// RT-7a lease (`HERALD_FOREGROUND_LEASE_SECONDS`).
        public var leaseSeconds: Int
        public var flushMilliseconds: Int
        public var heartbeatMilliseconds: Int
        /// How often the full set of connections is sent (and stored for starting nodes).
        public var fullSyncMilliseconds: Int
        public var nodeTTLMilliseconds: Int
        /// How long the planner waits for other nodes' receipts (ADR 0005).
        public var receiptWaitMilliseconds: Int
        public var client: RedisClientOptions

        public init(endpoint: RedisEndpoint, namespace: String = "herald", leaseSeconds: Int = 45, flushMilliseconds: Int = 20,
                    heartbeatMilliseconds: Int = 2_000, fullSyncMilliseconds: Int = 30_000, nodeTTLMilliseconds: Int = 10_000,
                    receiptWaitMilliseconds: Int = 250,
                    client: RedisClientOptions = .init()) {
            self.endpoint = endpoint
            self.namespace = namespace
            self.leaseSeconds = max(leaseSeconds, 1)
            self.flushMilliseconds = max(flushMilliseconds, 1)
            self.heartbeatMilliseconds = max(heartbeatMilliseconds, 10)
            self.fullSyncMilliseconds = max(fullSyncMilliseconds, self.heartbeatMilliseconds)
            self.nodeTTLMilliseconds = max(nodeTTLMilliseconds, heartbeatMilliseconds * 2)
            self.receiptWaitMilliseconds = max(receiptWaitMilliseconds, 0)
            self.client = client
        }
    }

    /// A connection of another node as last heard.
    private struct RemoteConnection {
        var wire: PresenceWire.Connection
        /// Monotonic ns of its last app-level life, on this node's clock.
        var lifeAt: UInt64
    }

    private struct RemoteNode {
        var lastHeard: UInt64
        var connections: [String: RemoteConnection] = [:]
    }

    /// This node's connections as the others are told about them.
    private struct Mine {
        var wire: PresenceWire.Connection
        var lifeAt: UInt64
    }

    private struct Outbox: ~Copyable {
        var mine: [String: Mine] = [:]
        var dirty: Set<String> = []
        var removed: [String] = []
        var acks: [PresenceWire.Ack] = []
        var states: [PresenceWire.SessionState] = []
        /// Transports waiting until their connection is announced (`awaitAnnounced`), by id.
        var announcing: [String: [@Sendable () -> Void]] = [:]
        var closed = false
    }

    public let configuration: Configuration
    /// Names this node on the presence channel.
    public let nodeID: String
    private let local: MemoryPresenceStore
    private let remote = Mutex<[String: RemoteNode]>([:])
    private let outbox = Mutex(Outbox())
    private let commander: RedisCommander
    private let subscriber: RedisSubscriber
    private let channel: String
    /// Sorted set of node ids, scored by when their snapshot expires (wall ms).
    private var nodesKey: String { channel + ":nodes" }
    private let clock: any Clock
    private let leaseNanoseconds: UInt64
    /// Planners waiting for other nodes' receipts: what they wait for, until when (monotonic ns).
    private let receiptWaiters = Mutex<[(wanted: [(userID: String, personalSequence: UInt64)], deadline: UInt64, done: @Sendable () -> Void)]>([])
    private let stop = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    /// Set when the presence subscription is back after a disconnect: the flush thread announces
    /// this node's full set at its next tick and re-reads the others' snapshots.
    private let resyncNow = Atomic<Bool>(false)
    /// Set when a flush failed (Redis down): heartbeats carry the full set until one succeeds.
    private let flushFailed = Atomic<Bool>(false)

    public init(_ configuration: Configuration, clock: any Clock = SystemClock()) {
        self.configuration = configuration
        self.clock = clock
        nodeID = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        local = MemoryPresenceStore(leaseSeconds: configuration.leaseSeconds, clock: clock)
        leaseNanoseconds = UInt64(configuration.leaseSeconds) * 1_000_000_000
        channel = "{\(configuration.namespace)}:presence"
        commander = RedisCommander(endpoint: configuration.endpoint, options: configuration.client, name: "herald.redis.presence")
        subscriber = RedisSubscriber(endpoint: configuration.endpoint, options: configuration.client)
        subscriber.subscribe([channel])
        subscriber.start(onMessage: { [unowned self] messages in for message in messages { received(message.payload) } },
                         onReady: { [unowned self] reconnected in if reconnected { resyncNow.store(true, ordering: .releasing) } })
        loadSnapshots()
        let thread = Thread { [self] in runFlushes() }
        thread.name = "herald.redis.presence"
        thread.start()
    }

    /// Waits (bounded) until this node hears the presence channel.
    public func waitUntilListening(timeoutMilliseconds: Int = 2_000) throws(BrokerError) {
        do {
            try subscriber.waitUntilSubscribed([channel], timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            throw RedisBroker.brokerError(error)
        }
    }

    /// Stops the flush thread and the connections (the others see this node expire).
    public func shutdown() {
        let first = outbox.withLock { outbox -> Bool in
            defer { outbox.closed = true }
            return !outbox.closed
        }
        guard first else { return }
        stop.signal()
        _ = stopped.wait(timeout: .now() + 3)
        let waiting = outbox.withLock { outbox in
            defer { outbox.announcing.removeAll() }
            return outbox.announcing.values.flatMap { $0 }
        }
        for done in waiting { done() }
        subscriber.shutdown()
        commander.shutdown()
    }

    /// Other nodes heard from within the node TTL (tests, metrics).
    public var liveRemoteNodes: [String] {
        let now = clock.monotonicNanoseconds
        return remote.withLock { nodes in nodes.filter { now &- $0.value.lastHeard <= ttlNanoseconds }.map(\.key).sorted() }
    }

    private var ttlNanoseconds: UInt64 { UInt64(configuration.nodeTTLMilliseconds) * 1_000_000 }

    // MARK: Reports from transports (this node's connections)

    public func connected(connectionID: String, userID: String, sessionID: String?, transport: StreamTransport,
                          state: AppState, channels: [ChannelName]) {
        local.connected(connectionID: connectionID, userID: userID, sessionID: sessionID, transport: transport, state: state, channels: channels)
        let now = clock.monotonicNanoseconds
        // As the memory store lists them: the personal channel first, the others sorted.
        let personal = ChannelName.personal(userID: userID)
        let listed = (personal.map { [$0] } ?? []) + channels.filter { $0 != personal }.sorted()
        let wire = PresenceWire.Connection(id: connectionID, user: userID, session: sessionID, transport: transport.rawValue,
                                           state: state.rawValue, channels: listed.map(\.rawValue), opened: clock.unixMilliseconds,
                                           lifeAge: 0, personal: 0)
        outbox.withLock { outbox in
            outbox.mine[connectionID] = Mine(wire: wire, lifeAt: now)
            outbox.dirty.insert(connectionID)
        }
    }

    /// Waits for the flush that carries the connection to the others (at most `flushMilliseconds`
    /// and one round trip to Redis), so that `ready` follows it: Redis hands a PUBLISH to every
    /// subscriber before it answers, so the others have the connection in hand before any
    /// notification the client causes after `ready` can reach them.
    public func awaitAnnounced(connectionID: String, _ done: @escaping @Sendable () -> Void) -> Bool {
        outbox.withLock { outbox -> Bool in
            guard !outbox.closed, outbox.mine[connectionID] != nil else { return true }
            // Dirty again: a flush may have taken it since `connected`, before this waiter was here.
            outbox.dirty.insert(connectionID)
            outbox.announcing[connectionID, default: []].append(done)
            return false
        }
    }

    public func disconnected(connectionID: String) {
        local.disconnected(connectionID: connectionID)
        outbox.withLock { outbox in
            guard outbox.mine.removeValue(forKey: connectionID) != nil else { return }
            outbox.mine.shrinkIfSparse()
            outbox.dirty.remove(connectionID)
            outbox.removed.append(connectionID)
        }
    }

    public func channelsChanged(connectionID: String, added: [ChannelName], removed: [ChannelName]) {
        local.channelsChanged(connectionID: connectionID, added: added, removed: removed)
        change(connectionID) { mine in
            let gone = Set(removed.map(\.rawValue))
            mine.wire.channels = mine.wire.channels.filter { !gone.contains($0) }
            for channel in added where !mine.wire.channels.contains(channel.rawValue) { mine.wire.channels.append(channel.rawValue) }
        }
    }

    public func life(connectionID: String) {
        local.life(connectionID: connectionID)
        let now = clock.monotonicNanoseconds
        change(connectionID) { $0.lifeAt = now }
    }

    public func setState(connectionID: String, _ state: AppState) {
        local.setState(connectionID: connectionID, state)
        let now = clock.monotonicNanoseconds
        change(connectionID) { mine in
            mine.wire.state = state.rawValue
            mine.lifeAt = now
        }
    }

    @discardableResult
    public func setState(userID: String, sessionID: String, _ state: AppState) -> Int {
        let changed = local.setState(userID: userID, sessionID: sessionID, state)
        let now = clock.monotonicNanoseconds
        outbox.withLock { outbox in
            for (id, var mine) in outbox.mine where mine.wire.user == userID && mine.wire.session == sessionID {
                mine.wire.state = state.rawValue
                mine.lifeAt = now
                outbox.mine[id] = mine
                outbox.dirty.insert(id)
            }
            outbox.states.append(PresenceWire.SessionState(user: userID, session: sessionID, state: state.rawValue))
        }
        // The others apply it to their own connections; the count includes them as last heard.
        return changed + remoteConnections(userID: userID).filter { $0.wire.session == sessionID }.count
    }

    public func acknowledge(sessionID: String?, connectionID: String?, userID: String, ids: [String]) {
        local.acknowledge(sessionID: sessionID, connectionID: connectionID, userID: userID, ids: ids)
        let now = clock.monotonicNanoseconds
        outbox.withLock { outbox in
            for (id, var mine) in outbox.mine where mine.wire.user == userID
                && (sessionID != nil ? mine.wire.session == sessionID : id == connectionID) {
                mine.lifeAt = now
                outbox.mine[id] = mine
                outbox.dirty.insert(id)
            }
            outbox.acks.append(PresenceWire.Ack(user: userID, session: sessionID, connection: connectionID, ids: ids))
        }
    }

    public func deliveredPersonal(connectionID: String, sequence: UInt64) {
        local.deliveredPersonal(connectionID: connectionID, sequence: sequence)
        change(connectionID) { mine in mine.wire.personal = max(mine.wire.personal, sequence) }
    }

    private func change(_ connectionID: String, _ update: (inout Mine) -> Void) {
        outbox.withLock { outbox in
            guard var mine = outbox.mine[connectionID] else { return }
            update(&mine)
            outbox.mine[connectionID] = mine
            outbox.dirty.insert(connectionID)
        }
    }

    // MARK: Queries (this node's store merged with the others' as last heard)

    /// Live connections of other nodes (expired nodes left out).
    private func remoteConnections(where include: (PresenceWire.Connection) -> Bool = { _ in true }) -> [RemoteConnection] {
        let now = clock.monotonicNanoseconds
        let ttl = ttlNanoseconds
        return remote.withLock { nodes in
            nodes.values.filter { now &- $0.lastHeard <= ttl }.flatMap { $0.connections.values.filter { include($0.wire) } }
        }
    }

    private func remoteConnections(userID: String) -> [RemoteConnection] {
        remoteConnections { $0.user == userID }
    }

    private func isForeground(_ connection: RemoteConnection, now: UInt64) -> Bool {
        connection.wire.state == AppState.foreground.rawValue && now &- connection.lifeAt <= leaseNanoseconds
    }

    public func isForeground(userID: String, sessionID: String) -> Bool {
        if local.isForeground(userID: userID, sessionID: sessionID) { return true }
        let now = clock.monotonicNanoseconds
        return remoteConnections(userID: userID).contains { $0.wire.session == sessionID && isForeground($0, now: now) }
    }

    public func receipts(userID: String, personalSequence sequence: UInt64) -> [Presence.Receipt] {
        let now = clock.monotonicNanoseconds
        let others = remoteConnections(userID: userID).map { connection in
            Presence.Receipt(connectionID: connection.wire.id, sessionID: connection.wire.session,
                             transport: StreamTransport(rawValue: connection.wire.transport) ?? .sse,
                             received: connection.wire.personal >= sequence, foreground: isForeground(connection, now: now))
        }
        return (local.receipts(userID: userID, personalSequence: sequence) + others).sorted { $0.connectionID < $1.connectionID }
    }

    public func awaitRemoteReceipts(_ wanted: [(userID: String, personalSequence: UInt64)], _ done: @escaping @Sendable () -> Void) {
        if remoteReceiptsArrived(wanted) {
            done()
            return
        }
        let deadline = clock.monotonicNanoseconds &+ UInt64(configuration.receiptWaitMilliseconds) * 1_000_000
        receiptWaiters.withLock { $0.append((wanted, deadline, done)) }
        // A receipt may have come in between the check and the registration.
        releaseReceiptWaiters()
    }

    /// Every connection of each user on another node reported its sequence. Background ones
    /// too: they cannot suppress a push, but the delivery record lists who saw the event live
    /// (`live_delivered`), as one process does.
    private func remoteReceiptsArrived(_ wanted: [(userID: String, personalSequence: UInt64)]) -> Bool {
        let users = Set(wanted.map(\.userID))
        var byUser: [String: [RemoteConnection]] = [:]
        for connection in remoteConnections(where: { users.contains($0.user) }) {
            byUser[connection.wire.user, default: []].append(connection)
        }
        return wanted.allSatisfy { want in
            (byUser[want.userID] ?? []).allSatisfy { $0.wire.personal >= want.personalSequence }
        }
    }

    /// Calls the waiters whose receipts arrived or whose deadline passed. Checked under the
    /// waiters' lock (it is taken before `remote`'s, never after), so two threads releasing at
    /// once never call a waiter twice.
    private func releaseReceiptWaiters() {
        let now = clock.monotonicNanoseconds
        let released = receiptWaiters.withLock { waiters -> [@Sendable () -> Void] in
            guard !waiters.isEmpty else { return [] }
            var released: [@Sendable () -> Void] = []
            waiters.removeAll { waiter in
                guard now >= waiter.deadline || remoteReceiptsArrived(waiter.wanted) else { return false }
                released.append(waiter.done)
                return true
            }
            return released
        }
        for done in released { done() }
    }

    public func hasAcknowledged(userID: String, sessionID: String, id: String) -> Bool {
        local.hasAcknowledged(userID: userID, sessionID: sessionID, id: id)
    }

    public func sessions(userID: String) -> [Presence.SessionSummary] {
        merge(local.sessions(userID: userID), remoteConnections(userID: userID))
            .sorted { $0.lastChangeAt > $1.lastChangeAt }
    }

    public func sessions(channel: ChannelName) -> [Presence.SessionSummary] {
        let personalUser = channel.rawValue.hasPrefix("user:") ? String(channel.rawValue.dropFirst(5)) : nil
        let others = remoteConnections { $0.user == personalUser || $0.channels.contains(channel.rawValue) }
        return merge(local.sessions(channel: channel), others)
            .sorted { ($0.userID, $0.sessionID ?? "") < ($1.userID, $1.sessionID ?? "") }
    }

    public func sessionCounts() -> (live: Int, foreground: Int) {
        let mine = local.sessionCounts()
        let now = clock.monotonicNanoseconds
        var sessions: [String: Bool] = [:]
        for connection in remoteConnections() {
            let key = connection.wire.user + "\u{0}" + (connection.wire.session ?? "c:" + connection.wire.id)
            sessions[key] = (sessions[key] ?? false) || isForeground(connection, now: now)
        }
        return (mine.live + sessions.count, mine.foreground + sessions.values.filter { $0 }.count)
    }

    /// This node's connections only (each node reports its own in `/metrics`).
    public func connectionCounts() -> [String: Int] {
        local.connectionCounts()
    }

    public func sweep(idleSeconds: Int64) {
        local.sweep(idleSeconds: idleSeconds)
        let now = clock.monotonicNanoseconds
        let ttl = ttlNanoseconds
        remote.withLock { nodes in nodes = nodes.filter { now &- $0.value.lastHeard <= ttl } }
    }

    /// Adds other nodes' connections to this node's summaries: into the summary of the same
    /// session when there is one, else as sessions of their own.
    private func merge(_ summaries: [Presence.SessionSummary], _ others: [RemoteConnection]) -> [Presence.SessionSummary] {
        guard !others.isEmpty else { return summaries }
        let now = clock.monotonicNanoseconds
        var result = summaries
        var grouped: [String: [RemoteConnection]] = [:]
        for connection in others {
            grouped[connection.wire.user + "\u{0}" + (connection.wire.session ?? "c:" + connection.wire.id), default: []].append(connection)
        }
        for (_, group) in grouped.sorted(by: { $0.key < $1.key }) {
            let first = group[0].wire
            let connections = group.map { remote -> Presence.Connection in
                Presence.Connection(connectionID: remote.wire.id, userID: remote.wire.user, sessionID: remote.wire.session,
                                    transport: StreamTransport(rawValue: remote.wire.transport) ?? .sse,
                                    state: AppState(remote.wire.state) ?? .background, channels: remote.wire.channels.compactMap { ChannelName(storedRawValue: $0) },
                                    openedAt: remote.wire.opened, leaseAgeMilliseconds: Int64((now &- remote.lifeAt) / 1_000_000),
                                    leaseFresh: now &- remote.lifeAt <= leaseNanoseconds)
            }
            let foreground = group.contains { isForeground($0, now: now) }
            let leaseAge = group.map { Int64((now &- $0.lifeAt) / 1_000_000) }.min() ?? 0
            let lastChange = group.map(\.wire.opened).max() ?? 0
            if let sid = first.session, let index = result.firstIndex(where: { $0.userID == first.user && $0.sessionID == sid }) {
                let mine = result[index]
                result[index] = Presence.SessionSummary(
                    sessionID: sid, userID: first.user, connections: mine.connections + connections,
                    foreground: mine.foreground || foreground, lastChangeAt: max(mine.lastChangeAt, lastChange),
                    leaseAgeMilliseconds: min(mine.leaseAgeMilliseconds, leaseAge), lastAck: mine.lastAck, lastAckAt: mine.lastAckAt)
            } else {
                let acked = first.session.flatMap { sid in local.sessions(userID: first.user).first { $0.sessionID == sid } }
                result.append(Presence.SessionSummary(sessionID: first.session, userID: first.user, connections: connections,
                                                      foreground: foreground, lastChangeAt: lastChange, leaseAgeMilliseconds: leaseAge,
                                                      lastAck: acked?.lastAck, lastAckAt: acked?.lastAckAt))
            }
        }
        return result
    }

    // MARK: Other nodes (subscriber thread)

    private func received(_ payload: [UInt8]) {
        guard let wire = PresenceWire(payload), wire.node != nodeID else { return }
        apply(wire)
    }

    private func apply(_ wire: PresenceWire) {
        let now = clock.monotonicNanoseconds
        remote.withLock { nodes in
            var node = nodes[wire.node] ?? RemoteNode(lastHeard: now)
            node.lastHeard = now
            if wire.full { node.connections.removeAll() }
            for connection in wire.connections {
                node.connections[connection.id] = RemoteConnection(wire: connection, lifeAt: now &- UInt64(max(connection.lifeAge, 0)) * 1_000_000)
            }
            for id in wire.removed { node.connections[id] = nil }
            nodes[wire.node] = node
        }
        for ack in wire.acks {
            local.acknowledge(sessionID: ack.session, connectionID: ack.connection, userID: ack.user, ids: ack.ids)
            if let sid = ack.session { touchMine(userID: ack.user, sessionID: sid, state: nil, now: now) }
        }
        for change in wire.states {
            guard let state = AppState(change.state) else { continue }
            local.setState(userID: change.user, sessionID: change.session, state)
            touchMine(userID: change.user, sessionID: change.session, state: state, now: now)
        }
        releaseReceiptWaiters()
    }

    /// Renews (and with `state`, changes) this node's connections of a session after another node
    /// took an ack or a state change for it, so the others hear the result.
    private func touchMine(userID: String, sessionID: String, state: AppState?, now: UInt64) {
        outbox.withLock { outbox in
            for (id, var mine) in outbox.mine where mine.wire.user == userID && mine.wire.session == sessionID {
                if let state { mine.wire.state = state.rawValue }
                mine.lifeAt = now
                outbox.mine[id] = mine
                outbox.dirty.insert(id)
            }
        }
    }

    /// Reads the full sets other nodes wrote (a starting node learns them at once).
    private func loadSnapshots() {
        // The index of nodes (never KEYS, which walks every key of the database).
        let index = RedisCommand("ZRANGEBYSCORE", nodesKey, String(clock.unixMilliseconds), "+inf")
        guard let nodes = try? commander.call(index).elements?.compactMap(\.text), !nodes.isEmpty,
              let replies = try? commander.call(nodes.map { RedisCommand("GET", "\(channel):\($0)") }) else { return }
        for reply in replies {
            if case .string(let bytes) = reply, let wire = PresenceWire(bytes), wire.node != nodeID { apply(wire) }
        }
    }

    // MARK: Flushing (own thread)

    private func runFlushes() {
        var lastHeartbeat: UInt64 = 0
        var lastFullSync: UInt64 = 0
        defer { stopped.signal() }
        while true {
            if stop.wait(timeout: .now() + .milliseconds(configuration.flushMilliseconds)) == .success { return }
            releaseReceiptWaiters()
            let now = clock.monotonicNanoseconds
            let reconnected = resyncNow.exchange(false, ordering: .acquiringAndReleasing)
            let heartbeat = reconnected || now &- lastHeartbeat >= UInt64(configuration.heartbeatMilliseconds) * 1_000_000
            if heartbeat { lastHeartbeat = now }
            let fullSync = reconnected || (heartbeat && flushFailed.load(ordering: .acquiring))
                || now &- lastFullSync >= UInt64(configuration.fullSyncMilliseconds) * 1_000_000
            if fullSync { lastFullSync = now }
            let (wire, announced) = outbox.withLock { outbox -> (PresenceWire, [@Sendable () -> Void]) in
                var wire = PresenceWire(node: nodeID, full: fullSync)
                var announced: [@Sendable () -> Void] = []
                let ids = fullSync ? Array(outbox.mine.keys) : Array(outbox.dirty)
                for id in ids.sorted() {
                    guard let mine = outbox.mine[id] else { continue }
                    var connection = mine.wire
                    connection.lifeAge = Int64((now &- mine.lifeAt) / 1_000_000)
                    wire.connections.append(connection)
                    if let waiting = outbox.announcing.removeValue(forKey: id) { announced += waiting }
                }
                // Closed before they were announced: nothing left to wait for.
                for (id, waiting) in outbox.announcing where outbox.mine[id] == nil {
                    announced += waiting
                    outbox.announcing[id] = nil
                }
                if !fullSync { wire.removed = outbox.removed }
                wire.acks = outbox.acks
                wire.states = outbox.states
                outbox.dirty.removeAll()
                outbox.removed.removeAll()
                outbox.acks.removeAll()
                outbox.states.removeAll()
                return (wire, announced)
            }
            // A heartbeat goes out even when nothing changed: it is what keeps this node alive
            // in the others' eyes (any message does).
            guard !wire.isEmpty || heartbeat else {
                for done in announced { done() }
                continue
            }
            // The snapshot and the index before the message: a node that subscribes too late to
            // hear the message and then reads the snapshots (after a reconnect) finds this one.
            var commands: [RedisCommand] = []
            if fullSync {
                var full = wire
                full.acks = []
                full.states = []
                // Kept until the next full set; whether the node is alive says the index.
                let keep = configuration.fullSyncMilliseconds + configuration.nodeTTLMilliseconds
                commands.append(RedisCommand([Array("SET".utf8), Array("\(channel):\(nodeID)".utf8), full.encoded(),
                                              Array("PX".utf8), Array(String(keep).utf8)]))
            }
            if heartbeat {
                let wall = clock.unixMilliseconds
                commands.append(RedisCommand("ZADD", nodesKey, String(wall + Int64(configuration.nodeTTLMilliseconds)), nodeID))
                commands.append(RedisCommand("ZREMRANGEBYSCORE", nodesKey, "-inf", String(wall)))
            }
            commands.append(RedisCommand([Array("PUBLISH".utf8), Array(channel.utf8), wire.encoded()]))
            // Best effort: a lost flush is repaired by the next full set (at the next heartbeat,
            // since it failed); acks and state changes in it are lost with it (Redis was down).
            commander.submit(commands) { [self] result in
                switch result {
                case .failure: flushFailed.store(true, ordering: .releasing)
                case .success: if fullSync { flushFailed.store(false, ordering: .releasing) }
                }
                // Failed too: waiting longer would not tell the others sooner (a full set repairs it).
                for done in announced { done() }
            }
            // The others announce themselves as they reconnect; those that did before this node
            // listened again are in their snapshots.
            if reconnected { loadSnapshots() }
        }
    }
}
