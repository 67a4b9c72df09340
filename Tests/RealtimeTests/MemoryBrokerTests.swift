import Synchronization
import Testing
@testable import Realtime

/// Collects what a broker hands to each loop, in order.
private final class DeliveryLog: Sendable {
    let batches = Mutex<[(Int, [ChannelMessage])]>([])
    var delivery: BrokerDelivery { { loop, messages in self.batches.withLock { $0.append((loop, messages)) } } }
    func sequences(loop: Int) -> [UInt64] {
        batches.withLock { $0.filter { $0.0 == loop }.flatMap { $0.1.map(\.sequence) } }
    }
}

/// A clock the test moves by hand.
private final class ManualClock: Sendable {
    let nanos = Atomic<UInt64>(1_000_000_000_000)
    func advance(seconds: UInt64) { nanos.add(seconds * 1_000_000_000, ordering: .relaxed) }
    var read: @Sendable () -> UInt64 { { self.nanos.load(ordering: .relaxed) } }
}

private func channel(_ name: String) -> ChannelName { ChannelName(name)! }

private func publish(_ broker: MemoryBroker, _ name: String, _ data: String = "1", retain: Bool = false) -> PublishReceipt {
    broker.publish([PublishRequest(channel: channel(name), event: .message, data: data, retain: retain)])[0]
}

@Suite struct MemoryBrokerTests {
    @Test func offsetsArePerChannelAndSequencesStreamWide() {
        let broker = MemoryBroker(epoch: 7, loopCount: 1, deliver: DeliveryLog().delivery)
        let a1 = publish(broker, "a")
        let b1 = publish(broker, "b")
        let a2 = publish(broker, "a")
        #expect([a1.message.offset, b1.message.offset, a2.message.offset] == [1, 1, 2])
        #expect([a1.message.sequence, b1.message.sequence, a2.message.sequence] == [1, 2, 3])
        #expect(a2.message.cursor.description == "00000007-3")
    }

    @Test func deliversOnlyToLoopsWithSubscribersAndCountsThem() {
        let log = DeliveryLog()
        let broker = MemoryBroker(epoch: 1, loopCount: 3, deliver: log.delivery)
        _ = broker.subscribe([channel("a")], loop: 0, resume: .fresh)
        _ = broker.subscribe([channel("a")], loop: 2, resume: .fresh)
        _ = broker.subscribe([channel("a")], loop: 2, resume: .fresh)
        let receipt = publish(broker, "a")
        #expect(receipt.delivered == 3)
        #expect(log.sequences(loop: 0) == [1])
        #expect(log.sequences(loop: 1) == [])
        #expect(log.sequences(loop: 2) == [1])
        broker.unsubscribe([channel("a")], loop: 2)
        #expect(publish(broker, "a").delivered == 2)
    }

    @Test func loopsBeyondTheInlineCountsAreCountedToo() {
        let log = DeliveryLog()
        let broker = MemoryBroker(epoch: 1, loopCount: 7, deliver: log.delivery)
        for loop in [1, 4, 6, 6] { _ = broker.subscribe([channel("a")], loop: loop, resume: .fresh) }
        #expect(publish(broker, "a").delivered == 4)
        #expect((0..<7).filter { !log.sequences(loop: $0).isEmpty } == [1, 4, 6])
        broker.unsubscribe([channel("a")], loop: 6)
        broker.unsubscribe([channel("a")], loop: 4)
        #expect(publish(broker, "a").delivered == 2)
        #expect(log.sequences(loop: 4) == [1])
        #expect(log.sequences(loop: 6) == [1, 2])
    }

    @Test func resumeReplaysEveryMissedMessageOfEveryChannelInOrder() {
        let broker = MemoryBroker(epoch: 1, loopCount: 1, deliver: DeliveryLog().delivery)
        let start = broker.subscribe([channel("a"), channel("b")], loop: 0, resume: .fresh)
        broker.unsubscribe([channel("a"), channel("b")], loop: 0)
        _ = publish(broker, "a", "1")
        _ = publish(broker, "c", "x")
        _ = publish(broker, "b", "2")
        _ = publish(broker, "a", "3")
        let resumed = broker.subscribe([channel("a"), channel("b")], loop: 0, resume: .cursor(start.position))
        #expect(resumed.reset.isEmpty)
        #expect(resumed.replay.map(\.data) == ["1", "2", "3"])
        #expect(resumed.position == start.position)
        #expect(resumed.since == 4)
    }

    @Test func resumeFromTheMiddleSkipsWhatWasSeen() {
        let broker = MemoryBroker(epoch: 1, loopCount: 1, deliver: DeliveryLog().delivery)
        let first = publish(broker, "a", "1")
        _ = publish(broker, "a", "2")
        let resumed = broker.subscribe([channel("a")], loop: 0, resume: .cursor(first.message.cursor))
        #expect(resumed.replay.map(\.data) == ["2"])
    }

    @Test func ringOverflowGivesResetForThatChannelOnly() {
        let broker = MemoryBroker(epoch: 1, loopCount: 1, limits: .init(historySize: 2), deliver: DeliveryLog().delivery)
        let start = broker.subscribe([channel("a"), channel("b")], loop: 0, resume: .fresh)
        for i in 1...3 { _ = publish(broker, "a", "\(i)") }
        _ = publish(broker, "b", "b1")
        let resumed = broker.subscribe([channel("a"), channel("b")], loop: 0, resume: .cursor(start.position))
        #expect(resumed.reset == [channel("a")])
        #expect(resumed.replay.map(\.data) == ["b1"])
    }

    @Test func historyOlderThanTheTTLGivesReset() {
        let clock = ManualClock()
        let broker = MemoryBroker(epoch: 1, loopCount: 1, limits: .init(historySize: 10, historyTTLSeconds: 60),
                                  clock: clock.read, deliver: DeliveryLog().delivery)
        let start = broker.subscribe([channel("a")], loop: 0, resume: .fresh)
        _ = publish(broker, "a")
        clock.advance(seconds: 61)
        let resumed = broker.subscribe([channel("a")], loop: 0, resume: .cursor(start.position))
        #expect(resumed.reset == [channel("a")])
        #expect(resumed.replay.isEmpty)
    }

    @Test func cursorsFromAnotherEpochOrTheFutureOrGarbageGiveResetForAll() {
        let broker = MemoryBroker(epoch: 1, loopCount: 1, deliver: DeliveryLog().delivery)
        _ = publish(broker, "a")
        let names = [channel("a"), channel("b")]
        #expect(broker.subscribe(names, loop: 0, resume: .cursor(StreamCursor(epoch: 2, sequence: 1))).reset == names)
        #expect(broker.subscribe(names, loop: 0, resume: .cursor(StreamCursor(epoch: 1, sequence: 99))).reset == names)
        #expect(broker.subscribe(names, loop: 0, resume: .invalid).reset == names)
        #expect(broker.subscribe(names, loop: 0, resume: .invalid).position.sequence == 1)
    }

    @Test func retainedMessageIsGivenToFreshSubscribersOnly() {
        let broker = MemoryBroker(epoch: 1, loopCount: 1, deliver: DeliveryLog().delivery)
        _ = publish(broker, "a", "old", retain: true)
        _ = publish(broker, "a", "not kept")
        let latest = publish(broker, "a", "latest", retain: true)
        let fresh = broker.subscribe([channel("a")], loop: 0, resume: .fresh)
        #expect(fresh.retained.map(\.data) == ["latest"])
        let resumed = broker.subscribe([channel("a")], loop: 0, resume: .cursor(latest.message.cursor))
        #expect(resumed.retained.isEmpty)
        #expect(resumed.replay.isEmpty)
    }

    @Test func forgottenChannelsResetResumesThatMayHaveAGap() {
        let clock = ManualClock()
        let broker = MemoryBroker(epoch: 1, loopCount: 1, limits: .init(historySize: 10, historyTTLSeconds: 1),
                                  clock: clock.read, deliver: DeliveryLog().delivery)
        let before = broker.subscribe([channel("z")], loop: 0, resume: .fresh)
        broker.unsubscribe([channel("z")], loop: 0)
        _ = publish(broker, "a")
        clock.advance(seconds: 5)
        broker.sweep()
        #expect(broker.channelCount == 0)
        let resumed = broker.subscribe([channel("a")], loop: 0, resume: .cursor(before.position))
        #expect(resumed.reset == [channel("a")])
    }
}

extension MemoryBrokerTests {
    @Test func aChannelRecreatedAfterBeingForgottenStillResetsOldCursors() {
        let clock = ManualClock()
        let broker = MemoryBroker(epoch: 1, loopCount: 1, limits: .init(historySize: 10, historyTTLSeconds: 1),
                                  clock: clock.read, deliver: DeliveryLog().delivery)
        let seen = publish(broker, "a", "1")
        _ = publish(broker, "a", "2")       // missed, then expired and forgotten
        clock.advance(seconds: 5)
        broker.sweep()
        #expect(broker.channelCount == 0)
        _ = publish(broker, "a", "3")       // a new incarnation of the channel
        let resumed = broker.subscribe([channel("a")], loop: 0, resume: .cursor(seen.message.cursor))
        #expect(resumed.reset == [channel("a")])
    }
}

@Suite struct StreamCursorTests {
    @Test func roundTrips() {
        let cursor = StreamCursor(epoch: 0xab, sequence: 42)
        #expect(cursor.description == "000000ab-42")
        #expect(StreamCursor("000000ab-42") == cursor)
    }

    @Test(arguments: ["", "abc", "000000ab", "000000ab-", "000000ab--1", "0000000g-1", "000000AB-1", "00000ab-1",
                      "000000ab-1x", "000000ab-1-2", "000000ab-01", "000000ab-123456789012345678901", "000000ab- 1"])
    func rejectsWhatHeraldCouldNotHaveIssued(_ text: String) {
        #expect(StreamCursor(text) == nil)
    }
}

@Suite struct HistoryRingTests {
    private func message(_ sequence: UInt64, at time: UInt64 = 0) -> ChannelMessage {
        ChannelMessage(channel: ChannelName("a")!, event: .message, offset: sequence,
                       cursor: StreamCursor(epoch: 1, sequence: sequence), data: "\(sequence)", publishedAt: time, retain: false)
    }

    @Test func keepsTheNewestUpToCapacityAndRemembersWhatItDropped() {
        var ring = HistoryRing(capacity: 3)
        for s in 1...5 { ring.append(message(UInt64(s))) }
        #expect(ring.messages(after: 0).map(\.sequence) == [3, 4, 5])
        #expect(ring.evictedThrough == 2)
        #expect(ring.messages(after: 4).map(\.sequence) == [5])
    }

    @Test func growsAgainInOrderAfterExpiryWrappedIt() {
        var ring = HistoryRing(capacity: 4)
        for s in 1...3 { ring.append(message(UInt64(s), at: UInt64(s))) }
        ring.expire(olderThan: 2)          // drops 1: head moves, ring not full
        for s in 4...6 { ring.append(message(UInt64(s), at: UInt64(s))) }
        #expect(ring.messages(after: 0).map(\.sequence) == [3, 4, 5, 6])
        #expect(ring.evictedThrough == 2)
        ring.expire(olderThan: 100)
        #expect(ring.count == 0)
        #expect(ring.evictedThrough == 6)
        ring.append(message(7, at: 200))
        #expect(ring.messages(after: 0).map(\.sequence) == [7])
    }
}
