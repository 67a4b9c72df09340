import HeraldCore
import Synchronization
import Testing
@testable import RealtimeMemory

/// Collects what a broker hands to its node, in order.
private final class InboundLog: Sendable {
    let batches = Mutex<[[ChannelMessage]]>([])
    func attach(to broker: MemoryBroker) {
        broker.setInboundHandler { messages in self.batches.withLock { $0.append(messages) } }
    }
    var sequences: [UInt64] { batches.withLock { $0.flatMap { $0.map(\.sequence) } } }
}

private func channel(_ name: String) -> ChannelName { ChannelName(name)! }

private func publish(_ broker: MemoryBroker, _ name: String, _ data: String = "1", retain: Bool = false) -> PublishReceipt {
    broker.publish([PublishRequest(channel: channel(name), event: .message, data: data, retain: retain)])[0]
}

@Suite struct MemoryBrokerTests {
    @Test func offsetsArePerChannelAndSequencesStreamWide() {
        let broker = MemoryBroker(epoch: 7)
        let a1 = publish(broker, "a")
        let b1 = publish(broker, "b")
        let a2 = publish(broker, "a")
        #expect([a1.message.offset, b1.message.offset, a2.message.offset] == [1, 1, 2])
        #expect([a1.message.sequence, b1.message.sequence, a2.message.sequence] == [1, 2, 3])
        #expect(a2.message.cursor.description == "00000007-3")
    }

    @Test func handsSubscribedChannelsMessagesToTheNodeAndCountsSubscribers() {
        let log = InboundLog()
        let broker = MemoryBroker(epoch: 1)
        log.attach(to: broker)
        _ = publish(broker, "a")                         // nobody subscribed: stored, not handed over
        #expect(log.sequences.isEmpty)
        _ = broker.subscribe([channel("a")], resume: .fresh)
        _ = broker.subscribe([channel("a"), channel("b")], resume: .fresh)
        #expect(publish(broker, "a").delivered == 2)
        #expect(publish(broker, "b").delivered == 1)
        _ = publish(broker, "c")
        #expect(log.sequences == [2, 3])
        broker.unsubscribe([channel("a")])
        #expect(publish(broker, "a").delivered == 1)
        broker.unsubscribe([channel("a"), channel("a")])  // one too many: the count stays at zero
        #expect(publish(broker, "a").delivered == 0)
        #expect(log.sequences == [2, 3, 5])
    }

    @Test func aBatchReachesTheNodeInOneCallInStreamOrder() {
        let log = InboundLog()
        let broker = MemoryBroker(epoch: 1)
        log.attach(to: broker)
        _ = broker.subscribe([channel("a"), channel("b")], resume: .fresh)
        let receipts = broker.publish(["a", "b", "a", "x"].map { PublishRequest(channel: channel($0), event: .message, data: "1") })
        #expect(receipts.map(\.message.sequence) == [1, 2, 3, 4])
        #expect(receipts.map(\.message.offset) == [1, 1, 2, 1])
        #expect(log.batches.withLock { $0.map { $0.map(\.sequence) } } == [[1, 2, 3]])
    }

    @Test func historyAndRetainedAreReadWithoutSubscribing() {
        let broker = MemoryBroker(epoch: 1, limits: .init(historySize: 2))
        let first = publish(broker, "a", "1", retain: true)
        _ = publish(broker, "a", "2")
        let after = broker.history(channel("a"), after: first.message.cursor)
        #expect(after.complete && after.messages.map(\.data) == ["2"])
        #expect(broker.retained(channel("a"))?.data == "1")
        #expect(broker.retained(channel("b")) == nil)
        _ = publish(broker, "a", "3")                    // the ring drops "1"
        let all = broker.history(channel("a"), after: StreamCursor(epoch: 1, sequence: 0))
        #expect(!all.complete && all.messages.isEmpty)
        #expect(!broker.history(channel("a"), after: StreamCursor(epoch: 9, sequence: 0)).complete)
        #expect(broker.history(channel("never"), after: first.message.cursor).complete)
    }

    @Test func resumeReplaysEveryMissedMessageOfEveryChannelInOrder() {
        let broker = MemoryBroker(epoch: 1)
        let start = broker.subscribe([channel("a"), channel("b")], resume: .fresh)
        broker.unsubscribe([channel("a"), channel("b")])
        _ = publish(broker, "a", "1")
        _ = publish(broker, "c", "x")
        _ = publish(broker, "b", "2")
        _ = publish(broker, "a", "3")
        let resumed = broker.subscribe([channel("a"), channel("b")], resume: .cursor(start.position))
        #expect(resumed.reset.isEmpty)
        #expect(resumed.replay.map(\.data) == ["1", "2", "3"])
        #expect(resumed.position == start.position)
        #expect(resumed.since == 4)
    }

    @Test func resumeFromTheMiddleSkipsWhatWasSeen() {
        let broker = MemoryBroker(epoch: 1)
        let first = publish(broker, "a", "1")
        _ = publish(broker, "a", "2")
        let resumed = broker.subscribe([channel("a")], resume: .cursor(first.message.cursor))
        #expect(resumed.replay.map(\.data) == ["2"])
    }

    @Test func ringOverflowGivesResetForThatChannelOnly() {
        let broker = MemoryBroker(epoch: 1, limits: .init(historySize: 2))
        let start = broker.subscribe([channel("a"), channel("b")], resume: .fresh)
        for i in 1...3 { _ = publish(broker, "a", "\(i)") }
        _ = publish(broker, "b", "b1")
        let resumed = broker.subscribe([channel("a"), channel("b")], resume: .cursor(start.position))
        #expect(resumed.reset == [channel("a")])
        #expect(resumed.replay.map(\.data) == ["b1"])
    }

    @Test func historyOlderThanTheTTLGivesReset() {
        let clock = ManualClock()
        let broker = MemoryBroker(epoch: 1, limits: .init(historySize: 10, historyTTLSeconds: 60),
                                  clock: clock)
        let start = broker.subscribe([channel("a")], resume: .fresh)
        _ = publish(broker, "a")
        clock.advance(byMilliseconds: 61_000)
        let resumed = broker.subscribe([channel("a")], resume: .cursor(start.position))
        #expect(resumed.reset == [channel("a")])
        #expect(resumed.replay.isEmpty)
    }

    @Test func cursorsFromAnotherEpochOrTheFutureOrGarbageGiveResetForAll() {
        let broker = MemoryBroker(epoch: 1)
        _ = publish(broker, "a")
        let names = [channel("a"), channel("b")]
        #expect(broker.subscribe(names, resume: .cursor(StreamCursor(epoch: 2, sequence: 1))).reset == names)
        #expect(broker.subscribe(names, resume: .cursor(StreamCursor(epoch: 1, sequence: 99))).reset == names)
        #expect(broker.subscribe(names, resume: .invalid).reset == names)
        #expect(broker.subscribe(names, resume: .invalid).position.sequence == 1)
    }

    @Test func removingAnAppsChannelsForgetsTheirHistoryAndRetainedOnly() {
        let broker = MemoryBroker(epoch: 1)
        let chat = ChannelName.scoped(channel("room"), app: "chat")
        let first = broker.publish([PublishRequest(channel: chat, event: .message, data: "secret", retain: true)])[0]
        _ = publish(broker, "room", "default's", retain: true)
        broker.removeChannels(app: "chat")
        #expect(broker.retained(chat) == nil)
        #expect(!broker.history(chat, after: StreamCursor(epoch: 1, sequence: 0)).complete, "a resume from before cannot be told complete")
        #expect(broker.subscribe([chat], resume: .fresh).retained.isEmpty)
        #expect(broker.retained(channel("room"))?.data == "default's")
        let next = broker.publish([PublishRequest(channel: chat, event: .message, data: "new")])[0]
        #expect(next.message.offset == 1 && next.message.sequence > first.message.sequence)
    }

    @Test func retainedMessageIsGivenToFreshSubscribersOnly() {
        let broker = MemoryBroker(epoch: 1)
        _ = publish(broker, "a", "old", retain: true)
        _ = publish(broker, "a", "not kept")
        let latest = publish(broker, "a", "latest", retain: true)
        let fresh = broker.subscribe([channel("a")], resume: .fresh)
        #expect(fresh.retained.map(\.data) == ["latest"])
        let resumed = broker.subscribe([channel("a")], resume: .cursor(latest.message.cursor))
        #expect(resumed.retained.isEmpty)
        #expect(resumed.replay.isEmpty)
        // The state snapshot of a resumed channel comes as the baseline (issue 18).
        #expect(resumed.baseline.map(\.data) == ["latest"])
    }

    @Test func aChannelAddedOnResumeGetsItsRetainedMessageBeforeTheReplay() {
        let broker = MemoryBroker(epoch: 1)
        _ = publish(broker, "c", "state", retain: true)
        // The client's stream had a and b; its cursor is after c's retained message.
        let cursor = publish(broker, "a", "seen").message.cursor
        let missed = publish(broker, "c", "missed")
        let resumed = broker.subscribe([channel("a"), channel("b"), channel("c")], resume: .cursor(cursor))
        #expect(resumed.baseline.map(\.data) == ["state"])
        #expect(resumed.retained.isEmpty && resumed.reset.isEmpty)
        #expect(resumed.replay.map(\.sequence) == [missed.message.sequence])
        // A retained message newer than the cursor is in the replay, not the baseline.
        let newer = publish(broker, "c", "newer", retain: true)
        let again = broker.subscribe([channel("c")], resume: .cursor(cursor))
        #expect(again.baseline.isEmpty)
        #expect(again.replay.map(\.sequence) == [missed.message.sequence, newer.message.sequence])
        // A fresh subscriber gets it as `retained`, never as a baseline.
        #expect(broker.subscribe([channel("c")], resume: .fresh).baseline.isEmpty)
    }

    @Test func forgottenChannelsResetResumesThatMayHaveAGap() {
        let clock = ManualClock()
        let broker = MemoryBroker(epoch: 1, limits: .init(historySize: 10, historyTTLSeconds: 1),
                                  clock: clock)
        let before = broker.subscribe([channel("z")], resume: .fresh)
        broker.unsubscribe([channel("z")])
        _ = publish(broker, "a")
        clock.advance(byMilliseconds: 5_000)
        broker.sweep()
        #expect(broker.channelCount == 0)
        let resumed = broker.subscribe([channel("a")], resume: .cursor(before.position))
        #expect(resumed.reset == [channel("a")])
    }
}

extension MemoryBrokerTests {
    @Test func aChannelRecreatedAfterBeingForgottenStillResetsOldCursors() {
        let clock = ManualClock()
        let broker = MemoryBroker(epoch: 1, limits: .init(historySize: 10, historyTTLSeconds: 1),
                                  clock: clock)
        let seen = publish(broker, "a", "1")
        _ = publish(broker, "a", "2")       // missed, then expired and forgotten
        clock.advance(byMilliseconds: 5_000)
        broker.sweep()
        #expect(broker.channelCount == 0)
        _ = publish(broker, "a", "3")       // a new incarnation of the channel
        let resumed = broker.subscribe([channel("a")], resume: .cursor(seen.message.cursor))
        #expect(resumed.reset == [channel("a")])
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

/// A channel that is only subscribed to has no history until its first publish (issue 17): it
/// must behave exactly as one whose history was made with it.
@Suite struct MemoryBrokerLazyHistoryTests {
    @Test func aSubscribedChannelFirstPublishedAfterAnotherWasForgottenKeepsItsFloor() {
        let clock = ManualClock()
        let broker = MemoryBroker(epoch: 1, limits: .init(historySize: 10, historyTTLSeconds: 1), clock: clock)
        let first = broker.subscribe([channel("user:1")], resume: .fresh)   // known, never published
        _ = publish(broker, "other")
        clock.advance(byMilliseconds: 5_000)
        broker.sweep()                                                  // forgets `other`, not `user:1`
        #expect(broker.channelCount == 1)
        let message = publish(broker, "user:1")
        #expect(message.message.offset == 1, "offsets start at 1 on the first publish")
        #expect(message.delivered == 1)
        // The channel was known since `first`: nothing of it was forgotten after that position.
        let resumed = broker.subscribe([channel("user:1")], resume: .cursor(first.position))
        #expect(resumed.reset.isEmpty)
        #expect(resumed.replay.map(\.sequence) == [message.message.sequence])
        #expect(broker.history(channel("user:1"), after: first.position).complete)
    }

    @Test func aNeverPublishedChannelIsForgottenOnceUnsubscribed() {
        let broker = MemoryBroker(epoch: 1)
        let snapshot = broker.subscribe([channel("user:2")], resume: .fresh)
        #expect(snapshot.replay.isEmpty && snapshot.retained.isEmpty && snapshot.reset.isEmpty)
        #expect(broker.retained(channel("user:2")) == nil)
        #expect(broker.history(channel("user:2"), after: snapshot.position).messages.isEmpty)
        broker.sweep()
        #expect(broker.channelCount == 1, "a subscribed channel is kept")
        broker.unsubscribe([channel("user:2")])
        broker.sweep()
        #expect(broker.channelCount == 0)
    }
}

/// Retained messages are bounded (RT-6, ADR 0028): they expire `retainedTTLSeconds` after their
/// publish and can be cleared, so channels retained on once do not stay in memory for ever.
@Suite struct MemoryBrokerRetainedExpiryTests {
    @Test func aRetainedMessageIsGivenUntilItsAgeThenNotAndTheSweepForgetsItsChannel() {
        let clock = ManualClock()
        let broker = MemoryBroker(epoch: 1, limits: .init(historySize: 10, historyTTLSeconds: 1, retainedTTLSeconds: 60), clock: clock)
        let published = publish(broker, "generation:1", "running", retain: true)
        clock.advance(byMilliseconds: 59_000)
        broker.sweep()                                                  // history gone, the retained kept
        #expect(broker.channelCount == 1)
        #expect(broker.retained(channel("generation:1"))?.data == "running")
        #expect(broker.subscribe([channel("generation:1")], resume: .fresh).retained.map(\.data) == ["running"])
        broker.unsubscribe([channel("generation:1")])
        clock.advance(byMilliseconds: 1_001)
        // Past its age, reads ignore it before any sweep: a fresh subscriber and a resume alike.
        #expect(broker.retained(channel("generation:1")) == nil)
        #expect(broker.subscribe([channel("generation:1")], resume: .fresh).retained.isEmpty)
        broker.unsubscribe([channel("generation:1")])
        let resumed = broker.subscribe([channel("generation:1")], resume: .cursor(published.message.cursor))
        #expect(resumed.baseline.isEmpty && resumed.retained.isEmpty)
        broker.unsubscribe([channel("generation:1")])
        broker.sweep()
        #expect(broker.channelCount == 0, "the sweep frees an expired retained message and its idle channel")
    }

    @Test func aNewerRetainedPublishRestartsTheAge() {
        let clock = ManualClock()
        let broker = MemoryBroker(epoch: 1, limits: .init(retainedTTLSeconds: 10), clock: clock)
        _ = publish(broker, "g", "1", retain: true)
        clock.advance(byMilliseconds: 8_000)
        _ = publish(broker, "g", "2", retain: true)
        clock.advance(byMilliseconds: 8_000)
        broker.sweep()
        #expect(broker.retained(channel("g"))?.data == "2")
    }

    @Test func clearingForgetsTheRetainedMessageAndLeavesHistory() {
        let broker = MemoryBroker(epoch: 1)
        let before = broker.subscribe([channel("z")], resume: .fresh).position
        broker.unsubscribe([channel("z")])
        _ = publish(broker, "g", "running", retain: true)
        broker.clearRetained(channel("g"))
        broker.clearRetained(channel("never"))                          // none: not an error, nothing made
        #expect(broker.retained(channel("g")) == nil)
        #expect(broker.subscribe([channel("g")], resume: .fresh).retained.isEmpty)
        #expect(broker.history(channel("g"), after: before).messages.map(\.data) == ["running"])
        #expect(broker.channelCount == 2)                               // z (unsubscribed, not yet swept) and g
        _ = publish(broker, "g", "again", retain: true)
        #expect(broker.retained(channel("g"))?.data == "again")
    }
}
