import Dispatch
import Foundation
import HeraldCore
import Synchronization
import Testing
@testable import RealtimeRedis

/// The Redis broker against a real redis-server of the test's own (one per test).
@Suite(.enabled(if: RedisServerProcess.isInstalled, "redis-server is not installed: scripts/bootstrap --test installs it"))
final class RedisBrokerTests {
    let server: RedisServerProcess

    init() throws {
        server = try RedisServerProcess()
    }

    @Test func offsetsArePerChannelAndSequencesStreamWide() throws {
        let broker = makeBroker(server, namespace: "t1")
        defer { broker.shutdown() }
        let receipts = try broker.publish([request("a"), request("b"), request("a")])
        #expect(receipts.map(\.message.offset) == [1, 1, 2])
        #expect(receipts.map(\.message.sequence) == [1, 2, 3])
        #expect(Set(receipts.map(\.message.cursor.epoch)) == [broker.epoch])
        #expect(broker.publishedCount >= 0)
        let next = try broker.publish([request("b")])
        #expect(next[0].message.offset == 2 && next[0].message.sequence == 4)
    }

    @Test func historyAfterACursorAndItsBound() throws {
        let broker = makeBroker(server, namespace: "t2", historySize: 3)
        defer { broker.shutdown() }
        let receipts = try broker.publish((1...5).map { request("h", "\($0)") })
        let epoch = receipts[0].message.cursor.epoch
        let recent = try broker.history(channel("h"), after: StreamCursor(epoch: epoch, sequence: 2))
        #expect(recent.complete)
        #expect(recent.messages.map(\.data) == ["3", "4", "5"])
        #expect(recent.messages.map(\.offset) == [3, 4, 5])
        // Messages 1 and 2 were trimmed: from 1 on, 2 is missing.
        let trimmed = try broker.history(channel("h"), after: StreamCursor(epoch: epoch, sequence: 1))
        #expect(!trimmed.complete && trimmed.messages.isEmpty)
        let otherEpoch = try broker.history(channel("h"), after: StreamCursor(epoch: epoch &+ 1, sequence: 4))
        #expect(!otherEpoch.complete)
        let future = try broker.history(channel("h"), after: StreamCursor(epoch: epoch, sequence: 99))
        #expect(!future.complete)
        // A channel never published to: complete only from a recent position.
        let empty = try broker.history(channel("never"), after: StreamCursor(epoch: epoch, sequence: 5))
        #expect(empty.complete && empty.messages.isEmpty)
    }

    @Test func retainedMessageForFreshAndBaselineForResumed() throws {
        let broker = makeBroker(server, namespace: "t3")
        defer { broker.shutdown() }
        #expect(try broker.retained(channel("gen")) == nil)
        let kept = try broker.publish([request("gen", "{\"s\":1}", retain: true)])[0].message
        _ = try broker.publish([request("gen", "{\"s\":2}")])
        #expect(try broker.retained(channel("gen"))?.data == "{\"s\":1}")

        let fresh = try broker.subscribe([channel("gen")], resume: .fresh)
        #expect(fresh.retained.map(\.data) == ["{\"s\":1}"])
        #expect(fresh.replay.isEmpty && fresh.reset.isEmpty)
        #expect(fresh.since == 2)

        let resumed = try broker.subscribe([channel("gen")], resume: .cursor(kept.cursor))
        #expect(resumed.baseline.map(\.data) == ["{\"s\":1}"])
        #expect(resumed.replay.map(\.data) == ["{\"s\":2}"])
        #expect(resumed.position == kept.cursor)

        let invalid = try broker.subscribe([channel("gen")], resume: .invalid)
        #expect(invalid.reset == [channel("gen")])
        #expect(invalid.retained.map(\.data) == ["{\"s\":1}"])

        let otherEpoch = try broker.subscribe([channel("gen")], resume: .cursor(StreamCursor(epoch: kept.cursor.epoch &+ 1, sequence: 1)))
        #expect(otherEpoch.reset == [channel("gen")])
        broker.unsubscribe([channel("gen"), channel("gen"), channel("gen"), channel("gen")])
    }

    /// ADR 0028: the retained key expires the retained TTL after its publish (its own, longer than
    /// the history's), a plain publish leaves its TTL alone, and a clear deletes it.
    @Test func theRetainedKeyExpiresAfterItsTTLAndAClearDeletesIt() throws {
        let broker = makeBroker(server, namespace: "t3r", historyTTLSeconds: 5, retainedTTLSeconds: 3_600)
        defer { broker.shutdown() }
        _ = try broker.publish([request("gen", "running", retain: true), request("other", "x", retain: true)])
        _ = try broker.publish([request("gen", "plain")])
        guard case .integer(let ttl) = try server.command("TTL", "{t3r}:r:gen") else {
            Issue.record("no TTL reply"); return
        }
        #expect((3_590...3_600).contains(ttl), "retained TTL \(ttl)")
        guard case .integer(let historyTTL) = try server.command("TTL", "{t3r}:h:gen") else {
            Issue.record("no TTL reply"); return
        }
        #expect((1...5).contains(historyTTL))

        try broker.clearRetained(channel("gen"))
        try broker.clearRetained(channel("never"))                      // none: not an error
        #expect(try server.command("EXISTS", "{t3r}:r:gen") == .integer(0))
        #expect(try broker.retained(channel("gen")) == nil)
        let fresh = try broker.subscribe([channel("gen"), channel("other")], resume: .fresh)
        defer { broker.unsubscribe([channel("gen"), channel("other")]) }
        #expect(fresh.retained.map(\.data) == ["x"], "only the cleared channel's is gone")
    }

    @Test func aClearWhileRedisIsDownFails() throws {
        let broker = RedisBroker(RedisBroker.Configuration(endpoint: server.endpoint, namespace: "t3d",
                                                           client: RedisClientOptions(callTimeoutMilliseconds: 500)))
        defer { broker.shutdown() }
        server.stop()
        #expect(throws: BrokerError.self) { try broker.clearRetained(channel("d")) }
    }

    @Test func removingAnAppsChannelsDeletesItsKeysOnly() throws {
        let broker = makeBroker(server, namespace: "t-apps")
        defer { broker.shutdown() }
        let chat = ChannelName.scoped(channel("room"), app: "chat")
        let chatter = ChannelName.scoped(channel("room"), app: "chatter")
        _ = try broker.publish([PublishRequest(channel: chat, event: .message, data: "secret", retain: true),
                                PublishRequest(channel: chatter, event: .message, data: "other app", retain: true),
                                request("room", "default's", retain: true)])
        #expect(try broker.retained(chatter)?.data == "other app", "before")
        try broker.removeChannels(app: "chat")
        #expect(try broker.retained(chat) == nil)
        #expect(try broker.retained(chatter)?.data == "other app")
        #expect(try broker.retained(channel("room"))?.data == "default's")
        let next = try broker.publish([PublishRequest(channel: chat, event: .message, data: "new")])[0]
        #expect(next.message.offset == 1)
    }

    @Test func twoNodesSeeEachOthersPublishesOnceInOrder() throws {
        let a = makeBroker(server, namespace: "t4")
        let b = makeBroker(server, namespace: "t4")
        defer { a.shutdown(); b.shutdown() }
        let logA = NodeLog(), logB = NodeLog()
        logA.attach(to: a)
        logB.attach(to: b)
        _ = try a.subscribe([channel("room")], resume: .fresh)
        _ = try b.subscribe([channel("room")], resume: .fresh)
        var sent: [UInt64] = []
        let before = a.costs.commands
        for index in 0..<60 {
            let publisher = index % 2 == 0 ? a : b
            sent.append(try publisher.publish([request("room", "\(index)")])[0].message.sequence)
        }
        #expect(logA.wait { $0.messages.count >= 60 })
        #expect(logB.wait { $0.messages.count >= 60 })
        #expect(logA.messages.map(\.sequence) == sent)
        #expect(logB.messages.map(\.sequence) == sent)
        #expect(logA.messages.map(\.offset) == Array(1...60))
        #expect(logA.resets.isEmpty && logB.resets.isEmpty)
        #expect(a.epoch == b.epoch)
        // Each node received every message once; each publish was one script call.
        #expect(a.costs.messagesReceived == 60 && b.costs.messagesReceived == 60)
        #expect(a.costs.messageBytes > 60 * 20)
        // 30 publishes by A, plus EVAL after the first EVALSHA met an empty script cache, plus a
        // PING if the connection sat idle for a second.
        #expect((30...32).contains(a.costs.commands - before), "\(a.costs.commands - before) commands")
    }

    @Test func publishReturnsAfterItsOwnCopyReachedTheNode() throws {
        let broker = makeBroker(server, namespace: "t5")
        defer { broker.shutdown() }
        let log = NodeLog()
        log.attach(to: broker)
        _ = try broker.subscribe([channel("mine")], resume: .fresh)
        for index in 1...20 {
            let sequence = try broker.publish([request("mine", "\(index)")])[0].message.sequence
            // ADR 0005: the loop barrier after a publish relies on this.
            #expect(log.messages.last?.sequence == sequence)
        }
        let receipt = try broker.publish([request("mine")])[0]
        #expect(receipt.delivered == 1)
        #expect(try broker.publish([request("nobody")])[0].delivered == 0)
    }

    @Test func subscribeSnapshotMeetsLiveMessagesWithoutGapOrDouble() throws {
        let publisher = makeBroker(server, namespace: "t6")
        let node = makeBroker(server, namespace: "t6")
        defer { publisher.shutdown(); node.shutdown() }
        let log = NodeLog()
        log.attach(to: node)
        let start = try publisher.publish([request("flow", "0")])[0].message.cursor
        let stop = Atomic<Bool>(false)
        let published = Mutex<[UInt64]>([start.sequence])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var index = 1
            while !stop.load(ordering: .relaxed) {
                if let receipt = try? publisher.publish([request("flow", "\(index)")]) {
                    published.withLock { $0.append(receipt[0].message.sequence) }
                }
                index += 1
            }
            done.signal()
        }
        // Let some messages go by before the node subscribes with the first cursor.
        #expect(waitUntil { published.withLock { $0.count } > 20 })
        let snapshot = try node.subscribe([channel("flow")], resume: .cursor(start))
        #expect(waitUntil { published.withLock { $0.count } > 60 })
        stop.store(true, ordering: .relaxed)
        done.wait()
        let all = published.withLock { $0 }
        #expect(log.wait { $0.messages.last?.sequence == all.last })
        // What a subscriber is sent: the replay, then live messages above `since`.
        let live = log.messages.map(\.sequence).filter { $0 > snapshot.since }
        let seen = snapshot.replay.map(\.sequence) + live
        #expect(seen == Array(all.dropFirst()))
        #expect(snapshot.reset.isEmpty)
    }

    /// A channel first subscribed on a node starts its chain at the newest of what its history
    /// read found and what it heard since the SUBSCRIBE; only a message whose previous one was
    /// neither read nor heard is a gap.
    @Test func aNewSubscriptionsChainStartsAtTheNewestReadOrHeardAndOnlyARealGapBreaksIt() {
        // Nothing heard: the read.
        #expect(RedisBroker.chain(from: 40, heard: []) == (40, nil))
        // Heard newer messages, each after the one before (published after the read): the
        // newest, no gap. Taking the read alone made the next one (previous 43) look like a gap.
        #expect(RedisBroker.chain(from: 40, heard: [(41, 40), (43, 41)]) == (43, nil))
        // Heard messages the read saw too, or a previous subscription's last ones: skipped.
        #expect(RedisBroker.chain(from: 40, heard: [(38, 35), (40, 38), (42, 40)]) == (42, nil))
        // A message after the read whose previous was neither read nor heard: a gap at it.
        #expect(RedisBroker.chain(from: 40, heard: [(43, 42), (44, 43)]) == (44, 43))
        #expect(RedisBroker.chain(from: 40, heard: [(41, 40), (45, 44)]) == (45, 45))
        // The channel began again (its history expired): previous 0 is no gap.
        #expect(RedisBroker.chain(from: 40, heard: [(47, 0)]) == (47, nil))
        // A channel with no message when it was read (0): its first message has previous 0.
        #expect(RedisBroker.chain(from: 0, heard: [(5, 0), (6, 5)]) == (6, nil))
    }

    /// A node that subscribes to a channel again and again (a client resuming on it, alone on
    /// the channel there) while another node publishes without pause: every message after each
    /// snapshot arrives, and no subscription is reset (nothing was lost).
    @Test func resubscribingWhileAnotherNodePublishesNeverResets() throws {
        let publisher = makeBroker(server, namespace: "t12")
        let node = makeBroker(server, namespace: "t12")
        defer { publisher.shutdown(); node.shutdown() }
        let log = NodeLog()
        log.attach(to: node)
        let stop = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        let newest = Atomic<UInt64>(0)
        Thread.detachNewThread {
            var index = 0
            while !stop.load(ordering: .relaxed) {
                if let receipt = try? publisher.publish([request("busy", "\(index)")]) {
                    newest.store(receipt[0].message.sequence, ordering: .relaxed)
                }
                index += 1
            }
            done.signal()
        }
        defer { stop.store(true, ordering: .relaxed); done.wait() }
        #expect(waitUntil { newest.load(ordering: .relaxed) > 10 })
        for _ in 0..<40 {
            let snapshot = try node.subscribe([channel("busy")], resume: .fresh)
            // Live messages well past the snapshot: any reset for a gap found at the start is in by then.
            #expect(log.wait { $0.messages.contains { $0.sequence > snapshot.since + 5 } })
            node.unsubscribe([channel("busy")])
        }
        #expect(log.resets.isEmpty)
        #expect(node.resetChannelCount == 0)
    }

    @Test func redisRestartResetsSubscribedChannelsOnceThenGoesLive() throws {
        let broker = makeBroker(server, namespace: "t7")
        defer { broker.shutdown() }
        let log = NodeLog()
        log.attach(to: broker)
        _ = try broker.subscribe([channel("x"), channel("y")], resume: .fresh)
        _ = try broker.publish([request("x", "before")])
        let before = broker.epoch
        try server.restart()
        #expect(log.wait { !$0.resets.isEmpty })
        let resets = log.resets
        #expect(resets.count == 1)
        #expect(resets.first?.channels == [channel("x"), channel("y")])
        #expect(resets.first?.position.epoch != before)
        #expect(broker.epoch == resets.first?.position.epoch)
        let after = try broker.publish([request("x", "after")])[0].message
        #expect(after.cursor.epoch == broker.epoch && after.offset == 1)
        #expect(log.wait { $0.messages.last?.data == "after" })
        #expect(log.resets.count == 1)
        // The old epoch's cursor cannot be replayed.
        let resumed = try broker.subscribe([channel("x")], resume: .cursor(StreamCursor(epoch: before, sequence: 1)))
        #expect(resumed.reset == [channel("x")])
    }

    @Test func aLostMessageIsDetectedByTheNextOneOnTheChannel() throws {
        let broker = makeBroker(server, namespace: "t8")
        defer { broker.shutdown() }
        let log = NodeLog()
        log.attach(to: broker)
        _ = try broker.subscribe([channel("g")], resume: .fresh)
        _ = try broker.publish([request("g", "1")])
        try publishUnseen(namespace: "t8", channel: "g", data: "2")
        _ = try broker.publish([request("g", "3")])
        #expect(log.wait { $0.messages.last?.data == "3" })
        #expect(log.resets.count == 1)
        #expect(log.resets.first?.channels == [channel("g")])
        // The reset comes before the message after the gap, at the position before it.
        #expect(log.resets.first?.position.sequence == log.messages.last!.sequence - 1)
        #expect(log.messages.map(\.data) == ["1", "3"])
    }

    @Test func aLostLastMessageIsFoundByThePositionCheck() throws {
        let broker = makeBroker(server, namespace: "t9", positionCheckMilliseconds: 100)
        defer { broker.shutdown() }
        let log = NodeLog()
        log.attach(to: broker)
        _ = try broker.subscribe([channel("p"), channel("q")], resume: .fresh)
        _ = try broker.publish([request("p", "1")])
        try publishUnseen(namespace: "t9", channel: "p", data: "2")
        #expect(log.wait { !$0.resets.isEmpty })
        #expect(log.resets.map(\.channels) == [[channel("p")]])
        #expect(broker.resetChannelCount == 1)
    }

    @Test func scriptCacheFlushFallsBackToEval() throws {
        let broker = makeBroker(server, namespace: "t10")
        defer { broker.shutdown() }
        _ = try broker.publish([request("s")])
        #expect(try server.command("SCRIPT", "FLUSH") == .status("OK"))
        let receipt = try broker.publish([request("s")])
        #expect(receipt[0].message.offset == 2)
    }

    /// fresh14: a publish whose answer timed out was answered "nothing was published", yet Redis
    /// ran it once it moved again and subscribers got it; a caller that retried got it twice.
    @Test func aPublishThatTimedOutSaysItMayHaveHappenedAndDid() throws {
        let broker = RedisBroker(RedisBroker.Configuration(endpoint: server.endpoint, namespace: "t11p",
                                                           client: RedisClientOptions(callTimeoutMilliseconds: 300)))
        defer { broker.shutdown() }
        let first = try broker.publish([request("p", "1")])
        server.pause()
        var failure: BrokerError?
        do {
            _ = try broker.publish([request("p", "2")])
        } catch {
            failure = error
        }
        server.resume()
        #expect(failure?.mayHaveTakenEffect == true, "\(String(describing: failure))")
        // Redis ran the publish it had been sent once it moved again.
        #expect(waitUntil(seconds: 10) {
            (try? broker.history(channel("p"), after: first[0].message.cursor))?.messages.map(\.data) == ["2"]
        })
    }

    @Test func aRefusedConnectionSaysNothingHappened() throws {
        let broker = RedisBroker(RedisBroker.Configuration(endpoint: server.endpoint, namespace: "t11r",
                                                           client: RedisClientOptions(callTimeoutMilliseconds: 500)))
        defer { broker.shutdown() }
        server.stop()
        // The first call may find the broken connection only after writing to it (connection
        // lost: it cannot know); the next ones cannot connect, so they know nothing ran.
        _ = try? broker.publish([request("r")])
        do {
            _ = try broker.publish([request("r")])
            Issue.record("published with Redis down")
        } catch {
            #expect(!error.mayHaveTakenEffect, "\(error)")
        }
    }

    @Test func lostAndUnreadableAnswersMayHaveTakenEffect() {
        #expect(RedisBroker.brokerError(.connectionLost("reset")).mayHaveTakenEffect)
        #expect(RedisBroker.brokerError(.unexpectedReply("x")).mayHaveTakenEffect)
        #expect(RedisBroker.brokerError(.timedOut).mayHaveTakenEffect)
        #expect(!RedisBroker.brokerError(.connectFailed("refused")).mayHaveTakenEffect)
        #expect(!RedisBroker.brokerError(.backingOff).mayHaveTakenEffect)
        #expect(!RedisBroker.brokerError(.server("ERR")).mayHaveTakenEffect)
    }

    /// fresh14: a channel's history stream gone while its meta hash stays (Redis evicts keys that
    /// carry a TTL under `maxmemory-policy volatile-*`, as managed Redis services default to)
    /// resumed with no `reset`: the messages it held were skipped silently.
    @Test func aHistoryStreamThatLostEntriesIsAGapNotASilentSkip() throws {
        let broker = makeBroker(server, namespace: "t12e")
        defer { broker.shutdown() }
        let seen = try broker.publish([request("ev", "1")])[0].message.cursor
        _ = try broker.publish([request("ev", "2")])
        #expect(try server.command("DEL", "{t12e}:h:ev") == .integer(1))
        _ = try broker.publish([request("ev", "3")])

        let resumed = try broker.subscribe([channel("ev")], resume: .cursor(seen))
        defer { broker.unsubscribe([channel("ev")]) }
        #expect(resumed.reset == [channel("ev")])
        #expect(resumed.replay.isEmpty)
        let history = try broker.history(channel("ev"), after: seen)
        #expect(!history.complete)

        // A whole history still replays, and from the newest message nothing is missing.
        let whole = try broker.publish([request("ev", "4")])[0].message.cursor
        let fromThree = try broker.history(channel("ev"), after: StreamCursor(epoch: whole.epoch, sequence: whole.sequence - 1))
        #expect(fromThree.complete && fromThree.messages.map(\.data) == ["4"])
        #expect(try broker.history(channel("ev"), after: whole).complete)
    }

    @Test func redisDownFailsCallsWithinTheBound() throws {
        let broker = RedisBroker(RedisBroker.Configuration(endpoint: server.endpoint, namespace: "t11",
                                                           client: RedisClientOptions(callTimeoutMilliseconds: 500)))
        defer { broker.shutdown() }
        server.stop()
        let started = DispatchTime.now().uptimeNanoseconds
        #expect(throws: BrokerError.self) { try broker.publish([request("d")]) }
        #expect(throws: BrokerError.self) { try broker.subscribe([channel("d")], resume: .fresh) }
        #expect(throws: BrokerError.self) { try broker.history(channel("d"), after: StreamCursor(epoch: 1, sequence: 0)) }
        #expect(throws: BrokerError.self) { try broker.retained(channel("d")) }
        #expect(DispatchTime.now().uptimeNanoseconds - started < 4_000_000_000)
        try server.start()
        // Back without a restart of the broker (the backoff is at most 2 s).
        #expect(waitUntil(seconds: 10) { (try? broker.publish([request("d")])) != nil })
    }

    /// Runs the publish script as a node would, but PUBLISHes to a channel nobody listens to: the
    /// message is in history and the sequence moves, but no node receives it (a lost pub/sub message).
    private func publishUnseen(namespace: String, channel name: String, data: String) throws {
        let prefix = "{\(namespace)}:"
        let connection = try RedisConnection(server.endpoint, connectTimeoutMilliseconds: 1_000, readTimeoutMilliseconds: 2_000)
        let script = BrokerScripts.publish
        let arguments = ["EVAL", script.source, "5", prefix + "meta", prefix + "ticks", prefix + "m:" + name, prefix + "h:" + name,
                         prefix + "r:" + name, "00000001", "256", "600", "86400", name, prefix + "nowhere", "message", "0", data]
        let reply = try connection.command(arguments.map { Array($0.utf8) })
        guard reply.elements != nil else { throw RedisError.unexpectedReply("\(reply)") }
    }
}

/// Polls a condition that no event announces (another thread's progress), at most `seconds`.
func waitUntil(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(seconds * 1e9)
    while !condition() {
        if DispatchTime.now().uptimeNanoseconds > deadline { return false }
        usleep(5_000)
    }
    return true
}

/// fresh14: Redis with a memory limit and an evicting policy may drop channel history or meta
/// (their keys carry a TTL, which `volatile-*` policies evict first); the start check names it.
@Suite(.enabled(if: RedisServerProcess.isInstalled, "redis-server is not installed: scripts/bootstrap --test installs it"))
final class RedisMemoryPolicyTests {
    let server: RedisServerProcess

    init() throws {
        server = try RedisServerProcess()
    }

    @Test func theStartCheckSaysWhetherRedisMayEvict() throws {
        let unlimited = try server.endpoint.check(connectTimeoutMilliseconds: 2_000)
        #expect(unlimited?.maxmemoryBytes == 0)
        #expect(unlimited?.mayEvict == false)
        #expect(try server.command("CONFIG", "SET", "maxmemory", "64mb") == .status("OK"))
        #expect(try server.command("CONFIG", "SET", "maxmemory-policy", "volatile-lru") == .status("OK"))
        let evicting = try server.endpoint.check(connectTimeoutMilliseconds: 2_000)
        #expect(evicting == RedisMemoryPolicy(maxmemoryBytes: 64 << 20, policy: "volatile-lru"))
        #expect(evicting?.mayEvict == true)
        #expect(try server.command("CONFIG", "SET", "maxmemory-policy", "noeviction") == .status("OK"))
        #expect(try server.endpoint.check(connectTimeoutMilliseconds: 2_000)?.mayEvict == false)
    }

    @Test func infoTextWithoutTheFieldsIsNoPolicy() {
        #expect(RedisMemoryPolicy(info: "# Memory\r\nused_memory:1\r\n") == nil)
        #expect(RedisMemoryPolicy(info: "maxmemory:0\r\nmaxmemory_policy:allkeys-lru\r\n")?.mayEvict == false)
        #expect(RedisMemoryPolicy(info: "maxmemory:10\nmaxmemory_policy:allkeys-lru\n")?.mayEvict == true)
    }
}
