import Dispatch
import Glibc
import HeraldCore
import Synchronization
import Testing
@testable import Realtime
import RealtimeMemory

/// A blocking loopback TCP client with a read timeout, for driving an in-process server.
final class TestClient {
    let fd: Int32
    private var buffered: [UInt8] = []

    /// - Parameter receiveBuffer: `SO_RCVBUF` set before connecting (a reader that holds little).
    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw TestClientError.connectFailed(errno)
        }
    }

    deinit { close(fd) }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Exactly `count` bytes, after what `read(through:)` left; nil when the server closed or
    /// the read timed out first.
    func read(count: Int) -> [UInt8]? {
        while buffered.count < count {
            guard readMore() > 0 else { return nil }
        }
        defer { buffered.removeFirst(count) }
        return Array(buffered[0..<count])
    }

    /// Reads until `marker` has arrived; returns everything up to and including it.
    func read(through marker: String) -> String? {
        let needle = Array(marker.utf8)
        while true {
            if let end = Self.find(needle, in: buffered) {
                let text = String(decoding: buffered[0..<end], as: UTF8.self)
                buffered.removeFirst(end)
                return text
            }
            guard readMore() > 0 else { return nil }
        }
    }

    /// What has arrived and not been read, without waiting.
    func readWithoutWaiting() -> String {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n > 0 { buffered += chunk[0..<n] }
        defer { buffered = [] }
        return String(decoding: buffered, as: UTF8.self)
    }

    /// Reads until the server closes (or the timeout); returns what arrived.
    func readToEnd() -> String {
        while readMore() > 0 {}
        defer { buffered = [] }
        return String(decoding: buffered, as: UTF8.self)
    }

    private func readMore() -> Int {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n > 0 { buffered += chunk[0..<n] }
        return n
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return start + needle.count }
        }
        return nil
    }
}

enum TestClientError: Error { case connectFailed(Int32) }

let stoppedServers = Mutex<[HTTPServer]>([])

/// An in-process server on two loops with one SSE route, `GET /s/{user}`: the user's personal
/// channel, resumed from `Last-Event-ID`; `POST /p/{user}`, which publishes one message to it;
/// and `POST /hold`, which holds its loop (signals `held`, then waits for `release`).
private final class TestServer {
    let group: EventLoopGroup
    let node: RealtimeNode
    let server: HTTPServer
    let port: Int
    let held = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)

    init(loops: Int = 2, configure: (inout HTTPServerConfiguration) -> Void = { _ in }) throws {
        group = try EventLoopGroup(count: loops)
        node = RealtimeNode(group: group, broker: MemoryBroker(limits: MemoryBroker.Limits(historySize: 1000)),
                            presence: MemoryPresenceStore())
        var router = Router()
        router.get("/s/{user}") { context in
            let user = context.pathParameters["user"]!
            let resume: ResumePoint = context.request.headers["Last-Event-ID"].map { StreamCursor($0).map(ResumePoint.cursor) ?? .invalid } ?? .fresh
            return .eventStream(EventStreamRequest(userID: user, sessionID: "s-" + user,
                                                   channels: [ChannelName.personal(userID: user)!],
                                                   resume: resume, expiresAt: nil))
        }
        let broker = node.broker
        router.post("/p/{user}") { context in
            let channel = ChannelName.personal(userID: context.pathParameters["user"]!)!
            let receipt = try broker.publish([PublishRequest(channel: channel, event: .message, data: "{\"i\":1}")])[0]
            return .response(.json(200, "{\"delivered\":\(receipt.delivered)}"))
        }
        let (held, release) = (held, release)
        router.post("/hold") { _ in
            held.signal()
            release.wait()
            return .response(.json(200, "{}"))
        }
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configure(&configuration)
        server = HTTPServer(configuration: configuration, router: router, node: node)
        port = try server.start()
    }

    deinit {
        server.shutdown()
        // Loops hold the server `unowned(unsafe)` and may still be closing connections: a server
        // lives as long as its process, so the test's does too.
        stoppedServers.withLock { $0.append(server) }
    }

    func publish(_ user: String, count: Int, bytes: Int = 0) {
        let padding = String(repeating: "p", count: bytes)
        _ = try? node.broker.publish((1...count).map {
            PublishRequest(channel: ChannelName.personal(userID: user)!, event: .message,
                           data: "{\"i\":\($0),\"p\":\"\(padding)\"}")
        })
    }

    func connectionCounts() -> [Int] {
        let done = DispatchSemaphore(value: 0)
        let counts = Mutex<[Int]>([])
        server.connectionCounts { all in
            counts.withLock { $0 = all }
            done.signal()
        }
        done.wait()
        return counts.withLock { $0 }
    }

    func slowConsumerCuts() -> UInt64 {
        let done = DispatchSemaphore(value: 0)
        let cuts = Mutex<UInt64>(0)
        server.snapshot { snapshot in
            cuts.withLock { $0 = snapshot.slowConsumerCuts }
            done.signal()
        }
        done.wait()
        return cuts.withLock { $0 }
    }

    /// Opens a stream and returns it once `ready` has arrived.
    func openStream(_ user: String, lastEventID: String? = nil, receiveBuffer: Int32? = nil) throws -> (TestClient, String) {
        let client = try TestClient(port: port, receiveBuffer: receiveBuffer)
        client.send("GET /s/\(user) HTTP/1.1\r\nHost: x\r\n" + (lastEventID.map { "Last-Event-ID: \($0)\r\n" } ?? "") + "\r\n")
        let ready = try #require(client.read(through: "event: ready\n"))
        _ = client.read(through: "\n\n")
        return (client, ready)
    }
}

/// `(id, i)` of each `message` event in an SSE text.
private func messages(in text: String) -> [(id: String, i: Int)] {
    text.components(separatedBy: "\n\n").compactMap { block in
        let lines = block.split(separator: "\n")
        guard lines.contains("event: message"),
              let id = lines.first(where: { $0.hasPrefix("id: ") })?.dropFirst(4),
              let data = lines.first(where: { $0.hasPrefix("data: ") }),
              let range = data.range(of: "\"i\":") else { return nil }
        let digits = data[range.upperBound...].prefix { $0.isNumber }
        return (String(id), Int(digits)!)
    }
}

@Suite(.serialized) struct HTTPServerTests {
    @Test func acceptedConnectionsAreSpreadOverTheLoops() throws {
        let server = try TestServer()
        // Opened together, like a backend's keep-alive pool: one loop wakes and accepts them all.
        let clients = try (0..<4).map { _ in try TestClient(port: server.port) }
        var counts: [Int] = []
        for _ in 0..<200 {
            counts = server.connectionCounts()
            if counts.reduce(0, +) == clients.count { break }
            usleep(10_000)
        }
        #expect(counts == [2, 2])
    }

    @Test func eventsWrittenInOneTurnArriveInOrderAndResumeFromTheirIds() throws {
        let server = try TestServer()
        let (client, _) = try server.openStream("u1")
        // One publish call: one inbox task on the stream's loop, so all 50 are coalesced.
        server.publish("u1", count: 50)
        var text = ""
        while messages(in: text).count < 50 {
            text += try #require(client.read(through: "\n\n"))
        }
        let received = messages(in: text)
        #expect(received.map(\.i) == Array(1...50))
        let sequences = received.map { UInt64($0.id.split(separator: "-")[1])! }
        #expect(sequences == sequences.sorted() && Set(sequences).count == 50)
        #expect(!text.contains("event: error"))

        // Resuming from the 20th id replays exactly the 30 after it.
        let (resumed, ready) = try server.openStream("u1", lastEventID: received[19].id)
        #expect(ready.contains("id: \(received[19].id)\n"))
        var replay = ""
        while messages(in: replay).count < 30 {
            replay += try #require(resumed.read(through: "\n\n"))
        }
        #expect(messages(in: replay).map(\.i) == Array(21...50))
        #expect(messages(in: replay).map(\.id) == received[20...].map(\.id))
    }

    @Test func aReaderThatKeepsUpIsNotCutWhenMoreThanTheBoundIsWrittenInOneTurn() throws {
        // More events in one turn than the outbound bound: they were coalesced, not refused, so
        // they are sent before the bound is judged (as when each was sent at once).
        let server = try TestServer { $0.outboundMaxEvents = 10 }
        let (client, _) = try server.openStream("u2")
        server.publish("u2", count: 200)
        var text = ""
        while messages(in: text).count < 200 {
            text += try #require(client.read(through: "\n\n"))
        }
        #expect(messages(in: text).map(\.i) == Array(1...200))
        #expect(!text.contains("slow_consumer"))
        #expect(server.slowConsumerCuts() == 0)
    }

    /// A client that shuts down its sending side after `GET` (RFC 9112 §9.6) still reads: the
    /// read of 0 bytes after its request does not drop the stream's head, `ready` or later events,
    /// nor the stream across a heartbeat (one is sent at the FIN: a client that left answers it
    /// with a reset). Once the client is gone for good, the next write (the heartbeat's) draws a
    /// reset and the stream ends.
    @Test func aHalfClosedStreamClientGetsItsStreamUntilItIsGone() throws {
        let server = try TestServer { $0.heartbeatSeconds = 1 }
        var client: TestClient? = try TestClient(port: server.port)
        client!.send("GET /s/half HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(Glibc.shutdown(client!.fd, Int32(SHUT_WR)) == 0)
        let head = try #require(client!.read(through: "event: ready\n"))
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        _ = client!.read(through: "\n\n")
        server.publish("half", count: 1)
        // The heartbeat sent at the FIN (the probe that tells a client that left) may come first.
        let event = try #require(client!.read(through: "event: message\n")) + (client!.read(through: "\n\n") ?? "")
        #expect(messages(in: event).map(\.i) == [1], "\(event)")
        #expect(client!.read(through: ": heartbeat\n\n") != nil)
        #expect(server.connectionCounts().reduce(0, +) == 1)

        client = nil
        var open = 1
        // The heartbeat, 1 s, is the next write: polled, as the server's close has no event here.
        for _ in 0..<500 where open != 0 {
            open = server.connectionCounts().reduce(0, +)
            if open != 0 { usleep(10_000) }
        }
        #expect(open == 0)
    }

    /// ADR 0021: every accepted connection carries keep-alive and TCP_USER_TIMEOUT sized from the
    /// heartbeat, read back from the server's own descriptor.
    @Test func acceptedConnectionsCarryTheDeadPeerTimeout() throws {
        let server = try TestServer { $0.heartbeatSeconds = 7; $0.deadPeerHeartbeats = 4 }
        let (client, _) = try server.openStream("kept")
        let accepted = try #require(Self.acceptedDescriptor(port: server.port, peer: client.fd))
        let options = try DeadPeerTimeout.current(of: accepted)
        #expect(options == DeadPeerTimeout(heartbeatSeconds: 7, heartbeats: 4))
        #expect(options?.keepAliveIdleSeconds == 14 && options?.keepAliveIntervalSeconds == 7)
        #expect(options?.keepAliveProbes == 4 && options?.userTimeoutMilliseconds == 28_000)

        let kernelDefaults = try TestServer { $0.deadPeerHeartbeats = 0 }
        let (other, _) = try kernelDefaults.openStream("defaults")
        let plain = try #require(Self.acceptedDescriptor(port: kernelDefaults.port, peer: other.fd))
        #expect(try DeadPeerTimeout.current(of: plain) == nil)
    }

    @Test func aSocketThatIsNotTCPRefusesTheTCPOptionsNamingTheOneRefused() throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        do {
            try DeadPeerTimeout(heartbeatSeconds: 15, heartbeats: 3).apply(to: pair[0])
            Issue.record("TCP options were set on a Unix socket")
        } catch {
            #expect(error.function == "setsockopt(TCP_KEEPIDLE)" && error.errnoCode == EOPNOTSUPP, "\(error)")
        }
    }

    /// The server's descriptor of the connection whose other end is `peer` (this process holds both).
    private static func acceptedDescriptor(port serverPort: Int, peer: Int32) -> Int32? {
        func port(_ fd: Int32, peer: Bool) -> Int? {
            var address = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let rc = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length) }
            }
            guard rc == 0, address.sin_family == sa_family_t(AF_INET) else { return nil }
            return Int(UInt16(bigEndian: address.sin_port))
        }
        guard let clientPort = port(peer, peer: false) else { return nil }
        return (0..<Int32(4096)).first { fd in
            fd != peer && port(fd, peer: false) == serverPort && port(fd, peer: true) == clientPort
        }
    }

    @Test func aReaderThatStopsReadingIsStillCut() throws {
        let server = try TestServer { $0.outboundMaxEvents = 20 }
        let (stalled, _) = try server.openStream("u3", receiveBuffer: 4096)
        let (reading, _) = try server.openStream("u4")
        // Far more than the socket buffers hold, published one by one as an app backend would.
        for _ in 0..<600 { server.publish("u3", count: 1, bytes: 16 * 1024) }
        server.publish("u4", count: 5)
        var others = ""
        while messages(in: others).count < 5 {
            others += try #require(reading.read(through: "\n\n"))
        }
        #expect(messages(in: others).map(\.i) == [1, 2, 3, 4, 5])
        let tail = stalled.readToEnd()
        let got = messages(in: tail)
        #expect(got.count < 600)
        #expect(got.map(\.i) == Array(repeating: 1, count: got.count))
        #expect(tail.hasSuffix("event: error\ndata: {\"error\":\"slow_consumer\",\"message\":\"the client did not read fast enough; reconnect and resume with the last event id\"}\n\n"))
        #expect(server.slowConsumerCuts() == 1)
    }

    @Test func aPublishIsAnsweredAfterASliceOfItsFanOutAndEveryStreamGetsTheRest() throws {
        // One loop: the publisher's connection and every stream share it. The loop writes streams
        // 64 per turn end and answers once a sixth of the streams pending (at least one slice)
        // are written (issue 17): the publisher's next message then overlaps the rest of the
        // fan-out instead of waiting for all of it, and the streams not yet written carry both.
        let server = try TestServer(loops: 1) { $0.maxStreamsPerUser = 0 }
        let streams = try (0..<200).map { _ in try server.openStream("crowd").0 }
        let publisher = try TestClient(port: server.port)
        var received = Array(repeating: "", count: streams.count)
        for round in 1...3 {
            publisher.send("POST /p/crowd HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
            let answer = try #require(publisher.read(through: "\"delivered\":200}"))
            #expect(answer.hasPrefix("HTTP/1.1 200"))
            // Loopback `send` puts the bytes in the reader's buffer before it returns: the streams
            // written before the answer hold their event already, without waiting.
            for index in streams.indices { received[index] += streams[index].readWithoutWaiting() }
            let written = streams.indices.filter { Self.events(in: received[$0]) >= round }
            #expect(written.count >= LoopContext.streamFlushesPerTurn,
                    "round \(round): only \(written.count) of 200 streams had the event when the publish was answered")
        }
        // The rest follow without another publish: every stream gets all three, in order.
        for index in streams.indices {
            while Self.events(in: received[index]) < 3 || !received[index].hasSuffix("\n\n") {
                guard let more = streams[index].read(through: "\n\n") else { break }
                received[index] += more
            }
        }
        let ids = messages(in: received[0]).map(\.id)
        #expect(ids.count == 3 && Set(ids).count == 3)
        for index in streams.indices {
            #expect(messages(in: received[index]).map(\.id) == ids, "stream \(index)")
        }
    }

    /// A publisher on the next loop (it is answered once first, so the holder is accepted after
    /// it) and a holder on the other, whose `/hold` keeps that loop busy until `server.release`.
    private static func publisherWithTheOtherLoopHeld(_ server: TestServer) throws -> (publisher: TestClient, holder: TestClient) {
        let publisher = try TestClient(port: server.port)
        publisher.send("POST /p/nobody HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        _ = try #require(publisher.read(through: "\"delivered\":0}"))
        let holder = try TestClient(port: server.port)
        holder.send("POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        server.held.wait()
        return (publisher, holder)
    }

    @Test func anAnswerAlsoWaitsForTheOtherLoopsShareOfTheFanOut() throws {
        // Two loops, connections handed to them in turn as accepted: streams opened one by one,
        // then the publisher (400th, after a first answer, so accepted before the next one) with
        // the even streams, the holder (401st) with the odd ones. Held, the holder's loop writes
        // nothing; the publisher's loop writes all its 200 streams, but the answer waits until
        // the held loop has written its share too (issue 17: a closed-loop publisher is paced to
        // the slowest loop, not only to its own).
        let server = try TestServer(loops: 2) { $0.maxStreamsPerUser = 0 }
        let streams = try (0..<400).map { _ in try server.openStream("crowd").0 }
        let (publisher, holder) = try Self.publisherWithTheOtherLoopHeld(server)
        defer { server.release.signal() }

        publisher.send("POST /p/crowd HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        // The last of the publisher loop's streams gets its event in that loop's last slice, three
        // slices after its own share (64): without the wait the answer would have gone already.
        var last = ""
        while Self.events(in: last) < 1 {
            last += try #require(streams[398].read(through: "\n\n"))
        }
        #expect(publisher.readWithoutWaiting() == "", "answered before the held loop wrote its share")

        server.release.signal()
        let answer = try #require(publisher.read(through: "\"delivered\":400}"))
        #expect(answer.contains("HTTP/1.1 200"))
        let written = stride(from: 1, to: streams.count, by: 2).filter { Self.events(in: streams[$0].readWithoutWaiting()) >= 1 }
        #expect(written.count >= LoopContext.streamFlushesPerTurn,
                "only \(written.count) of the held loop's 200 streams had the event when the publish was answered")
        _ = holder.read(through: "{}")
    }

    @Test func aLoopThatStaysHeldDelaysTheAnswerOnlyUntilTheGateTimesOut() throws {
        // As above, but the holder's loop stays held: the answer comes anyway, after
        // `LoopContext.gateTimeoutNanoseconds`, while that loop has still written nothing (a
        // wedged or starved loop must not hold every publisher).
        let server = try TestServer(loops: 2) { $0.maxStreamsPerUser = 0 }
        let streams = try (0..<4).map { _ in try server.openStream("pair").0 }
        let (publisher, holder) = try Self.publisherWithTheOtherLoopHeld(server)
        defer { server.release.signal(); withExtendedLifetime(holder) {} }

        publisher.send("POST /p/pair HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        let answer = try #require(publisher.read(through: "\"delivered\":4}"))
        #expect(answer.contains("HTTP/1.1 200"))
        #expect(Self.events(in: streams[1].readWithoutWaiting() + streams[3].readWithoutWaiting()) == 0)
        server.release.signal()
        for index in [0, 1, 2, 3] {
            var text = ""
            while Self.events(in: text) < 1 {
                text += try #require(streams[index].read(through: "\n\n"))
            }
        }
    }

    private static func events(in text: String) -> Int {
        text.components(separatedBy: "event: message").count - 1
    }
}
