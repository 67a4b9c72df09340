import Dispatch
import HeraldCore
import Synchronization
@testable import RealtimeRedis

/// Collects what a broker hands to its node (messages and resets, in order) and lets a test wait
/// for a condition on them, bounded, woken by each arrival instead of sleeping.
final class NodeLog: Sendable {
    enum Event: Sendable {
        case message(ChannelMessage)
        case reset([ChannelName], StreamCursor)
    }

    private let events = Mutex<[Event]>([])
    private let arrivals = DispatchSemaphore(value: 0)

    func attach(to broker: any Broker) {
        broker.setInboundHandler { [self] messages in
            events.withLock { $0.append(contentsOf: messages.map(Event.message)) }
            arrivals.signal()
        }
        broker.setResetHandler { [self] channels, position in
            events.withLock { $0.append(.reset(channels, position)) }
            arrivals.signal()
        }
    }

    var all: [Event] { events.withLock { $0 } }

    var messages: [ChannelMessage] {
        all.compactMap { if case .message(let message) = $0 { message } else { nil } }
    }

    var resets: [(channels: [ChannelName], position: StreamCursor)] {
        all.compactMap { if case .reset(let channels, let position) = $0 { (channels, position) } else { nil } }
    }

    /// Waits until `condition` holds, at most `seconds`.
    @discardableResult
    func wait(seconds: Double = 10, until condition: (NodeLog) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + seconds
        while !condition(self) {
            if arrivals.wait(timeout: deadline) == .timedOut { return condition(self) }
        }
        return true
    }
}

func channel(_ name: String) -> ChannelName { ChannelName(name)! }

func request(_ name: String, _ data: String = "1", event: String = "message", retain: Bool = false) -> PublishRequest {
    PublishRequest(channel: channel(name), event: EventName(event)!, data: data, retain: retain)
}

/// A broker on `server` with a namespace of its own (tests share nothing through Redis keys).
func makeBroker(_ server: RedisServerProcess, namespace: String, historySize: Int = 256, historyTTLSeconds: Int = 600,
                retainedTTLSeconds: Int = 86_400, positionCheckMilliseconds: Int = 5_000) -> RedisBroker {
    RedisBroker(RedisBroker.Configuration(endpoint: server.endpoint, namespace: namespace, historySize: historySize,
                                          historyTTLSeconds: historyTTLSeconds, retainedTTLSeconds: retainedTTLSeconds,
                                          positionCheckMilliseconds: positionCheckMilliseconds,
                                          client: RedisClientOptions(callTimeoutMilliseconds: 3_000)))
}
