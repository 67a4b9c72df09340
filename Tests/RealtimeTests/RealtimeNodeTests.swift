import Dispatch
import Glibc
import HeraldCore
import Synchronization
import Testing
@testable import Realtime
import RealtimeMemory

@Suite struct RealtimeNodeTests {
    @Test func afterPendingDeliveriesWaitsForEveryLoop() throws {
        let group = try EventLoopGroup(count: 2)
        group.start()
        defer { group.stop() }
        let node = RealtimeNode(group: group, broker: MemoryBroker(), presence: MemoryPresenceStore())
        let calls = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<100 {
            node.afterPendingDeliveries {
                calls.withLock { $0 += 1 }
                done.signal()
            }
        }
        for _ in 0..<100 { #expect(done.wait(timeout: .now() + 5) == .success) }
        #expect(calls.withLock { $0 } == 100)
    }

    @Test func aLoopThatNeverAnswersDoesNotHoldTheCallerPastTheTimeout() throws {
        let group = try EventLoopGroup(count: 1)   // never started: its queued work never runs
        let node = RealtimeNode(group: group, broker: MemoryBroker(), presence: MemoryPresenceStore())
        let calls = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        let start = DispatchTime.now()
        node.afterPendingDeliveries(timeoutNanoseconds: 100_000_000) {
            calls.withLock { $0 += 1 }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        let waited = DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds
        #expect(waited >= 100_000_000)
        #expect(waited < 1_000_000_000, "expired about a watchdog tick after the deadline")
        _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(200))
        #expect(calls.withLock { $0 } == 1, "once, not again when the watchdog ticks on")
    }
}

/// Back-pressure (issue 17): the node counts what each loop was handed and has not written yet,
/// per subscriber, and says it is behind only past `backlogLimit`.
@Suite struct RealtimeNodeBacklogTests {
    @Test func queuedDeliveriesCountSubscribersPerLoopUntilTheLoopWritesThem() throws {
        let group = try EventLoopGroup(count: 2)   // started below: until then nothing is written
        defer { group.stop() }
        let node = RealtimeNode(group: group, broker: MemoryBroker(), presence: MemoryPresenceStore(), backlogLimit: 3)
        let room = ChannelName("room:1")!, other = ChannelName("other")!
        // Interest alone is what the fan-out counts: two subscribers of room:1 on loop 0, one on loop 1.
        _ = try node.subscribe([room], loop: 0, resume: .fresh)
        _ = try node.subscribe([room], loop: 0, resume: .fresh)
        _ = try node.subscribe([room], loop: 1, resume: .fresh)
        _ = try node.broker.publish([PublishRequest(channel: room, event: .message, data: "1")])
        #expect(node.hubs.map { $0.queuedDeliveries.load(ordering: .relaxed) } == [2, 1])
        #expect(!node.isBehind, "2 queued on the busiest loop, the limit is 3")
        _ = try node.broker.publish([PublishRequest(channel: other, event: .message, data: "nobody listens")])
        #expect(node.hubs.map { $0.queuedDeliveries.load(ordering: .relaxed) } == [2, 1], "a channel without subscribers costs no loop anything")
        _ = try node.broker.publish([PublishRequest(channel: room, event: .message, data: "2")])
        #expect(node.hubs.map { $0.queuedDeliveries.load(ordering: .relaxed) } == [4, 2])
        #expect(node.isBehind, "loop 0 has 4 queued, above the limit of 3")

        group.start()
        let done = DispatchSemaphore(value: 0)
        node.afterPendingDeliveries { done.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(node.hubs.map { $0.queuedDeliveries.load(ordering: .relaxed) } == [0, 0])
        #expect(!node.isBehind)
    }

    /// The server sends stream writes a slice per turn (`LoopContext.flushPending`): a loop's
    /// deliveries stay counted, and its barrier unanswered, until its writes were flushed.
    @Test func deliveriesStayQueuedUntilTheLoopsWritesAreFlushed() throws {
        let group = try EventLoopGroup(count: 1)
        group.start()
        defer { group.stop() }
        let node = RealtimeNode(group: group, broker: MemoryBroker(), presence: MemoryPresenceStore(), backlogLimit: 0)
        let hub = node.hubs[0]
        let held = SharedActions()
        let hooked = DispatchSemaphore(value: 0)
        hub.loop.execute {
            hub.afterWritesHook = { action in held.actions.append(action) }
            hooked.signal()
        }
        hooked.wait()
        let room = ChannelName("room:1")!
        _ = try node.subscribe([room], loop: 0, resume: .fresh)
        _ = try node.broker.publish([PublishRequest(channel: room, event: .message, data: "1")])
        let barrier = DispatchSemaphore(value: 0)
        node.afterPendingDeliveries(timeoutNanoseconds: 60_000_000_000) { barrier.signal() }
        // Both the delivery's count and the barrier wait in the hook, in that order.
        let queued = DispatchSemaphore(value: 0)
        let count = Mutex(0)
        hub.loop.execute {
            count.withLock { $0 = held.actions.count }
            queued.signal()
        }
        queued.wait()
        #expect(count.withLock { $0 } == 2)
        #expect(hub.queuedDeliveries.load(ordering: .relaxed) == 1)
        #expect(node.isBehind)
        #expect(barrier.wait(timeout: .now()) == .timedOut)
        hub.loop.execute {
            let actions = held.actions
            held.actions = []
            for action in actions { action() }
        }
        #expect(barrier.wait(timeout: .now() + 5) == .success)
        #expect(hub.queuedDeliveries.load(ordering: .relaxed) == 0)
        #expect(!node.isBehind)
    }

    @Test func theDefaultLimitLetsABurstQueue() throws {
        let group = try EventLoopGroup(count: 1)
        let node = RealtimeNode(group: group, broker: MemoryBroker(), presence: MemoryPresenceStore())
        #expect(node.backlogLimit == RealtimeNode.defaultBacklogLimit)
        // A 100-message burst to 10,000 subscribers on two loops (the fan-out benchmark) is not paced:
        // its messages share one write per subscriber only while they can queue.
        #expect(RealtimeNode.defaultBacklogLimit >= 100 * 10_000 / 2)
    }
}

/// Records the stream sequences a subscriber was given: its snapshot's replay, then live messages.
/// Touched only on its loop.
private final class SequenceRecorder: StreamSubscriber {
    var hubSlots = HubSlots()
    var sequences: [UInt64] = []
    var since: UInt64 = 0
    func deliver(_ message: ChannelMessage, encoded: EncodedMessage) { sequences.append(message.sequence) }
    var resets: [[ChannelName]] = []
    func reset(_ channels: [ChannelName], position: StreamCursor) { resets.append(channels) }
}

/// Holds loop-owned recorders so the test thread can pass them around; read only through `onLoop`.
private final class Recorders: @unchecked Sendable {
    var all: [(loop: Int, recorder: SequenceRecorder)] = []
}

/// A broker whose store is down, for the node's side of a failed subscribe.
private final class FailingBroker: Broker {
    let epoch: UInt32 = 1
    func setInboundHandler(_ handler: @escaping BrokerInboundHandler) {}
    func publish(_ batch: [PublishRequest]) throws(BrokerError) -> [PublishReceipt] { throw .unavailable("down") }
    func subscribe(_ channels: [ChannelName], resume: ResumePoint) throws(BrokerError) -> SubscribeSnapshot { throw .unavailable("down") }
    func unsubscribe(_ channels: [ChannelName]) {}
    func history(_ channel: ChannelName, after position: StreamCursor) throws(BrokerError) -> ChannelHistory { throw .timedOut }
    func retained(_ channel: ChannelName) throws(BrokerError) -> ChannelMessage? { throw .timedOut }
    func clearRetained(_ channel: ChannelName) throws(BrokerError) { throw .unavailable("down") }
    func sweep() {}
    func removeChannels(app: String) throws(BrokerError) { throw .unavailable("down") }
    var publishedCount: UInt64 { 0 }
}

/// A memory broker that can be told to report lost messages, as a Redis broker does.
private final class ResettingBroker: Broker {
    let inner: MemoryBroker
    private let resetHandler = Mutex<BrokerResetHandler?>(nil)
    init(_ inner: MemoryBroker) { self.inner = inner }
    var epoch: UInt32 { inner.epoch }
    func setInboundHandler(_ handler: @escaping BrokerInboundHandler) { inner.setInboundHandler(handler) }
    func setResetHandler(_ handler: @escaping BrokerResetHandler) { resetHandler.withLock { $0 = handler } }
    func fireReset(_ channels: [ChannelName], position: StreamCursor) { resetHandler.withLock { $0 }?(channels, position) }
    func publish(_ batch: [PublishRequest]) throws(BrokerError) -> [PublishReceipt] { inner.publish(batch) }
    func subscribe(_ channels: [ChannelName], resume: ResumePoint) throws(BrokerError) -> SubscribeSnapshot { inner.subscribe(channels, resume: resume) }
    func unsubscribe(_ channels: [ChannelName]) { inner.unsubscribe(channels) }
    func history(_ channel: ChannelName, after position: StreamCursor) throws(BrokerError) -> ChannelHistory { inner.history(channel, after: position) }
    func retained(_ channel: ChannelName) throws(BrokerError) -> ChannelMessage? { inner.retained(channel) }
    func clearRetained(_ channel: ChannelName) throws(BrokerError) { inner.clearRetained(channel) }
    func sweep() {}
    func removeChannels(app: String) throws(BrokerError) { inner.removeChannels(app: app) }
    var publishedCount: UInt64 { inner.publishedCount }
}

/// The node-level fan-out: the broker hands every message to the node once; the node queues it on
/// the loops that want its channel, and a subscribe's snapshot joins the live messages exactly.
@Suite struct RealtimeNodeFanOutTests {
    /// Subscribes `recorder` on `loop` as a transport does: node first, then the hub, in one loop turn.
    private static func subscribe(_ recorder: SequenceRecorder, _ channels: [ChannelName], on loop: Int,
                                  node: RealtimeNode, resume: ResumePoint) {
        nonisolated(unsafe) let recorder = recorder
        onLoop(node.group.loops[loop]) {
            let snapshot = try! node.subscribe(channels, loop: loop, resume: resume)
            recorder.since = snapshot.since
            recorder.sequences += snapshot.replay.map(\.sequence)
            for channel in channels { node.hubs[loop].add(recorder, to: channel, since: snapshot.since) }
        }
    }

    private static func waitForLoops(_ node: RealtimeNode) {
        let done = DispatchSemaphore(value: 0)
        node.afterPendingDeliveries { done.signal() }
        #expect(done.wait(timeout: .now() + 10) == .success)
    }

    private static func sequences(_ recorder: SequenceRecorder, on loop: Int, node: RealtimeNode) -> [UInt64] {
        nonisolated(unsafe) let recorder = recorder
        return onLoop(node.group.loops[loop]) { recorder.sequences }
    }

    @Test func eachLoopGetsItsChannelsMessagesInPublishOrder() throws {
        let group = try EventLoopGroup(count: 2)
        group.start()
        defer { group.stop() }
        let node = RealtimeNode(group: group, broker: MemoryBroker(epoch: 1, limits: .init(historySize: 10_000)),
                                presence: MemoryPresenceStore())
        let a = ChannelName("a")!, b = ChannelName("b")!
        let onA = SequenceRecorder(), onAB = SequenceRecorder()
        Self.subscribe(onA, [a], on: 0, node: node, resume: .fresh)
        Self.subscribe(onAB, [a, b], on: 1, node: node, resume: .fresh)
        #expect(node.loopsSubscribed(to: a) == [0, 1])
        #expect(node.loopsSubscribed(to: b) == [1])
        for i in 0..<300 {
            let names = i % 3 == 0 ? ["b", "a"] : ["a", "c", "b"]
            _ = try node.broker.publish(names.map { PublishRequest(channel: ChannelName($0)!, event: .message, data: "\(i)") })
        }
        Self.waitForLoops(node)
        // Which sequence went to which channel, replayed from the broker's history.
        let history = try node.broker.history(a, after: StreamCursor(epoch: 1, sequence: 0)).messages.map(\.sequence)
        let historyB = try node.broker.history(b, after: StreamCursor(epoch: 1, sequence: 0)).messages.map(\.sequence)
        #expect(Self.sequences(onA, on: 0, node: node) == history)
        #expect(Self.sequences(onAB, on: 1, node: node) == (history + historyB).sorted())
        node.unsubscribe([a, b], loop: 1)
        #expect(node.loopsSubscribed(to: a) == [0])
        #expect(node.loopsSubscribed(to: b) == [])
    }

    @Test func aBrokerResetReachesTheLoopsWithSubscribersInOrderWithMessages() throws {
        let group = try EventLoopGroup(count: 2)
        group.start()
        defer { group.stop() }
        let broker = ResettingBroker(MemoryBroker(epoch: 1))
        let node = RealtimeNode(group: group, broker: broker, presence: MemoryPresenceStore())
        let a = ChannelName("a")!, b = ChannelName("b")!, c = ChannelName("c")!
        let onA = SequenceRecorder(), onAB = SequenceRecorder()
        Self.subscribe(onA, [a], on: 0, node: node, resume: .fresh)
        Self.subscribe(onAB, [a, b], on: 1, node: node, resume: .fresh)
        _ = try broker.publish([PublishRequest(channel: a, event: .message, data: "1")])
        broker.fireReset([a, b, c], position: StreamCursor(epoch: 1, sequence: 1))
        _ = try broker.publish([PublishRequest(channel: b, event: .message, data: "2")])
        Self.waitForLoops(node)
        nonisolated(unsafe) let first = onA, second = onAB
        #expect(onLoop(group.loops[0]) { first.resets } == [[a]])
        #expect(onLoop(group.loops[1]) { second.resets } == [[a, b]])
        #expect(Self.sequences(onAB, on: 1, node: node) == [1, 2])
    }

    @Test func subscribingWhilePublishingLosesAndDoublesNothing() throws {
        let group = try EventLoopGroup(count: 2)
        group.start()
        defer { group.stop() }
        let broker = MemoryBroker(epoch: 1, limits: .init(historySize: 100_000))
        let node = RealtimeNode(group: group, broker: broker, presence: MemoryPresenceStore())
        let channel = ChannelName("room:1")!
        // The publisher runs until 1000 messages after every subscriber has joined, so they all
        // join mid-stream, however the two threads are scheduled. 0: not all joined yet.
        let target = Atomic(0)
        let publisher = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            var next = 0
            _ = try? node.broker.publish([PublishRequest(channel: channel, event: .message, data: "0")])
            started.signal()
            while next < 1_000 || target.load(ordering: .relaxed) == 0 || next < target.load(ordering: .relaxed) {
                let size = 1 + next % 7
                _ = try? node.broker.publish((0..<size).map { _ in PublishRequest(channel: channel, event: .message, data: "1") })
                next += size
            }
            publisher.signal()
        }
        // Subscribers join on both loops while messages flow: half resume from the start (replay,
        // then live), half fresh (live only, from their snapshot).
        let recorders = Recorders()
        started.wait()
        for i in 0..<40 {
            let recorder = SequenceRecorder()
            let loop = i % 2
            let resume: ResumePoint = i % 4 < 2 ? .cursor(StreamCursor(epoch: 1, sequence: 0)) : .fresh
            Self.subscribe(recorder, [channel], on: loop, node: node, resume: resume)
            recorders.all.append((loop, recorder))
            // The next join waits until the publisher has moved on, so joins land between
            // publishes rather than in one burst (an event to wait for, not a pause).
            let joinedAt = broker.publishedCount
            let giveUp = DispatchTime.now() + 5
            while broker.publishedCount < joinedAt + 20, DispatchTime.now() < giveUp { sched_yield() }
        }
        target.store(Int(broker.publishedCount) + 1_000, ordering: .relaxed)
        #expect(publisher.wait(timeout: .now() + 30) == .success)
        Self.waitForLoops(node)
        let total = Int(broker.publishedCount)
        for (index, entry) in recorders.all.enumerated() {
            let got = Self.sequences(entry.recorder, on: entry.loop, node: node)
            nonisolated(unsafe) let recorder = entry.recorder
            let since = onLoop(node.group.loops[entry.loop]) { recorder.since }
            let first: UInt64 = index % 4 < 2 ? 1 : since + 1
            #expect(since > 0 && since < total, "subscriber \(index) joined mid-stream")
            let expected = first <= UInt64(total) ? Array(first...UInt64(total)) : []
            // Compared by hand: printing both arrays of thousands would bury the failure.
            let mismatch = zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            #expect(got.count == expected.count && mismatch == nil,
                    "subscriber \(index) (since \(since)): \(got.count) of \(expected.count) messages, first difference at \(mismatch.map(String.init) ?? "the end")")
        }
    }

    @Test func aFailedSubscribeWithdrawsTheLoopsInterest() throws {
        let group = try EventLoopGroup(count: 1)
        let node = RealtimeNode(group: group, broker: FailingBroker(), presence: MemoryPresenceStore())
        let channel = ChannelName("a")!
        #expect(throws: BrokerError.unavailable("down")) {
            try node.subscribe([channel], loop: 0, resume: .fresh)
        }
        #expect(node.loopsSubscribed(to: channel).isEmpty)
    }
}

/// Actions a test's hook holds back (loop thread only).
private final class SharedActions: @unchecked Sendable {
    var actions: [() -> Void] = []
}
