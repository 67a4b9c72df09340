import HeraldCore
import Testing
@testable import RealtimeMemory

/// Clocks the test moves by hand.
private final class TestClocks: Sendable {
    let clock = ManualClock(unixMilliseconds: 1_800_000_000_000)
    func advance(seconds: Int) { clock.advance(byMilliseconds: Int64(seconds) * 1000) }
    func presence(lease: Int = 45, maxAcks: Int = 256) -> MemoryPresenceStore {
        MemoryPresenceStore(leaseSeconds: lease, maxAcksPerSession: maxAcks, clock: clock)
    }
}

private let personal = ChannelName("user:u1")!
private let room = ChannelName("room:1")!

@Suite struct MemoryPresenceStoreTests {
    @Test func foregroundIsALeaseThatLapsesWithoutAppLevelLife() {
        let clocks = TestClocks()
        let presence = clocks.presence(lease: 45)
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .websocket, state: .foreground, channels: [personal])
        #expect(presence.isForeground(userID: "u1", sessionID: "s1"))
        clocks.advance(seconds: 46)
        #expect(!presence.isForeground(userID: "u1", sessionID: "s1"), "an open socket alone proves nothing (RT-7a)")
        presence.life(connectionID: "c1")
        #expect(presence.isForeground(userID: "u1", sessionID: "s1"))
    }

    @Test func backgroundConnectionsNeverCountAsForeground() {
        let clocks = TestClocks()
        let presence = clocks.presence()
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .background, channels: [personal])
        #expect(!presence.isForeground(userID: "u1", sessionID: "s1"))
        presence.setState(connectionID: "c1", .foreground)
        #expect(presence.isForeground(userID: "u1", sessionID: "s1"))
    }

    @Test func sessionStateChangesEveryConnectionOfTheSessionOnly() {
        let clocks = TestClocks()
        let presence = clocks.presence()
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [personal])
        presence.connected(connectionID: "c2", userID: "u1", sessionID: "s1", transport: .websocket, state: .foreground, channels: [personal])
        presence.connected(connectionID: "c3", userID: "u1", sessionID: "s2", transport: .sse, state: .foreground, channels: [personal])
        #expect(presence.setState(userID: "u1", sessionID: "s1", .background) == 2)
        #expect(!presence.isForeground(userID: "u1", sessionID: "s1"))
        #expect(presence.isForeground(userID: "u1", sessionID: "s2"))
        #expect(presence.setState(userID: "u1", sessionID: "nobody", .background) == 0)
    }

    @Test func acksRenewTheLeaseAndAreBounded() {
        let clocks = TestClocks()
        let presence = clocks.presence(lease: 10, maxAcks: 3)
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [personal])
        clocks.advance(seconds: 11)
        presence.acknowledge(sessionID: "s1", connectionID: nil, userID: "u1", ids: ["a", "b", "c", "d"])
        #expect(presence.isForeground(userID: "u1", sessionID: "s1"))
        #expect(!presence.hasAcknowledged(userID: "u1", sessionID: "s1", id: "a"))
        #expect(presence.hasAcknowledged(userID: "u1", sessionID: "s1", id: "d"))
        #expect(presence.sessions(userID: "u1").first?.lastAck == "d")
    }

    @Test func receiptsAnswerWhichConnectionsReceivedAnEventAndWhetherTheyWereForeground() {
        let clocks = TestClocks()
        let presence = clocks.presence(lease: 45)
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .websocket, state: .foreground, channels: [personal])
        presence.connected(connectionID: "c2", userID: "u1", sessionID: "s2", transport: .sse, state: .background, channels: [personal])
        presence.connected(connectionID: "c3", userID: "u2", sessionID: "s1", transport: .sse, state: .foreground, channels: [])
        presence.deliveredPersonal(connectionID: "c1", sequence: 7)
        presence.deliveredPersonal(connectionID: "c2", sequence: 9)
        presence.deliveredPersonal(connectionID: "c2", sequence: 8)   // an older one never moves it back
        #expect(presence.receipts(userID: "u1", personalSequence: 7) == [
            Presence.Receipt(connectionID: "c1", sessionID: "s1", transport: .websocket, received: true, foreground: true),
            Presence.Receipt(connectionID: "c2", sessionID: "s2", transport: .sse, received: true, foreground: false),
        ])
        #expect(presence.receipts(userID: "u1", personalSequence: 9).map(\.received) == [false, true])
        clocks.advance(seconds: 46)
        #expect(presence.receipts(userID: "u1", personalSequence: 7).map(\.foreground) == [false, false], "the lease lapsed")
        #expect(presence.receipts(userID: "nobody", personalSequence: 1).isEmpty)
    }

    @Test func connectionsCarryTheirLeaseAsRead() throws {
        let clocks = TestClocks()
        let presence = clocks.presence(lease: 45)
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [personal])
        clocks.advance(seconds: 10)
        let fresh = try #require(presence.sessions(userID: "u1").first?.connections.first)
        #expect(fresh.leaseFresh && fresh.leaseAgeMilliseconds == 10_000)
        clocks.advance(seconds: 40)
        let stale = try #require(presence.sessions(userID: "u1").first?.connections.first)
        #expect(!stale.leaseFresh && stale.leaseAgeMilliseconds == 50_000)
    }

    @Test func receivedInForegroundNeedsTheDeliveryAFreshLeaseAndForeground() {
        let clocks = TestClocks()
        let presence = clocks.presence(lease: 45)
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .websocket, state: .foreground, channels: [personal])
        #expect(!presence.receivedInForeground(userID: "u1", sessionID: "s1", personalSequence: 7))
        presence.deliveredPersonal(connectionID: "c1", sequence: 7)
        #expect(presence.receivedInForeground(userID: "u1", sessionID: "s1", personalSequence: 7))
        #expect(!presence.receivedInForeground(userID: "u1", sessionID: "s1", personalSequence: 8))
        presence.setState(connectionID: "c1", .background)
        #expect(!presence.receivedInForeground(userID: "u1", sessionID: "s1", personalSequence: 7))
        presence.setState(connectionID: "c1", .foreground)
        clocks.advance(seconds: 46)
        #expect(!presence.receivedInForeground(userID: "u1", sessionID: "s1", personalSequence: 7))
    }

    @Test func channelPresenceListsOnlyConnectionsOnTheChannel() {
        let clocks = TestClocks()
        let presence = clocks.presence()
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [personal, room])
        presence.connected(connectionID: "c2", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [personal])
        presence.connected(connectionID: "c3", userID: "u2", sessionID: nil, transport: .websocket, state: .background, channels: [])
        presence.channelsChanged(connectionID: "c3", added: [room], removed: [])
        let sessions = presence.sessions(channel: room)
        #expect(sessions.map(\.userID) == ["u1", "u2"])
        #expect(sessions[0].connections.map(\.connectionID) == ["c1"])
        #expect(sessions[1].sessionID == nil)
        presence.channelsChanged(connectionID: "c3", added: [], removed: [room])
        presence.disconnected(connectionID: "c1")
        #expect(presence.sessions(channel: room).isEmpty)
    }

    @Test func twoUsersWithTheSameSidDoNotShareASession() {
        let clocks = TestClocks()
        let presence = clocks.presence()
        presence.connected(connectionID: "c1", userID: "alice", sessionID: "sess-1", transport: .sse, state: .foreground, channels: [])
        presence.connected(connectionID: "c2", userID: "bob", sessionID: "sess-1", transport: .sse, state: .foreground, channels: [])
        #expect(presence.setState(userID: "bob", sessionID: "sess-1", .background) == 1)
        #expect(presence.isForeground(userID: "alice", sessionID: "sess-1"))
        #expect(!presence.isForeground(userID: "bob", sessionID: "sess-1"))
        presence.acknowledge(sessionID: "sess-1", connectionID: nil, userID: "bob", ids: ["x"])
        #expect(!presence.hasAcknowledged(userID: "alice", sessionID: "sess-1", id: "x"))
        #expect(presence.sessions(userID: "alice").first?.sessionID == "sess-1")
    }

    @Test func disconnectEndsLivenessButKeepsRecentAcksUntilTheSweep() {
        let clocks = TestClocks()
        let presence = clocks.presence()
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [personal])
        presence.acknowledge(sessionID: "s1", connectionID: nil, userID: "u1", ids: ["x"])
        presence.disconnected(connectionID: "c1")
        #expect(!presence.isForeground(userID: "u1", sessionID: "s1"))
        #expect(presence.sessions(userID: "u1").isEmpty)
        #expect(presence.hasAcknowledged(userID: "u1", sessionID: "s1", id: "x"))
        clocks.advance(seconds: 601)
        presence.sweep(idleSeconds: 600)
        #expect(!presence.hasAcknowledged(userID: "u1", sessionID: "s1", id: "x"))
    }
}

/// The personal channel is not stored per connection, yet presence answers for it; SmallSet
/// behaves as a set through its one-to-many transitions.
@Suite struct PresencePersonalChannelTests {
    @Test func personalChannelPresenceComesFromTheUsersConnections() throws {
        let presence = MemoryPresenceStore()
        let mine = try #require(ChannelName.personal(userID: "u1"))
        let room = try #require(ChannelName("room:1"))
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [mine, room])
        presence.connected(connectionID: "c2", userID: "u1", sessionID: "s2", transport: .websocket, state: .background, channels: [mine])
        // Another user granted u1's channel hears it too.
        presence.connected(connectionID: "c3", userID: "admin", sessionID: "a", transport: .sse, state: .foreground,
                           channels: [try #require(ChannelName.personal(userID: "admin")), mine])
        let onMine = presence.sessions(channel: mine).flatMap { $0.connections.map(\.connectionID) }.sorted()
        #expect(onMine == ["c1", "c2", "c3"])
        #expect(presence.sessions(channel: room).flatMap { $0.connections.map(\.connectionID) } == ["c1"])
        let c1 = try #require(presence.sessions(userID: "u1").flatMap(\.connections).first { $0.connectionID == "c1" })
        #expect(c1.channels == [mine, room])
        presence.channelsChanged(connectionID: "c1", added: [], removed: [room, mine])
        #expect(presence.sessions(channel: room).isEmpty)
        #expect(presence.sessions(channel: mine).flatMap { $0.connections.map(\.connectionID) }.sorted() == ["c1", "c2", "c3"])
        presence.disconnected(connectionID: "c1")
        presence.disconnected(connectionID: "c3")
        #expect(presence.sessions(channel: mine).flatMap { $0.connections.map(\.connectionID) } == ["c2"])
    }

    @Test func smallSetIsASet() {
        var set: SmallSet<Int> = []
        #expect(set.isEmpty && set.count == 0 && !set.contains(1))
        #expect(set.insert(1) && !set.insert(1) && set.count == 1)
        #expect(set.insert(2) && set.insert(3) && set.count == 3 && Set(set) == [1, 2, 3])
        set.remove(2)
        set.remove(3)
        #expect(set.count == 1 && Array(set) == [1] && set.contains(1))
        set.remove(1)
        set.remove(1)
        #expect(set.isEmpty && Array(set).isEmpty)
    }
}

/// A session has an entry of its own only when its connections cannot say what it is (issue 17):
/// what it reports must not depend on whether it has one.
@Suite struct PresenceSessionEntryTests {
    @Test func aSessionsTimesCarryOverWhenASecondConnectionJoinsAndLeaves() throws {
        let clocks = TestClocks()
        let presence = clocks.presence(lease: 45)
        let t0 = clocks.clock.unixMilliseconds
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [personal])
        clocks.advance(seconds: 5)
        presence.setState(connectionID: "c1", .background)
        #expect(presence.sessions(userID: "u1").first?.lastChangeAt == t0 + 5_000, "one connection: its own state change")
        clocks.advance(seconds: 5)
        presence.connected(connectionID: "c2", userID: "u1", sessionID: "s1", transport: .websocket, state: .foreground, channels: [personal])
        #expect(presence.sessions(userID: "u1").first?.lastChangeAt == t0 + 10_000)
        #expect(presence.sessionCounts() == (live: 1, foreground: 1))
        clocks.advance(seconds: 5)
        presence.disconnected(connectionID: "c2")
        let session = try #require(presence.sessions(userID: "u1").first)
        #expect(session.lastChangeAt == t0 + 15_000, "the disconnect is the session's last change")
        #expect(session.connections.map(\.connectionID) == ["c1"])
        #expect(session.leaseAgeMilliseconds == 5_000, "the session's freshest life was c2's opening")
        #expect(presence.sessionCounts() == (live: 1, foreground: 0))
        presence.disconnected(connectionID: "c1")
        #expect(presence.sessions(userID: "u1").isEmpty)
        #expect(presence.sessionCounts() == (live: 0, foreground: 0))
        #expect(presence.setState(userID: "u1", sessionID: "s1", .foreground) == 0, "a session without acks ends with its connections")
        presence.connected(connectionID: "c3", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [personal])
        #expect(presence.sessions(userID: "u1").first?.lastChangeAt == t0 + 15_000)
        #expect(presence.sessions(userID: "u1").first?.connections.map(\.connectionID) == ["c3"])
    }

    @Test func anAckedSessionOutlivesItsConnectionAndTheNextConnectionJoinsIt() {
        let clocks = TestClocks()
        let presence = clocks.presence(lease: 45)
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .background, channels: [personal])
        clocks.advance(seconds: 3)
        presence.acknowledge(sessionID: "s1", connectionID: nil, userID: "u1", ids: ["e1"])
        let ackedAt = clocks.clock.unixMilliseconds
        presence.disconnected(connectionID: "c1")
        #expect(presence.sessionCounts() == (live: 0, foreground: 0))
        #expect(presence.setState(userID: "u1", sessionID: "s1", .foreground) == 0)
        presence.connected(connectionID: "c2", userID: "u1", sessionID: "s1", transport: .sse, state: .foreground, channels: [personal])
        #expect(presence.sessions(userID: "u1").first?.lastAck == "e1")
        #expect(presence.sessions(userID: "u1").first?.lastAckAt == ackedAt)
        #expect(presence.sessionCounts() == (live: 1, foreground: 1))
        clocks.advance(seconds: 700)
        presence.sweep(idleSeconds: 600)
        #expect(presence.hasAcknowledged(userID: "u1", sessionID: "s1", id: "e1"), "a session with a live connection is never swept")
        presence.disconnected(connectionID: "c2")
        clocks.advance(seconds: 601)
        presence.sweep(idleSeconds: 600)
        #expect(!presence.hasAcknowledged(userID: "u1", sessionID: "s1", id: "e1"))
    }

    @Test func sessionCountsCountEverySessionOnce() {
        let clocks = TestClocks()
        let presence = clocks.presence(lease: 45)
        presence.connected(connectionID: "c1", userID: "u1", sessionID: "s1", transport: .sse, state: .background, channels: [personal])
        presence.connected(connectionID: "c2", userID: "u1", sessionID: "s1", transport: .websocket, state: .foreground, channels: [personal])
        presence.connected(connectionID: "c3", userID: "u1", sessionID: "s2", transport: .sse, state: .background, channels: [personal])
        presence.connected(connectionID: "c4", userID: "u2", sessionID: nil, transport: .sse, state: .foreground, channels: [])
        presence.acknowledge(sessionID: nil, connectionID: "c4", userID: "u2", ids: ["x"])
        #expect(presence.sessionCounts() == (live: 3, foreground: 2))
        #expect(presence.sessions(userID: "u2").first?.lastAck == "x")
        presence.disconnected(connectionID: "c4")
        #expect(presence.sessions(userID: "u2").isEmpty)
        #expect(presence.sessionCounts() == (live: 2, foreground: 1))
        #expect(presence.connectionCounts() == ["sse|background": 2, "websocket|foreground": 1])
    }
}
