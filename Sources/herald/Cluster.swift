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
        node.relaySessionEnds { [weak node] sid in
            // Here at once; the others through the bus, off the caller's thread (the route calls
            // this inside its database write, which must not wait on Redis). The bus brings the
            // message back here too: ending a session twice changes nothing.
            node?.endSessionHere(sid)
            DispatchQueue.global().async {
                do {
                    try bus.send(.sessionEnded(sessionID: sid))
                } catch {
                    Log.warning("session end not sent to the other nodes", ["session_id": sid, "error": "\(error)"])
                }
            }
        }
        bus.onMessage { [weak node] message in
            guard case .sessionEnded(let sid) = message else { return }
            sessions.markEnded(sid)
            node?.endSessionHere(sid)
        }
    }

    func shutdown() {
        bus.shutdown()
        presence.shutdown()
        broker.shutdown()
    }
}
