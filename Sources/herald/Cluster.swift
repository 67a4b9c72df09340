import API
import Dispatch
import HeraldCore
import Realtime
import RealtimeRedis

/// The Redis adapters of a node in a cluster (`HERALD_BROKER=redis://…`, SC-1): broker, presence
/// and the control bus, and how the node's session ends travel through the bus.
struct Cluster {
    let broker: RedisBroker
    let presence: RedisPresenceStore
    let bus: RedisControlBus

    init(settings: Settings, endpoint: RedisEndpoint) {
        broker = RedisBroker(RedisBroker.Configuration(endpoint: endpoint, namespace: settings.brokerNamespace,
                                                       historySize: settings.historySize, historyTTLSeconds: settings.historyTTLSeconds),
                             logger: PushSetup.log)
        presence = RedisPresenceStore(RedisPresenceStore.Configuration(endpoint: endpoint, namespace: settings.brokerNamespace,
                                                                       leaseSeconds: settings.foregroundLeaseSeconds,
                                                                       receiptWaitMilliseconds: settings.clusterReceiptWaitMilliseconds))
        bus = RedisControlBus(endpoint: endpoint, namespace: settings.brokerNamespace)
        Log.info("cluster broker", ["redis": endpoint.description, "namespace": settings.brokerNamespace, "presence_node": presence.nodeID])
    }

    /// A session ended on any node is ended on every node: its tokens refused, its streams closed
    /// (DV-4, SC-1). When Redis cannot be reached the node still ends it here.
    func connect(node: RealtimeNode, sessions: SessionRegistry) {
        let bus = self.bus
        node.relaySessionEnds { [weak node] sid, app in
            // Here at once; the others through the bus, off the caller's thread (the route calls
            // this inside its database write, which must not wait on Redis). The bus brings the
            // message back here too: ending a session twice changes nothing.
            node?.endSessionHere(sid, app: app)
            DispatchQueue.global().async {
                do {
                    try bus.send(.sessionEnded(sessionID: sid, app: app))
                } catch {
                    Log.warning("session end not sent to the other nodes", ["session_id": sid, "app": app, "error": "\(error)"])
                }
            }
        }
        bus.onMessage { [weak node] message in
            guard case .sessionEnded(let sid, let raw) = message, let app = AppID(raw) else { return }
            sessions.markEnded(sid, app: app)
            node?.endSessionHere(sid, app: raw)
        }
    }

    /// An app created, changed or deleted through any node's admin API is served the same way by
    /// every node without a restart (ADR 0006, issue 16 item 4): the node that committed it says
    /// so on the bus, and each node reloads that app from the shared database. Its own message
    /// comes back to it too; reloading an app it already serves changes nothing observable.
    /// When the message cannot be sent (Redis unreachable) the admin API's answer says so
    /// (`Herald-Propagation: failed`): the directory calls this off the committing thread and
    /// waits for it (bounded by the bus's call timeout).
    func connect(apps: AppDirectory, service: AppService) {
        let bus = self.bus
        apps.onChange { id in
            do {
                try bus.send(.appSettingsChanged(appID: id.rawValue))
            } catch {
                Log.warning("app change not sent to the other nodes", ["app": id.rawValue, "error": "\(error)"])
                throw error
            }
        }
        bus.onMessage { message in
            guard case .appSettingsChanged(let raw) = message, let id = AppID(raw) else { return }
            // Off the bus thread: the reload reads the database.
            DispatchQueue.global().async {
                do {
                    try service.reload(id)
                } catch {
                    Log.error("app change from another node not applied", ["app": raw, "error": "\(error)"])
                }
            }
        }
    }

    func shutdown() {
        bus.shutdown()
        presence.shutdown()
        broker.shutdown()
    }
}
