import Dispatch
import HeraldCore
import Testing
@testable import Realtime

/// Runs `body` on a started loop and waits for it, since hub methods are loop-only.
func onLoop<T>(_ loop: EventLoop, _ body: @escaping () -> T) -> T {
    let done = DispatchSemaphore(value: 0)
    let box = ResultBox<T>()
    let bound = LoopBound(box, loop: loop)
    nonisolated(unsafe) let work = body
    loop.execute {
        bound.value.value = work()
        done.signal()
    }
    done.wait()
    return box.value!
}

final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// A subscriber that records what it was given.
final class RecordingSubscriber: StreamSubscriber {
    let name: String
    var hubSlots = HubSlots()
    var received: [String] = []
    var onDeliver: ((ChannelMessage) -> Void)?
    init(_ name: String) { self.name = name }
    func deliver(_ message: ChannelMessage, encoded: EncodedMessage) {
        received.append("\(message.channel):\(message.data)")
        onDeliver?(message)
    }
    func reset(_ channels: [ChannelName], position: StreamCursor) {
        received.append("reset:\(channels.map(\.rawValue).joined(separator: ","))@\(position)")
    }
}

private func message(_ channel: String, _ data: String, sequence: UInt64) -> ChannelMessage {
    ChannelMessage(channel: ChannelName(channel)!, event: .message, offset: sequence,
                   cursor: StreamCursor(epoch: 1, sequence: sequence), data: data, publishedAt: 0, retain: false)
}

@Suite struct LoopHubTests {
    let loop: EventLoop

    init() throws {
        loop = try EventLoop(index: 0)
        loop.start(name: "hub-test")
    }

    @Test func deliversToEverySubscriberOfTheChannelOnly() {
        let hub = LoopHub(loop: loop)
        let result = onLoop(loop) { () -> [[String]] in
            let a = RecordingSubscriber("a"), b = RecordingSubscriber("b"), c = RecordingSubscriber("c")
            hub.add(a, to: ChannelName("x")!, since: 0)
            hub.add(b, to: ChannelName("x")!, since: 0)
            hub.add(c, to: ChannelName("y")!, since: 0)
            hub.deliver([message("x", "1", sequence: 1), message("y", "2", sequence: 2), message("z", "3", sequence: 3)])
            return [a.received, b.received, c.received]
        }
        #expect(result == [["x:1"], ["x:1"], ["y:2"]])
        loop.stop()
    }

    @Test func skipsMessagesAtOrBelowTheSubscriptionPoint() {
        let hub = LoopHub(loop: loop)
        let received = onLoop(loop) { () -> [String] in
            let a = RecordingSubscriber("a")
            hub.add(a, to: ChannelName("x")!, since: 5)
            hub.deliver([message("x", "old", sequence: 5), message("x", "new", sequence: 6)])
            return a.received
        }
        #expect(received == ["x:new"])
        loop.stop()
    }

    @Test func resetReachesEachAffectedSubscriberOnceAndMovesItsSubscriptionPoint() {
        let hub = LoopHub(loop: loop)
        let result = onLoop(loop) { () -> [[String]] in
            let a = RecordingSubscriber("a"), b = RecordingSubscriber("b"), c = RecordingSubscriber("c")
            hub.add(a, to: ChannelName("x")!, since: 900)
            hub.add(a, to: ChannelName("y")!, since: 900)
            hub.add(b, to: ChannelName("y")!, since: 900)
            hub.add(c, to: ChannelName("z")!, since: 0)
            // A new epoch: sequences start low again, below the old subscription points.
            let position = StreamCursor(epoch: 2, sequence: 3)
            hub.reset([ChannelName("x")!, ChannelName("y")!], position: position)
            hub.deliver([message("x", "covered", sequence: 3), message("x", "live", sequence: 4), message("y", "live", sequence: 5)])
            return [a.received, b.received, c.received]
        }
        #expect(result[0] == ["reset:x,y@00000002-3", "x:live", "y:live"])
        #expect(result[1] == ["reset:y@00000002-3", "y:live"])
        #expect(result[2] == [])
        loop.stop()
    }

    @Test func swapRemovalKeepsEveryOtherSubscriberReachable() {
        let hub = LoopHub(loop: loop)
        let result = onLoop(loop) { () -> ([[String]], Int) in
            let subs = (0..<5).map { RecordingSubscriber("s\($0)") }
            for s in subs {
                hub.add(s, to: ChannelName("x")!, since: 0)
                hub.add(s, to: ChannelName("y")!, since: 0)
            }
            hub.removeAll(subs[0])
            hub.remove(subs[3], from: ChannelName("x")!)
            hub.removeAll(subs[1])
            hub.deliver([message("x", "1", sequence: 1), message("y", "2", sequence: 2)])
            return (subs.map(\.received), hub.subscriberCount(ChannelName("x")!))
        }
        #expect(result.0 == [[], [], ["x:1", "y:2"], ["y:2"], ["x:1", "y:2"]])
        #expect(result.1 == 2)
        loop.stop()
    }

    @Test func theInlineFirstSubscriberIsRefilledFromTheRestAndEmptiedLast() {
        let hub = LoopHub(loop: loop)
        let result = onLoop(loop) { () -> ([[String]], [Int]) in
            let a = RecordingSubscriber("a"), b = RecordingSubscriber("b"), c = RecordingSubscriber("c")
            let d = RecordingSubscriber("d")
            let x = ChannelName("x")!
            var counts: [Int] = []
            for s in [a, b, c] { hub.add(s, to: x, since: 0) }
            hub.removeAll(a)                  // index 0: c moves into the inline place
            counts.append(hub.subscriberCount(x))
            hub.deliver([message("x", "1", sequence: 1)])
            hub.removeAll(c)                  // the inline one again: b moves there, the rest is empty
            hub.add(d, to: x, since: 1)       // joins behind b
            hub.deliver([message("x", "2", sequence: 2)])
            counts.append(hub.subscriberCount(x))
            hub.removeAll(b)
            hub.removeAll(d)                  // the last one: the channel is forgotten
            counts.append(hub.channelCount)
            return ([a, b, c, d].map(\.received), counts)
        }
        #expect(result.0 == [[], ["x:1", "x:2"], ["x:1"], ["x:2"]])
        #expect(result.1 == [2, 2, 0])
        loop.stop()
    }

    @Test func closesRequestedDuringDeliveryRunAfterThePass() {
        let hub = LoopHub(loop: loop)
        let result = onLoop(loop) { () -> ([String], [String], Int) in
            let a = RecordingSubscriber("a"), b = RecordingSubscriber("b")
            a.onDeliver = { _ in hub.scheduleClose { hub.removeAll(a) } }
            hub.add(a, to: ChannelName("x")!, since: 0)
            hub.add(b, to: ChannelName("x")!, since: 0)
            hub.deliver([message("x", "1", sequence: 1), message("x", "2", sequence: 2)])
            let countAfterFirst = hub.subscriberCount(ChannelName("x")!)
            hub.deliver([message("x", "3", sequence: 3)])
            return (a.received, b.received, countAfterFirst)
        }
        #expect(result.0 == ["x:1", "x:2"])
        #expect(result.1 == ["x:1", "x:2", "x:3"])
        #expect(result.2 == 1)
        loop.stop()
    }

    @Test func emptyChannelsAreForgotten() {
        let hub = LoopHub(loop: loop)
        let count = onLoop(loop) { () -> Int in
            let a = RecordingSubscriber("a")
            hub.add(a, to: ChannelName("x")!, since: 0)
            hub.removeAll(a)
            return hub.channelCount
        }
        #expect(count == 0)
        loop.stop()
    }

    @Test func aPeakOfChannelsGivesItsStorageBackAndTheRestStillReceive() {
        // 64 channels of its own for each of 300 streams, then all but one closed (issue 17,
        // Benchmarks/peak.py): the table shrinks, and the stream left still gets its messages.
        let hub = LoopHub(loop: loop)
        let result = onLoop(loop) { () -> (peak: Int, after: Int, kept: [String]) in
            let streams = (0..<300).map { RecordingSubscriber("s\($0)") }
            for (i, s) in streams.enumerated() {
                for j in 0..<64 { hub.add(s, to: ChannelName("r:\(i).\(j)")!, since: 0) }
            }
            let peak = hub.channelCapacity
            for s in streams.dropFirst() { hub.removeAll(s) }
            hub.deliver([message("r:0.63", "1", sequence: 1), message("r:1.0", "2", sequence: 2)])
            return (peak, hub.channelCapacity, streams[0].received)
        }
        #expect(result.peak >= 300 * 64)
        #expect(result.after < result.peak / 16)
        #expect(result.kept == ["r:0.63:1"])
        loop.stop()
    }
}

@Suite struct SSEEncoderTests {
    @Test func splitsEveryKindOfLineBreakIntoDataLines() {
        let bytes = SSEEncoder.event(id: "00000001-1", event: "e", data: "a\nb\r\nc\rd")
        #expect(String(decoding: bytes, as: UTF8.self) == "id: 00000001-1\nevent: e\ndata: a\ndata: b\ndata: c\ndata: d\n\n")
    }

    @Test func envelopeIsOneLineOfJSON() {
        let m = message("generation:9", "{\"s\":\"a\\nb\"}", sequence: 3)
        let text = String(decoding: m.sseBytes, as: UTF8.self)
        #expect(text == "id: 00000001-3\nevent: message\ndata: {\"channel\":\"generation:9\",\"offset\":3,\"data\":{\"s\":\"a\\nb\"}}\n\n")
    }
}

@Suite struct ChannelNameTests {
    @Test(arguments: ["user:42", "generation:9f1c", "a", "A-Z_0.9@x", String(repeating: "c", count: 200)])
    func accepts(_ name: String) { #expect(ChannelName(name) != nil) }

    @Test(arguments: ["", " ", "a b", "a\nb", "a/b", "ü", "a*", String(repeating: "c", count: 201)])
    func rejects(_ name: String) { #expect(ChannelName(name) == nil) }

    @Test func grantsMatchExactNamesAndPrefixes() {
        let exact = ChannelGrant("generation:1")!
        let prefix = ChannelGrant("generation:*")!
        #expect(exact.allows(ChannelName("generation:1")!))
        #expect(!exact.allows(ChannelName("generation:12")!))
        #expect(prefix.allows(ChannelName("generation:12")!))
        #expect(!prefix.allows(ChannelName("generation:")!))
        #expect(!prefix.allows(ChannelName("generations:1")!))
        #expect(ChannelGrant("*") == nil)
        #expect(ChannelGrant(":*") == nil)
        #expect(ChannelGrant("gen*") == nil, "a star only after a colon")
        #expect(ChannelGrant("user:4*") == nil)
        #expect(ChannelGrant("a b") == nil)
    }

    @Test(arguments: ["message", "order.paid", "a:b-c_d", String(repeating: "e", count: 64)])
    func eventNamesAccepted(_ name: String) { #expect(EventName(name) != nil) }

    @Test(arguments: ["", "a b", "a\nb", "a\rb", "a\u{0}b", "é", String(repeating: "e", count: 65)])
    func eventNamesRejected(_ name: String) { #expect(EventName(name) == nil) }
}
