import Dispatch
import HeraldCore
import Synchronization
import Testing
@testable import RealtimeRedis

/// Two presence stores on one redis-server are two nodes: what one node's transports report, the
/// other answers from its cache.
@Suite(.enabled(if: RedisServerProcess.isInstalled, "redis-server is not installed: scripts/bootstrap --test installs it"))
final class RedisPresenceStoreTests {
    let server: RedisServerProcess

    init() throws {
        server = try RedisServerProcess()
    }

    private func store(_ namespace: String, heartbeat: Int = 100, ttl: Int = 600) throws -> RedisPresenceStore {
        let store = RedisPresenceStore(RedisPresenceStore.Configuration(
            endpoint: server.endpoint, namespace: namespace, leaseSeconds: 45, flushMilliseconds: 10,
            heartbeatMilliseconds: heartbeat, fullSyncMilliseconds: heartbeat, nodeTTLMilliseconds: ttl))
        try store.waitUntilListening()
        return store
    }

    @Test func aForegroundConnectionOnNodeBSuppressesAtNodeAUntilBDies() throws {
        let a = try store("p1")
        let b = try store("p1")
        defer { a.shutdown() }
        b.connected(connectionID: "cb1", userID: "u", sessionID: "s", transport: .websocket, state: .foreground,
                    channels: [channel("user:u"), channel("room")])
        #expect(waitUntil { a.isForeground(userID: "u", sessionID: "s") })
        #expect(a.receipts(userID: "u", personalSequence: 7)
                == [Presence.Receipt(connectionID: "cb1", sessionID: "s", transport: .websocket, received: false, foreground: true)])
        b.deliveredPersonal(connectionID: "cb1", sequence: 7)
        #expect(waitUntil { a.receipts(userID: "u", personalSequence: 7).first?.received == true })
        #expect(a.sessions(channel: channel("room")).map(\.sessionID) == ["s"])
        #expect(a.sessions(userID: "u").first?.connections.map(\.connectionID) == ["cb1"])
        #expect(a.sessionCounts() == (live: 1, foreground: 1))
        #expect(a.liveRemoteNodes == [b.nodeID])
        // Nothing changes on B for longer than the node TTL: its heartbeats keep it alive.
        #expect(!waitUntil(seconds: 1.5) { !a.isForeground(userID: "u", sessionID: "s") })
        // B dies (no more heartbeats): after the node TTL its connections are gone everywhere.
        b.shutdown()
        #expect(waitUntil { !a.isForeground(userID: "u", sessionID: "s") })
        #expect(a.receipts(userID: "u", personalSequence: 7).isEmpty)
        #expect(a.liveRemoteNodes.isEmpty)
    }

    /// `awaitAnnounced`: a connection just reported is waited for until the flush that carries it
    /// to the others went through Redis (then the other node has it); one closed meanwhile, or
    /// one this node does not have, is not waited for.
    @Test func aNewConnectionIsAnnouncedToTheOtherNodeBeforeItsWaiterIsCalled() throws {
        let a = try store("p6")
        let b = try store("p6")
        defer { a.shutdown(); b.shutdown() }
        b.connected(connectionID: "new", userID: "u", sessionID: "s", transport: .websocket, state: .foreground, channels: [channel("user:u")])
        let announced = DispatchSemaphore(value: 0)
        #expect(!b.awaitAnnounced(connectionID: "new") { announced.signal() })
        #expect(announced.wait(timeout: .now() + 3) == .success)
        // Redis handed the presence message to A before it answered B's flush.
        #expect(waitUntil(seconds: 2) { a.isForeground(userID: "u", sessionID: "s") })
        // Not connected here: nothing to wait for.
        #expect(b.awaitAnnounced(connectionID: "unknown") { Issue.record("called for a connection never reported") })
        // Closed before its flush: released all the same (exactly once).
        let calls = Mutex(0)
        let released = DispatchSemaphore(value: 0)
        b.connected(connectionID: "brief", userID: "v", sessionID: nil, transport: .sse, state: .foreground, channels: [channel("user:v")])
        #expect(!b.awaitAnnounced(connectionID: "brief") { calls.withLock { $0 += 1 }; released.signal() })
        b.disconnected(connectionID: "brief")
        #expect(released.wait(timeout: .now() + 3) == .success)
        // Still waiting at shutdown: released by it.
        let c = try store("p6")
        c.connected(connectionID: "late", userID: "w", sessionID: nil, transport: .sse, state: .foreground, channels: [channel("user:w")])
        let atShutdown = DispatchSemaphore(value: 0)
        let waiting = !c.awaitAnnounced(connectionID: "late") { atShutdown.signal() }
        c.shutdown()
        #expect(!waiting || atShutdown.wait(timeout: .now() + 3) == .success)
        #expect(c.awaitAnnounced(connectionID: "late") { Issue.record("called after shutdown") })
        #expect(calls.withLock { $0 } == 1)
    }

    @Test func backgroundAndDisconnectReachTheOtherNode() throws {
        let a = try store("p2")
        let b = try store("p2")
        defer { a.shutdown(); b.shutdown() }
        b.connected(connectionID: "c1", userID: "u", sessionID: "s", transport: .sse, state: .foreground, channels: [channel("user:u")])
        #expect(waitUntil { a.isForeground(userID: "u", sessionID: "s") })
        b.setState(connectionID: "c1", .background)
        #expect(waitUntil { !a.isForeground(userID: "u", sessionID: "s") })
        #expect(a.sessions(userID: "u").count == 1)
        b.disconnected(connectionID: "c1")
        #expect(waitUntil { a.sessions(userID: "u").isEmpty })
    }

    @Test func acksAndSessionStateTakenOnOneNodeApplyOnTheOther() throws {
        let a = try store("p3")
        let b = try store("p3")
        defer { a.shutdown(); b.shutdown() }
        b.connected(connectionID: "c1", userID: "u", sessionID: "s", transport: .sse, state: .foreground, channels: [channel("user:u")])
        #expect(waitUntil { a.isForeground(userID: "u", sessionID: "s") })
        a.acknowledge(sessionID: "s", connectionID: nil, userID: "u", ids: ["e-1"])
        #expect(waitUntil { b.hasAcknowledged(userID: "u", sessionID: "s", id: "e-1") })
        #expect(a.hasAcknowledged(userID: "u", sessionID: "s", id: "e-1"))
        #expect(!b.hasAcknowledged(userID: "u", sessionID: "s", id: "e-2"))
        // PUT …/sessions/current/state lands on A; the session's stream is on B.
        #expect(a.setState(userID: "u", sessionID: "s", .background) == 1)
        #expect(waitUntil { !b.isForeground(userID: "u", sessionID: "s") })
        #expect(waitUntil { !a.isForeground(userID: "u", sessionID: "s") })
    }

    @Test func aNodeThatStartsLaterLearnsTheOthersFromTheirSnapshots() throws {
        let b = try store("p4", heartbeat: 50, ttl: 5_000)
        defer { b.shutdown() }
        b.connected(connectionID: "c1", userID: "u", sessionID: "s", transport: .sse, state: .foreground, channels: [channel("user:u")])
        // Its heartbeat wrote the snapshot key.
        #expect(waitUntil { (try? self.server.command("EXISTS", "{p4}:presence:\(b.nodeID)")) == .integer(1) })
        let a = RedisPresenceStore(RedisPresenceStore.Configuration(endpoint: server.endpoint, namespace: "p4",
                                                                    heartbeatMilliseconds: 10_000, nodeTTLMilliseconds: 30_000))
        defer { a.shutdown() }
        #expect(a.isForeground(userID: "u", sessionID: "s"), "known at once, before B's next heartbeat")
    }

    @Test func afterARedisOutageLongerThanTheNodeTTLTheNodesAnnounceThemselvesAgainAtOnce() throws {
        // Full sets every 10 min: only the resync on reconnect can bring the others back in time.
        func node() throws -> RedisPresenceStore {
            let store = RedisPresenceStore(RedisPresenceStore.Configuration(
                endpoint: server.endpoint, namespace: "p5", leaseSeconds: 45, flushMilliseconds: 10,
                heartbeatMilliseconds: 100, fullSyncMilliseconds: 600_000, nodeTTLMilliseconds: 300))
            try store.waitUntilListening()
            return store
        }
        let a = try node()
        let b = try node()
        defer { a.shutdown(); b.shutdown() }
        a.connected(connectionID: "ca", userID: "ua", sessionID: "sa", transport: .sse, state: .foreground, channels: [channel("user:ua")])
        b.connected(connectionID: "cb", userID: "ub", sessionID: "sb", transport: .sse, state: .foreground, channels: [channel("user:ub")])
        #expect(waitUntil { a.isForeground(userID: "ub", sessionID: "sb") && b.isForeground(userID: "ua", sessionID: "sa") })

        server.stop()
        #expect(waitUntil { !a.isForeground(userID: "ub", sessionID: "sb") && !b.isForeground(userID: "ua", sessionID: "sa") },
                "each node takes the other for dead")
        // The server's periodic sweep forgets dead nodes and their connections.
        a.sweep(idleSeconds: 3_600)
        b.sweep(idleSeconds: 3_600)
        try server.start()   // empty: the snapshots are gone too
        #expect(waitUntil(seconds: 5) { a.isForeground(userID: "ub", sessionID: "sb") && b.isForeground(userID: "ua", sessionID: "sa") },
                "whole again within a reconnect, not at the next full set")
        #expect(a.liveRemoteNodes == [b.nodeID] && b.liveRemoteNodes == [a.nodeID])
    }
}

/// The planner's wait for other nodes' receipts (ADR 0005).
@Suite(.enabled(if: RedisServerProcess.isInstalled, "redis-server is not installed: scripts/bootstrap --test installs it"))
final class RedisPresenceReceiptWaitTests {
    let server: RedisServerProcess

    init() throws {
        server = try RedisServerProcess()
    }

    private func store(_ wait: Int) throws -> RedisPresenceStore {
        let store = RedisPresenceStore(RedisPresenceStore.Configuration(
            endpoint: server.endpoint, namespace: "w", flushMilliseconds: 10, heartbeatMilliseconds: 100,
            nodeTTLMilliseconds: 5_000, receiptWaitMilliseconds: wait))
        try store.waitUntilListening()
        return store
    }

    @Test func waitsForTheOtherNodesReceiptAndNoLonger() throws {
        let a = try store(5_000)
        let b = try store(5_000)
        defer { a.shutdown(); b.shutdown() }
        b.connected(connectionID: "cb", userID: "u", sessionID: "s", transport: .websocket, state: .foreground, channels: [channel("user:u")])
        #expect(waitUntil { a.isForeground(userID: "u", sessionID: "s") })
        let done = DispatchSemaphore(value: 0)
        let started = DispatchTime.now().uptimeNanoseconds
        a.awaitRemoteReceipts([("u", 9)]) { done.signal() }
        #expect(done.wait(timeout: .now() + .milliseconds(100)) == .timedOut, "B has not written event 9 yet")
        b.deliveredPersonal(connectionID: "cb", sequence: 9)
        #expect(done.wait(timeout: .now() + 3) == .success)
        #expect(DispatchTime.now().uptimeNanoseconds - started < 3_000_000_000, "released by the receipt, not the 5 s deadline")
        #expect(a.receipts(userID: "u", personalSequence: 9).first?.received == true)
        // Nothing to wait for: a user with no connection elsewhere, or a sequence already reported.
        let immediate = Mutex(0)
        a.awaitRemoteReceipts([("nobody", 1), ("u", 9)]) { immediate.withLock { $0 += 1 } }
        #expect(immediate.withLock { $0 } == 1)
    }

    /// A background connection cannot suppress a push, but the delivery record names it when it
    /// was written the event: the planner waits for its receipt too (as one process sees it).
    @Test func waitsForABackgroundConnectionsReceiptToo() throws {
        let a = try store(5_000)
        let b = try store(5_000)
        defer { a.shutdown(); b.shutdown() }
        b.connected(connectionID: "bg", userID: "u", sessionID: "s", transport: .sse, state: .background, channels: [channel("user:u")])
        #expect(waitUntil { a.sessions(userID: "u").count == 1 })
        let done = DispatchSemaphore(value: 0)
        a.awaitRemoteReceipts([("u", 4)]) { done.signal() }
        #expect(done.wait(timeout: .now() + .milliseconds(100)) == .timedOut, "B has not written event 4 yet")
        b.deliveredPersonal(connectionID: "bg", sequence: 4)
        #expect(done.wait(timeout: .now() + 3) == .success, "released by the receipt, not the 5 s deadline")
        #expect(a.receipts(userID: "u", personalSequence: 4)
                == [Presence.Receipt(connectionID: "bg", sessionID: "s", transport: .sse, received: true, foreground: false)])
    }

    @Test func aReceiptThatDoesNotComeCountsAsNotReceivedAfterTheDeadline() throws {
        let a = try store(200)
        let b = try store(200)
        defer { a.shutdown(); b.shutdown() }
        b.connected(connectionID: "cb", userID: "u", sessionID: "s", transport: .websocket, state: .foreground, channels: [channel("user:u")])
        #expect(waitUntil { a.isForeground(userID: "u", sessionID: "s") })
        let done = DispatchSemaphore(value: 0)
        a.awaitRemoteReceipts([("u", 3)]) { done.signal() }
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(a.receipts(userID: "u", personalSequence: 3).first?.received == false)
    }
}
