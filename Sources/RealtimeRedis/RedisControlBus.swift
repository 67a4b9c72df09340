import HeraldCore
import Synchronization

/// The `ControlBus` on Redis pub/sub: one channel `{namespace}:control` that every node
/// SUBSCRIBEs, its own connection (so control messages never queue behind channel traffic).
///
/// Wire form: `v1`, the kind and its argument, separated by LF: `v1\nsession-ended\n<sid>`,
/// `v1\napp-settings-changed\n<app>`, `v1\napp-settings-applied\n<app>\n<node>`. A message of an
/// unknown kind (a newer node) is skipped.
public final class RedisControlBus: ControlBus {
    private let commander: RedisCommander
    private let subscriber: RedisSubscriber
    private let channel: String
    private let handlers = Mutex<[@Sendable (ControlMessage) -> Void]>([])
    private let reconnectHandlers = Mutex<[@Sendable () -> Void]>([])

    /// Connects (in the background) and subscribes to the control channel.
    /// - Parameters:
    ///   - namespace: the broker's namespace, so nodes of one cluster share the channel.
    public init(endpoint: RedisEndpoint, namespace: String = "herald", options: RedisClientOptions = .init()) {
        channel = "{\(namespace)}:control"
        commander = RedisCommander(endpoint: endpoint, options: options, name: "herald.redis.control")
        subscriber = RedisSubscriber(endpoint: endpoint, options: options)
        subscriber.subscribe([channel])
        subscriber.start(onMessage: { [unowned self] messages in for message in messages { received(message.payload) } },
                         onReady: { [unowned self] reconnected in
                             guard reconnected else { return }
                             for handler in reconnectHandlers.withLock({ $0 }) { handler() }
                         })
    }

    /// Waits (bounded) until the control channel's subscription is confirmed: messages sent
    /// after that reach this node.
    /// - Throws: `BrokerError.timedOut`.
    public func waitUntilListening(timeoutMilliseconds: Int = 2_000) throws(BrokerError) {
        do {
            try subscriber.waitUntilSubscribed([channel], timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            throw RedisBroker.brokerError(error)
        }
    }

    public func send(_ message: ControlMessage) throws(BrokerError) {
        _ = try publish(message)
    }

    /// Sends `message` to every node, this one included, as `send` does.
    /// - Returns: how many nodes received it (Redis counts the control channel's subscribers),
    ///   so a sender can wait for each one's answer.
    /// - Throws: `BrokerError` when the bus cannot be reached in time; nothing was sent then.
    public func publish(_ message: ControlMessage) throws(BrokerError) -> Int {
        let reply: RedisReply
        do {
            reply = try commander.call(RedisCommand([Array("PUBLISH".utf8), Array(channel.utf8), Self.encode(message)]))
        } catch {
            throw RedisBroker.brokerError(error)
        }
        return reply.int64.map { Int($0) } ?? 0
    }

    public func onMessage(_ handler: @escaping @Sendable (ControlMessage) -> Void) {
        handlers.withLock { $0.append(handler) }
    }

    public func onReconnected(_ handler: @escaping @Sendable () -> Void) {
        reconnectHandlers.withLock { $0.append(handler) }
    }

    /// Closes both connections.
    public func shutdown() {
        subscriber.shutdown()
        commander.shutdown()
    }

    private func received(_ payload: [UInt8]) {
        guard let message = Self.decode(payload) else { return }
        for handler in handlers.withLock({ $0 }) { handler(message) }
    }

    static func encode(_ message: ControlMessage) -> [UInt8] {
        switch message {
        // The default app's keeps the form nodes before apps' sessions send and read, so a
        // cluster mid-upgrade still ends them everywhere; another app's names the app first
        // (an app id has no newline; a sid may).
        case .sessionEnded(let sid, let app) where app == "default": Array("v1\nsession-ended\n\(sid)".utf8)
        case .sessionEnded(let sid, let app): Array("v1\napp-session-ended\n\(app)\n\(sid)".utf8)
        case .appSettingsChanged(let app): Array("v1\napp-settings-changed\n\(app)".utf8)
        case .appSettingsApplied(let app, let node): Array("v1\napp-settings-applied\n\(app)\n\(node)".utf8)
        }
    }

    /// - Returns: nil for another version, an unknown kind or a missing argument.
    static func decode(_ payload: [UInt8]) -> ControlMessage? {
        let parts = payload.split(separator: 10, maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].elementsEqual("v1".utf8), !parts[2].isEmpty else { return nil }
        let argument = String(decoding: parts[2], as: UTF8.self)
        switch String(decoding: parts[1], as: UTF8.self) {
        case "session-ended": return .sessionEnded(sessionID: argument, app: "default")
        case "app-session-ended":
            let named = parts[2].split(separator: 10, maxSplits: 1, omittingEmptySubsequences: false)
            guard named.count == 2, !named[0].isEmpty, !named[1].isEmpty else { return nil }
            return .sessionEnded(sessionID: String(decoding: named[1], as: UTF8.self), app: String(decoding: named[0], as: UTF8.self))
        case "app-settings-changed": return .appSettingsChanged(appID: argument)
        case "app-settings-applied":
            let named = parts[2].split(separator: 10, maxSplits: 1, omittingEmptySubsequences: false)
            guard named.count == 2, !named[0].isEmpty, !named[1].isEmpty else { return nil }
            return .appSettingsApplied(appID: String(decoding: named[0], as: UTF8.self), node: String(decoding: named[1], as: UTF8.self))
        default: return nil
        }
    }
}
