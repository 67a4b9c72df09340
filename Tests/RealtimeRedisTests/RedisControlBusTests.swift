import Dispatch
import HeraldCore
import Synchronization
import Testing
@testable import RealtimeRedis

/// Records what a bus hands its node and wakes a waiting test on each arrival.
private final class ControlLog: Sendable {
    private let received = Mutex<[ControlMessage]>([])
    private let arrivals = DispatchSemaphore(value: 0)

    func attach(to bus: RedisControlBus) {
        bus.onMessage { [self] message in
            received.withLock { $0.append(message) }
            arrivals.signal()
        }
    }

    var messages: [ControlMessage] { received.withLock { $0 } }

    func wait(forCount count: Int, seconds: Double = 10) -> Bool {
        let deadline = DispatchTime.now() + seconds
        while messages.count < count {
            if arrivals.wait(timeout: deadline) == .timedOut { return messages.count >= count }
        }
        return true
    }
}

@Suite(.enabled(if: RedisServerProcess.isInstalled, "redis-server is not installed: scripts/bootstrap --test installs it"))
final class RedisControlBusTests {
    let server: RedisServerProcess

    init() throws {
        server = try RedisServerProcess()
    }

    /// fresh14: what a node missed while its bus was away (a session end during a Redis outage)
    /// is read again from storage when the bus listens again; the first subscription is no
    /// reconnect.
    @Test func reconnectHandlersRunWhenTheBusListensAgainNotAtFirst() throws {
        let bus = RedisControlBus(endpoint: server.endpoint, namespace: "c-re")
        defer { bus.shutdown() }
        let calls = DispatchSemaphore(value: 0)
        bus.onReconnected { calls.signal() }
        try bus.waitUntilListening()
        #expect(calls.wait(timeout: .now() + 0.3) == .timedOut)
        try server.restart()
        #expect(calls.wait(timeout: .now() + 15) == .success)
        try bus.waitUntilListening(timeoutMilliseconds: 5_000)
        #expect(calls.wait(timeout: .now() + 0.3) == .timedOut)
    }

    @Test func everyNodeTheSenderIncludedReceivesEachMessageInOrder() throws {
        let a = RedisControlBus(endpoint: server.endpoint, namespace: "c1")
        let b = RedisControlBus(endpoint: server.endpoint, namespace: "c1")
        let other = RedisControlBus(endpoint: server.endpoint, namespace: "c2")
        defer { a.shutdown(); b.shutdown(); other.shutdown() }
        let logA = ControlLog(), logB = ControlLog(), logOther = ControlLog()
        logA.attach(to: a)
        logB.attach(to: b)
        logOther.attach(to: other)
        try a.waitUntilListening()
        try b.waitUntilListening()
        try other.waitUntilListening()
        let sent: [ControlMessage] = [.sessionEnded(sessionID: "s-1", app: "default"), .appSettingsChanged(appID: "app-9"),
                                      .sessionEnded(sessionID: "s-2", app: "chat")]
        for message in sent { try a.send(message) }
        #expect(logA.wait(forCount: 3))
        #expect(logB.wait(forCount: 3))
        #expect(logA.messages == sent)
        #expect(logB.messages == sent)
        #expect(logOther.messages.isEmpty, "another namespace is another cluster")
    }

    @Test func wireFormRoundTripsAndUnknownKindsAreSkipped() {
        for message: ControlMessage in [.sessionEnded(sessionID: "abc", app: "default"), .sessionEnded(sessionID: "a\nb", app: "chat"),
                                        .appSettingsChanged(appID: "a:b\nc"), .appSettingsApplied(appID: "chat", node: "3f9k2")] {
            #expect(RedisControlBus.decode(RedisControlBus.encode(message)) == message)
        }
        // The default app's session end keeps the form nodes before apps' sessions send and read.
        #expect(RedisControlBus.encode(.sessionEnded(sessionID: "abc", app: "default")) == Array("v1\nsession-ended\nabc".utf8))
        #expect(RedisControlBus.decode(Array("v1\napp-session-ended\nchat\ns-1".utf8)) == .sessionEnded(sessionID: "s-1", app: "chat"))
        #expect(RedisControlBus.decode(Array("v1\napp-session-ended\nchat".utf8)) == nil)
        #expect(RedisControlBus.decode(Array("v1\napp-session-ended\n\ns-1".utf8)) == nil)
        #expect(RedisControlBus.decode(Array("v1\napp-session-ended\nchat\n".utf8)) == nil)
        #expect(RedisControlBus.decode(Array("v2\nsession-ended\nx".utf8)) == nil)
        #expect(RedisControlBus.decode(Array("v1\nrestart-everything\nx".utf8)) == nil)
        #expect(RedisControlBus.decode(Array("v1\nsession-ended\n".utf8)) == nil)
        #expect(RedisControlBus.decode(Array("v1\nsession-ended".utf8)) == nil)
        #expect(RedisControlBus.encode(.appSettingsApplied(appID: "chat", node: "n1")) == Array("v1\napp-settings-applied\nchat\nn1".utf8))
        #expect(RedisControlBus.decode(Array("v1\napp-settings-applied\nchat".utf8)) == nil)
        #expect(RedisControlBus.decode(Array("v1\napp-settings-applied\nchat\n".utf8)) == nil)
        #expect(RedisControlBus.decode(Array("v1\napp-settings-applied\n\nn1".utf8)) == nil)
    }

    /// The admin API waits for each node that received an app change to confirm it: `publish`
    /// says how many that is (this node included, another namespace's not).
    @Test func publishCountsTheNodesOfItsNamespaceThatReceivedIt() throws {
        let a = RedisControlBus(endpoint: server.endpoint, namespace: "c4")
        let b = RedisControlBus(endpoint: server.endpoint, namespace: "c4")
        let other = RedisControlBus(endpoint: server.endpoint, namespace: "c5")
        defer { a.shutdown(); b.shutdown(); other.shutdown() }
        let logB = ControlLog()
        logB.attach(to: b)
        try a.waitUntilListening()
        try b.waitUntilListening()
        try other.waitUntilListening()
        #expect(try a.publish(.appSettingsChanged(appID: "chat")) == 2)
        #expect(logB.wait(forCount: 1))
        #expect(logB.messages == [.appSettingsChanged(appID: "chat")])
    }

    @Test func sendFailsWithinTheBoundWhenRedisIsDownAndWorksWhenItIsBack() throws {
        let bus = RedisControlBus(endpoint: server.endpoint, namespace: "c3", options: RedisClientOptions(callTimeoutMilliseconds: 500))
        defer { bus.shutdown() }
        let log = ControlLog()
        log.attach(to: bus)
        try bus.waitUntilListening()
        server.stop()
        #expect(throws: BrokerError.self) { try bus.send(.sessionEnded(sessionID: "lost", app: "default")) }
        try server.start()
        // The subscriber comes back on its own; then a send reaches it again.
        #expect(waitUntil(seconds: 10) { (try? bus.waitUntilListening(timeoutMilliseconds: 100)) != nil })
        #expect(waitUntil(seconds: 10) { (try? bus.send(.sessionEnded(sessionID: "back", app: "default"))) != nil })
        #expect(log.wait(forCount: 1))
        #expect(log.messages.first == .sessionEnded(sessionID: "back", app: "default"))
    }
}
