import API
import Dispatch
import HeraldCore
import Realtime
import RealtimeRedis
import Synchronization

/// The Redis adapters of a node in a cluster (`HERALD_BROKER=redis://…`, SC-1): broker, presence
/// and the control bus, and how the node's session ends travel through the bus.
struct Cluster {
    let broker: RedisBroker
    let presence: RedisPresenceStore
    let bus: RedisControlBus

    init(settings: Settings, endpoint: RedisEndpoint) {
        broker = RedisBroker(RedisBroker.Configuration(endpoint: endpoint, namespace: settings.brokerNamespace,
                                                       historySize: settings.historySize, historyTTLSeconds: settings.historyTTLSeconds,
                                                       retainedTTLSeconds: settings.retainedTTLSeconds),
                             logger: PushSetup.log)
        presence = RedisPresenceStore(RedisPresenceStore.Configuration(endpoint: endpoint, namespace: settings.brokerNamespace,
                                                                       leaseSeconds: settings.foregroundLeaseSeconds,
                                                                       receiptWaitMilliseconds: settings.clusterReceiptWaitMilliseconds))
        bus = RedisControlBus(endpoint: endpoint, namespace: settings.brokerNamespace)
        Log.info("cluster broker", ["redis": endpoint.description, "namespace": settings.brokerNamespace, "presence_node": presence.nodeID])
    }

    /// A session ended on any node is ended on every node: its tokens refused, its streams closed
    /// (DV-4, SC-1). When Redis cannot be reached the node still ends it here, and once its bus
    /// listens again it sends the ends it could not send; every node whose bus reconnects reads
    /// the ended sessions from storage and ends those it missed (fresh14: an end taken during a
    /// Redis outage used to stay unknown to the other nodes until they restarted, so the
    /// session's tokens and streams went on working there).
    func connect(node: RealtimeNode, sessions: SessionRegistry, storage: any Storage) {
        let bus = self.bus
        let unsent = Mutex<[(sid: String, app: String)]>([])
        node.relaySessionEnds { [weak node] sid, app in
            // Here at once; the others through the bus, off the caller's thread (the route calls
            // this inside its database write, which must not wait on Redis). The bus brings the
            // message back here too: ending a session twice changes nothing.
            node?.endSessionHere(sid, app: app)
            DispatchQueue.global().async {
                do {
                    try bus.send(.sessionEnded(sessionID: sid, app: app))
                } catch {
                    unsent.withLock { $0.append((sid, app)) }
                    Log.warning("session end not sent to the other nodes; sent again once Redis answers",
                                ["session_id": sid, "app": app, "error": "\(error)"])
                }
            }
        }
        bus.onMessage { [weak node] message in
            guard case .sessionEnded(let sid, let raw) = message, let app = AppID(raw) else { return }
            sessions.markEnded(sid, app: app)
            node?.endSessionHere(sid, app: raw)
        }
        bus.onReconnected { [weak node] in
            // Off the bus's thread: storage and Redis calls block.
            DispatchQueue.global().async { [weak node] in
                let pending = unsent.withLock { pending in
                    defer { pending.removeAll() }
                    return pending
                }
                for end in pending {
                    do {
                        try bus.send(.sessionEnded(sessionID: end.sid, app: end.app))
                    } catch {
                        unsent.withLock { $0.append(end) }
                    }
                }
                let stored: [SessionKey]
                do {
                    stored = try storage.readSync { try $0.sessions.endedSessions() }
                } catch {
                    Log.warning("could not read the ended sessions after the control bus reconnected; those ended meanwhile on other nodes are ended here at their next end message or restart",
                                ["error": "\(error)"])
                    return
                }
                var missed = 0
                for key in stored {
                    guard let app = AppID(key.app), AccessClaims.isUsableSessionID(key.sid),
                          sessions.markEnded(key.sid, app: app) else { continue }
                    node?.endSessionHere(key.sid, app: key.app)
                    missed += 1
                }
                if missed > 0 {
                    Log.info("sessions ended on other nodes while the control bus was away are ended here", ["sessions": String(missed)])
                }
            }
        }
    }

    /// An app created, changed or deleted through any node's admin API is served the same way by
    /// every node without a restart (ADR 0006, issue 16 item 4): the node that committed it says
    /// so on the bus, and each node reloads that app from the shared database and says it did.
    /// The change's answer waits for every node that received it (at most
    /// `confirmationMilliseconds`): telling them is not enough, since a node still serving a
    /// secret the change retired would accept its tokens after the answer. Its own message comes
    /// back to it too; reloading an app it already serves changes nothing observable.
    /// When the message cannot be sent (Redis unreachable) the admin API's answer says so
    /// (`Herald-Propagation: failed`), and when a node that received it did not confirm in time
    /// (`Herald-Propagation: unconfirmed`): the directory calls this off the committing thread and
    /// waits for it.
    /// A change whose message could not be sent is sent again once this node's bus listens again,
    /// and every node whose bus reconnects reads every app again (fresh14: the others used to
    /// serve the app as it was until they restarted or the change was repeated).
    func connect(apps: AppDirectory, service: AppService) {
        let bus = self.bus
        let node = presence.nodeID
        let confirmations = AppChangeConfirmations()
        let unsent = Mutex<Set<String>>([])
        bus.onReconnected {
            // Off the bus's thread: Redis and storage calls block.
            DispatchQueue.global().async {
                let pending = unsent.withLock { pending in
                    defer { pending.removeAll() }
                    return pending
                }
                for raw in pending {
                    do {
                        _ = try bus.publish(.appSettingsChanged(appID: raw))
                    } catch {
                        unsent.withLock { _ = $0.insert(raw) }
                    }
                }
                let ids: Set<AppID>
                do {
                    ids = Set(try service.storedIDs()).union(apps.all.map(\.id).filter { !$0.isDefault })
                } catch {
                    Log.warning("could not read the apps after the control bus reconnected; changes made meanwhile on other nodes are served here at their next change or restart",
                                ["error": "\(error)"])
                    return
                }
                for id in ids {
                    do {
                        try service.reload(id)
                    } catch {
                        Log.error("app not reloaded after the control bus reconnected", ["app": id.rawValue, "error": "\(error)"])
                    }
                }
            }
        }
        apps.onChange { id in
            // Before the publish, so that no confirmation can arrive unseen.
            let ticket = confirmations.begin(id.rawValue)
            defer { confirmations.end(ticket) }
            let receivers: Int
            do {
                receivers = try bus.publish(.appSettingsChanged(appID: id.rawValue))
            } catch {
                unsent.withLock { _ = $0.insert(id.rawValue) }
                Log.warning("app change not sent to the other nodes; sent again once Redis answers", ["app": id.rawValue, "error": "\(error)"])
                throw error
            }
            let deadline = DispatchTime.now() + .milliseconds(Self.confirmationMilliseconds)
            let confirmed = confirmations.wait(ticket, forNodes: receivers, until: deadline)
            guard confirmed >= receivers else {
                // A node that could not apply it (another HERALD_SECRET_KEY, a setting it no
                // longer accepts), one of a version that does not confirm, or one slow to read
                // the database (it still applies the change when its reload ends): the answer
                // must not read as if every node served it.
                Log.warning("app change not confirmed by every node in time", ["app": id.rawValue, "nodes": "\(receivers)",
                                                                               "confirmed": "\(confirmed)",
                                                                               "waited_ms": "\(Self.confirmationMilliseconds)"])
                return .unconfirmed(nodes: receivers, confirmed: confirmed)
            }
            return .propagated
        }
        bus.onMessage { message in
            switch message {
            case .appSettingsChanged(let raw):
                guard let id = AppID(raw) else { return }
                // Off the bus thread: the reload reads the database.
                DispatchQueue.global().async {
                    do {
                        try service.reload(id)
                    } catch {
                        // Not confirmed: the node that made the change must not answer as if
                        // this one served it.
                        Log.error("app change from another node not applied", ["app": raw, "error": "\(error)"])
                        return
                    }
                    do {
                        try bus.send(.appSettingsApplied(appID: raw, node: node))
                    } catch {
                        Log.warning("app change applied but not confirmed to the other nodes", ["app": raw, "error": "\(error)"])
                    }
                }
            case .appSettingsApplied(let raw, let from):
                confirmations.confirmed(raw, by: from)
            case .sessionEnded:
                return
            }
        }
    }

    /// How long an admin change's answer waits for the other nodes to confirm it: the bus's own
    /// call timeout, which bounds the answer's wait for the publish already.
    static let confirmationMilliseconds = 1_000

    func shutdown() {
        bus.shutdown()
        presence.shutdown()
        broker.shutdown()
    }
}

/// The nodes' confirmations that they reloaded an app (`ControlMessage.appSettingsApplied`),
/// awaited by the node whose admin call changed it.
final class AppChangeConfirmations: Sendable {
    private struct Waiter {
        let app: String
        var nodes: Set<String> = []
        let arrival = DispatchSemaphore(value: 0)
    }

    private struct State {
        var next: UInt64 = 0
        var waiters: [UInt64: Waiter] = [:]
    }

    private let state = Mutex(State())

    /// Starts collecting the confirmations of `app`'s reload.
    /// - Returns: the ticket that `wait` and `end` take.
    func begin(_ app: String) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.waiters[state.next] = Waiter(app: app)
            return state.next
        }
    }

    /// Stops collecting for `ticket`.
    func end(_ ticket: UInt64) {
        state.withLock { _ = $0.waiters.removeValue(forKey: ticket) }
    }

    /// Node `node` reloaded `app`: it counts for every change of that app being awaited. (Two
    /// changes of one app at once may so take a node's reload for the earlier one as confirming
    /// the later; the message names no change, so that nodes of earlier versions still read it.)
    func confirmed(_ app: String, by node: String) {
        let woken = state.withLock { state -> [DispatchSemaphore] in
            var woken: [DispatchSemaphore] = []
            for (ticket, var waiter) in state.waiters where waiter.app == app && waiter.nodes.insert(node).inserted {
                state.waiters[ticket] = waiter
                woken.append(waiter.arrival)
            }
            return woken
        }
        for arrival in woken { arrival.signal() }
    }

    /// Waits until `count` distinct nodes confirmed the change of `ticket`, or `deadline`.
    /// - Returns: how many distinct nodes confirmed it by then (`count` or more: all did).
    func wait(_ ticket: UInt64, forNodes count: Int, until deadline: DispatchTime) -> Int {
        while true {
            guard let waiter = state.withLock({ $0.waiters[ticket] }) else { return 0 }
            if waiter.nodes.count >= count { return waiter.nodes.count }
            if waiter.arrival.wait(timeout: deadline) == .timedOut {
                return state.withLock { $0.waiters[ticket]?.nodes.count } ?? 0
            }
        }
    }
}
