import Foundation
import HeraldCore
import LoopbackSockets
import PushTestSupport
import Synchronization
import Testing

@testable import PushHTTP

/// What only the native client does (the shared scenarios in HTTP2ClientTests run on it too).
@Suite(.enabled(if: HTTP2ClientTestServer.available,
                "needs python3 with hypercorn, h2 and trustme (pip install hypercorn h2 trustme)"))
struct NativeHTTP2ClientTests {
    static func client(_ server: HTTP2ClientTestServer?, _ edit: (inout HTTP2Client.Configuration) -> Void = { _ in })
        throws -> NativeHTTP2Client {
        var c = HTTP2Client.Configuration()
        c.caFile = server?.caFile
        edit(&c)
        return try NativeHTTP2Client(configuration: c)
    }

    /// The server allows 2 streams per connection and we allow one connection: 20 requests queue in the
    /// client and all succeed (the server would refuse a third concurrent stream).
    @Test func serverStreamLimitIsHonouredByQueueing() throws {
        let server = try HTTP2ClientTestServer(maxStreams: 2)
        defer { server.stop() }
        let client = try Self.client(server) { $0.maxHostConnections = 1 }
        defer { client.shutdown() }
        let completions = HTTP2ClientCompletions()
        for n in 0..<20 {
            client.sendReportingInfo(PushHTTPRequest(url: server.url("/echo"), headers: [], body: Array("b\(n)".utf8)),
                                     completion: completions.record(n))
        }
        let results = completions.wait(for: 20, timeout: 30)
        #expect(results.count == 20)
        #expect(results.values.allSatisfy { (try? $0.result.get().status) == 200 }, "\(results.values.map(\.result))")
        #expect(client.connectionsOpened == 1)
    }

    /// A request that waits for a stream is put on one only while its `PushAudienceChange` still
    /// counts what its push's device was read at (`sendWhileAudience`): a write that can take a
    /// device out of pushes counted meanwhile (a delete answered) gives it back unsent,
    /// `.audienceChanged`, for the worker to read the device again (audience12). One without the
    /// condition, queued behind it, goes as before, and so does one watched by another counter.
    @Test func aRequestWaitingForAStreamIsGivenBackUnsentWhenTheAudienceChanged() throws {
        let server = try HTTP2ClientTestServer(maxStreams: 1)
        defer { server.stop() }
        let client = try Self.client(server) { $0.maxHostConnections = 1 }
        defer { client.shutdown() }
        // Another client's connection controls the server: this one's only stream is held.
        let control = try Self.client(server)
        defer { control.shutdown() }
        _ = client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: []))   // learn the limit
        let held = HTTP2ClientCompletions()
        client.sendReportingInfo(PushHTTPRequest(url: server.url("/hang"), headers: [], body: []), completion: held.record(0))
        let gate = try #require(control.sendAndWait(PushHTTPRequest(url: server.url("/wait-hanging?n=1"), headers: [], body: [])))
        #expect((try? gate.result.get().status) == 200)
        var watched = PushHTTPRequest(url: server.url("/echo"), headers: [], body: [1])
        let audience = PushAudienceChange()
        watched.sendWhileAudience = audience.mark()
        let waiting = HTTP2ClientCompletions()
        client.sendReportingInfo(watched, completion: waiting.record(0))
        client.sendReportingInfo(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [2]), completion: waiting.record(1))
        // Watched by another storage's counter, which nothing moves (audience14: one per storage).
        var elsewhere = PushHTTPRequest(url: server.url("/echo"), headers: [], body: [3])
        elsewhere.sendWhileAudience = PushAudienceChange().mark()
        client.sendReportingInfo(elsewhere, completion: waiting.record(2))
        audience.count()
        _ = control.sendAndWait(PushHTTPRequest(url: server.url("/release-hanging"), headers: [], body: []))
        let results = waiting.wait(for: 3, timeout: 10)
        #expect(results[0]?.result.failureValue == .audienceChanged)
        #expect(results[0]?.result.failureValue?.mayHaveReachedProvider == false && PushTransportError.audienceChanged.waitedPastAudienceChange)
        #expect((try? results[1]?.result.get().status) == 200, "no condition: sent as before")
        #expect((try? results[2]?.result.get().status) == 200, "another counter's count unchanged: sent")
        #expect(held.wait(for: 1, timeout: 10)[0].map { (try? $0.result.get().status) == 200 } == true)
    }

    /// With the server's limit (5) full of hanging streams, a sixth request opens a second connection
    /// (up to `maxHostConnections`) instead of waiting behind them.
    @Test func fullConnectionOpensAnotherUpToTheLimit() throws {
        let server = try HTTP2ClientTestServer(maxStreams: 5)
        defer { server.stop() }
        let client = try Self.client(server) { $0.maxHostConnections = 2 }
        defer { client.shutdown() }
        _ = client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: []))   // learn the limit
        let hanging = HTTP2ClientCompletions()
        for n in 0..<5 {
            client.sendReportingInfo(PushHTTPRequest(url: server.url("/hang"), headers: [], body: []), completion: hanging.record(n))
        }
        let gate = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/wait-hanging?n=5"), headers: [], body: [])))
        #expect((try? gate.result.get().status) == 200)
        #expect(gate.info.newConnections == 1)
        #expect(client.connectionsOpened == 2)
        client.shutdown()
        #expect(hanging.snapshot.values.allSatisfy { if case .failure(.shutdown) = $0.result { true } else { false } })
    }

    /// A connection an answer condemned (APNs `Shutdown`, ADR 0018) is retired as after the server's
    /// GOAWAY: the stream in flight on it still gets its answer there, the next request opens a new
    /// connection, and later ones stay on that one.
    @Test func aRetiredConnectionFinishesItsStreamsAndTheNextRequestOpensAnother() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try Self.client(server)
        defer { client.shutdown() }
        let held = HTTP2ClientCompletions()
        client.sendReportingInfo(PushHTTPRequest(url: server.url("/hang"), headers: [], body: []), completion: held.record(0))
        // Answered once the server holds the first: both went on the one connection.
        let gate = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/wait-hanging?n=1"), headers: [], body: [])))
        let first = try #require(try gate.result.get().connection)
        #expect(client.connectionsOpened == 1)

        client.retireConnection(first)
        let release = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/release-hanging"), headers: [], body: [])))
        let second = try #require(try release.result.get().connection)
        #expect(second != first)
        #expect(release.info.newConnections == 1)
        #expect(client.connectionsOpened == 2)

        let finished = try #require(held.wait(for: 1, timeout: 20)[0])
        let answer = try finished.result.get()
        #expect(answer.status == 200 && answer.connection == first, "the stream in flight finished on the retired connection")

        let later = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        #expect(try later.result.get().connection == second)
        #expect(later.info.newConnections == 0 && client.connectionsOpened == 2)
        client.retireConnection(first)   // closed by now, or closing: nothing happens
        client.retireConnection(PushConnectionID(999))
        let last = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        #expect(try last.result.get().connection == second)
    }

    /// Names go out lower-cased (RFC 9113 §8.2.1), and a caller's user-agent replaces the configured one.
    @Test func headerNamesAreLowerCasedAndUserAgentIsNotDoubled() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try Self.client(server)
        defer { client.shutdown() }
        let item = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"),
                                                                   headers: [("APNs-Topic", "t"), ("User-Agent", "mine/2")], body: [])))
        let response = try item.result.get()
        struct Echo: Decodable { let headers: [[String]] }
        let echo = try JSONDecoder().decode(Echo.self, from: Data(response.body))
        #expect(echo.headers.contains(["apns-topic", "t"]))
        #expect(echo.headers.filter { $0[0] == "user-agent" } == [["user-agent", "mine/2"]])
    }

    /// Values go out byte for byte (a long bearer, a tab), and `apns-id`, sent as an HPACK
    /// literal never indexed, arrives intact on every request of one connection.
    @Test func headerValuesArriveByteForByte() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try Self.client(server)
        defer { client.shutdown() }
        let bearer = "bearer " + String(repeating: "eyJhbGciOiJFUzI1NiJ9.", count: 30)
        for i in 0..<3 {
            let id = "8D6A9E2B-0C4F-4F7E-9B1A-00000000000\(i)"
            let item = try #require(client.sendAndWait(PushHTTPRequest(
                url: server.url("/echo"), headers: [("authorization", bearer), ("apns-id", id), ("x-text", "green\tblue")], body: [])))
            struct Echo: Decodable { let headers: [[String]] }
            let echo = try JSONDecoder().decode(Echo.self, from: Data(try item.result.get().body))
            #expect(echo.headers.contains(["apns-id", id]))
            #expect(echo.headers.contains(["authorization", bearer]))
            #expect(echo.headers.contains(["x-text", "green\tblue"]))
        }
        #expect(client.connectionsOpened == 1)
    }

    /// A server that completes TLS with ALPN h2 but never sends its SETTINGS (`openssl s_server`):
    /// the connect timeout covers that wait, and the request fails with `.timeout`, not a hang.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
    func serverThatNeverSendsSettingsTimesOut() throws {
        let certificates = try HTTP2ClientTestServer()   // for its CA and leaf certificate
        defer { certificates.stop() }
        let port = http2ClientClosedPort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-alpn", "h2", "-naccept", "1",
                             "-cert", certificates.directory.appendingPathComponent("cert.pem").path,
                             "-key", certificates.directory.appendingPathComponent("key.pem").path]
        let input = Pipe(), output = Pipe()
        process.standardInput = input          // kept open: s_server would end the session at stdin EOF
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            // SIGKILL, not terminate()'s SIGTERM: a child spawned from a dispatch worker thread
            // inherits its mask, which blocks SIGTERM, and s_server never unblocks it (the test
            // once waited 4 minutes here).
            Glibc.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            try? input.fileHandleForWriting.close()
        }
        // s_server prints ACCEPT once it listens.
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("ACCEPT") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { Issue.record("openssl s_server did not start"); return }
            seen.append(chunk)
        }
        let client = try Self.client(certificates) { $0.connectTimeoutMs = 800 }
        defer { client.shutdown() }
        let start = ContinuousClock.now
        let item = try #require(client.sendAndWait(PushHTTPRequest(url: "https://127.0.0.1:\(port)/x", headers: [], body: []), timeout: 10))
        let elapsed = ContinuousClock.now - start
        guard case .failure(.timeout) = item.result else { Issue.record("expected .timeout, got \(item.result)"); return }
        #expect(elapsed >= .milliseconds(700) && elapsed < .seconds(5), "elapsed \(elapsed)")
    }

    /// An idle connection older than `maxIdleConnectionSeconds` is closed (GOAWAY), so the next request
    /// opens a new one. The driver's clock is moved by hand: the request that wakes it finds the
    /// connection past its age before it is dispatched.
    @Test func idleConnectionIsClosedAfterItsMaxAge() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let clock = Atomic<UInt64>(1_000_000_000_000)
        var configuration = HTTP2Client.Configuration()
        configuration.caFile = server.caFile
        configuration.maxIdleConnectionSeconds = 1
        let client = try NativeHTTP2Client(configuration: configuration,
                                           monotonicNanoseconds: { clock.load(ordering: .relaxed) })
        defer { client.shutdown() }
        let first = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        #expect((try? first.result.get().status) == 200)
        let again = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        #expect(again.info.newConnections == 0)
        clock.add(2_000_000_000, ordering: .relaxed)
        let later = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        #expect((try? later.result.get().status) == 200)
        #expect(later.info.newConnections == 1)
        #expect(client.connectionsOpened == 2)
    }

    /// A push's send-by deadline caps its time on the wire: a stream hanging at the deadline times
    /// out then (not 30 s after it got its stream), and a stream without one keeps its own timeout
    /// (the deadline list stays in deadline order when a later stream ends sooner). The driver's
    /// clock is moved by hand; a request already past its deadline wakes the driver.
    @Test func aStreamTimesOutAtItsSendByDeadline() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let clock = Atomic<UInt64>(1_000_000_000_000)
        var configuration = HTTP2Client.Configuration()
        configuration.caFile = server.caFile
        configuration.requestTimeoutMs = 30_000
        let client = try NativeHTTP2Client(configuration: configuration, monotonicNanoseconds: { clock.load(ordering: .relaxed) })
        defer { client.shutdown() }
        let hanging = HTTP2ClientCompletions()
        client.sendReportingInfo(PushHTTPRequest(url: server.url("/hang"), headers: [], body: []), completion: hanging.record(0))
        client.sendReportingInfo(PushHTTPRequest(url: server.url("/hang"), headers: [], body: [], sendWithinMilliseconds: 5_000),
                                 completion: hanging.record(1))
        let gate = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/wait-hanging?n=2"), headers: [], body: [])))
        #expect((try? gate.result.get().status) == 200, "both requests are on the wire")
        clock.add(6_000_000_000, ordering: .relaxed)
        let wake = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [], sendWithinMilliseconds: 0)))
        #expect(wake.result.failureValue == .sendByPassed)
        let first = hanging.wait(for: 1, timeout: 10)
        #expect(first[1]?.result.failureValue == .timeout, "on the wire at its deadline: timed out, may have reached the server")
        #expect(first[0] == nil, "no deadline: still waiting for its answer")
        clock.add(25_000_000_000, ordering: .relaxed)
        _ = client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [], sendWithinMilliseconds: 0))
        #expect(hanging.wait(for: 2, timeout: 10)[0]?.result.failureValue == .timeout, "30 s after it got its stream")
        #expect(client.connectionsOpened == 1, "a timed-out stream keeps its connection")
    }

    /// A host lookup runs off the driver thread: while one origin's DNS answer is slow (a resolver
    /// that waits to be released here), another origin's requests are sent and answered. The slow
    /// lookup's failure then fails its request as a connect error naming the host (transient).
    @Test func aSlowHostLookupDoesNotHoldOtherOriginsSends() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        var configuration = HTTP2Client.Configuration()
        configuration.caFile = server.caFile
        let client = try NativeHTTP2Client(configuration: configuration, monotonicNanoseconds: h2MonotonicNanoseconds) { host, port in
            guard host == "slow.invalid" else { return h2SystemResolver(host, port) }
            entered.signal()
            release.wait()
            return .failure(H2LookupError(reason: "Name or service not known"))
        }
        defer { client.shutdown() }
        defer { release.signal() }   // first: a driver held by the lookup would never shut down
        let slow = HTTP2ClientCompletions()
        client.sendReportingInfo(PushHTTPRequest(url: server.url("/echo", host: "slow.invalid"), headers: [], body: []), completion: slow.record(0))
        #expect(entered.wait(timeout: .now() + 10) == .success, "the slow lookup started")
        let fast = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: []), timeout: 10),
                                "answered while the other origin's lookup still waits")
        #expect((try? fast.result.get().status) == 200)
        #expect(slow.snapshot.isEmpty, "the slow origin's request waits for its lookup")
        release.signal()
        let failed = try #require(slow.wait(for: 1, timeout: 10)[0])
        guard case .failure(.connect(let message)) = failed.result else { Issue.record("expected .connect, got \(failed.result)"); return }
        #expect(message.contains("Could not resolve host: slow.invalid"))
        #expect(PushTransportError.connect(message).isTransient)
    }

    /// The three ways into the client (the transport's untyped error, `send`'s typed one, and
    /// `sendReportingInfo`) each get their own closure called once with the answer: the request
    /// was built on the caller's thread and went out intact, body included.
    @Test func everyEntryPointGetsItsAnswer() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try Self.client(server)
        defer { client.shutdown() }
        struct Echo: Decodable { let headers: [[String]]; let body_b64: String }
        let request = PushHTTPRequest(url: server.url("/echo"), headers: [("apns-topic", "t")], body: Array("{\"a\":1}".utf8))
        let done = HTTP2ClientCompletions()
        HTTP2PushTransport(client: client).send(request) { result in
            done.record(0)(result.mapError { $0 as? PushTransportError ?? .other(code: -99, message: "\($0)") },
                           PushTransferInfo(httpVersion: "", newConnections: 0, elapsed: .zero))
        }
        client.send(request) { result in done.record(1)(result, PushTransferInfo(httpVersion: "", newConnections: 0, elapsed: .zero)) }
        client.sendReportingInfo(request, completion: done.record(2))
        let items = done.wait(for: 3, timeout: 20)
        #expect(items.count == 3)
        for (index, item) in items {
            let echo = try JSONDecoder().decode(Echo.self, from: Data(try item.result.get().body))
            #expect(echo.headers.contains(["apns-topic", "t"]), "entry \(index)")
            #expect(echo.headers.contains(["content-length", "7"]), "entry \(index)")
            #expect(Data(base64Encoded: echo.body_b64) == Data("{\"a\":1}".utf8), "entry \(index)")
        }
        #expect(items[2]?.info.httpVersion == "2")
        #expect(client.requestsCompleted == 3)
    }

    @Test func serverWithoutHTTP2IsRefusedAsTLS() throws {
        let server = try HTTP2ClientTestServer(http1Only: true)
        defer { server.stop() }
        let client = try Self.client(server)
        defer { client.shutdown() }
        let item = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        guard case .failure(.tls(let message)) = item.result else { Issue.record("expected .tls, got \(item.result)"); return }
        #expect(message.contains("h2"))
        #expect(!PushTransportError.tls(message).isTransient)
    }
}

/// Native-client checks that need no server.
@Suite struct NativeHTTP2ClientOfflineTests {
    @Test(arguments: [
        ("http://127.0.0.1:1/x", [(String, String)]()),
        ("ftp://example.com/x", []),
        ("https://example.com", []),
        ("https://example.com:99999/x", []),
        ("https://user@example.com/x", []),
        ("https://127.0.0.1:1/x", [("accept-encoding", "gzip")]),
        ("https://127.0.0.1:1/x", [("Accept-Encoding", "gzip")]),
        ("https://127.0.0.1:1/x", [("bad name", "v")]),
        ("https://127.0.0.1:1/x", [("x", "a\0b")]),
        ("https://127.0.0.1:1/x", [("x", "a\rb")]),
        ("https://127.0.0.1:1/x", [("x", "ab\n")]),
        ("https://127.0.0.1:1/x", [("", "v")]),
        ("https://127.0.0.1:1/x", [("a:b", "v")]),
        ("https://127.0.0.1:1/x", [("n\u{e9}", "v")]),
        ("https://127.0.0.1:1/x", [("ok", "v"), ("x\u{7f}", "v")]),
        ("https://127.0.0.1:1/x", [("abcdefgh:ij", "v")]),
        ("https://127.0.0.1:1/x", [("abcdefgh ", "v")]),
        ("https://127.0.0.1:1/x", [("apns-expiration\u{01}", "v")]),
    ])
    func unsupportedRequestsFailBeforeAnyConnection(url: String, headers: [(String, String)]) throws {
        let client = try NativeHTTP2Client()
        defer { client.shutdown() }
        let item = try #require(client.sendAndWait(PushHTTPRequest(url: url, headers: headers, body: [])))
        guard case .failure(.other) = item.result else { Issue.record("expected .other, got \(item.result)"); return }
        #expect(client.connectionsOpened == 0)
    }

    /// Names of every length are lower-cased whole, and nothing is written past them.
    @Test func namesOfEveryLengthAreLowerCased() {
        let name = "ABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789"
        for length in 1...name.utf8.count {
            let prefix = String(name.prefix(length))
            var out = [UInt8](repeating: 0, count: length + 1)
            let count = out.withUnsafeMutableBufferPointer { H2RequestBlock.copyName(prefix, to: $0.baseAddress!) }
            #expect(count == length)
            #expect(Array(out[..<length]) == Array(prefix.lowercased().utf8))
            #expect(out[length] == 0, "nothing written past the name")
        }
    }

    /// Every byte value, anywhere in a name, is judged as RFC 9110's token rule says (issue 17:
    /// the copy judges all bytes, then refuses).
    @Test func everyByteOfANameIsJudged() {
        for byte in 0...255 {
            let b = UInt8(byte)
            let allowed = b > 0x20 && b < 0x7F && b != UInt8(ascii: ":")
            for position in 0..<3 {
                var name: [UInt8] = Array("abc".utf8)
                name[position] = b
                var out = [UInt8](repeating: 0, count: 4)
                let count = name.withUnsafeBufferPointer { n in out.withUnsafeMutableBufferPointer { H2RequestBlock.copyName(n, to: $0.baseAddress!) } }
                #expect(count == (allowed ? 3 : nil), "byte \(byte) at \(position)")
            }
        }
    }

    /// A request still waiting for a stream at its send-by deadline is dropped unsent while the
    /// connection it waits for is still being set up (a listener that never answers TLS): as
    /// `.connect` (the host did not answer, ADR 0015; `.sendByPassed` is for a ready connection's
    /// backlog); one without a deadline keeps waiting, and one past its deadline when handed over
    /// fails at once (`.sendByPassed`). The driver's clock is moved by hand.
    @Test func aWaitingRequestIsDroppedUnsentAtItsSendByDeadline() throws {
        let listener = try #require(SilentListener())
        defer { listener.close() }
        let clock = Atomic<UInt64>(1_000_000_000_000)
        var configuration = HTTP2Client.Configuration()
        configuration.connectTimeoutMs = 60_000
        configuration.maxHostConnections = 1
        let client = try NativeHTTP2Client(configuration: configuration, monotonicNanoseconds: { clock.load(ordering: .relaxed) })
        defer { client.shutdown() }
        let url = "https://127.0.0.1:\(listener.port)/3/device/x"
        let waiting = HTTP2ClientCompletions()
        client.sendReportingInfo(PushHTTPRequest(url: url, headers: [], body: [1], sendWithinMilliseconds: 5_000),
                                 completion: waiting.record(0))
        client.sendReportingInfo(PushHTTPRequest(url: url, headers: [], body: [2]), completion: waiting.record(1))
        // The connection is opened for them once both are queued (the driver takes its inbox whole
        // or in order): from then on they wait in the origin's queue.
        let opened = ContinuousClock.now + .seconds(10)
        while client.connectionsOpened == 0 && ContinuousClock.now < opened { usleep(1_000) }
        #expect(client.connectionsOpened == 1)
        #expect(waiting.snapshot.isEmpty)
        clock.add(4_999_000_000, ordering: .relaxed)
        let early = try #require(client.sendAndWait(PushHTTPRequest(url: url, headers: [], body: [], sendWithinMilliseconds: 0)))
        #expect(early.result.failureValue == .sendByPassed, "past its deadline when handed over: never queued")
        #expect(waiting.snapshot.isEmpty, "1 ms before its deadline it still waits")
        clock.add(1_000_000, ordering: .relaxed)
        _ = client.sendAndWait(PushHTTPRequest(url: url, headers: [], body: [], sendWithinMilliseconds: 0))
        let dropped = waiting.wait(for: 1, timeout: 10)
        #expect(dropped[0]?.result.failureValue == .connect("no connection to 127.0.0.1 port \(listener.port) was ready by the send-by deadline (TCP, TLS or the server's SETTINGS pending)"))
        #expect(dropped[0]?.result.failureValue?.mayHaveReachedProvider == false, "never sent: retried without counting the attempt")
        #expect(dropped[0]?.info.httpVersion == "")
        #expect(dropped[1] == nil, "without a deadline it keeps waiting")
        #expect(PushTransportError.sendByPassed.isTransient && !PushTransportError.sendByPassed.mayHaveReachedProvider)
        #expect(PushTransportError.sendByPassed.missedSendBy && !PushTransportError.timeout.missedSendBy)
        client.shutdown()
        #expect(waiting.wait(for: 2, timeout: 10)[1]?.result.failureValue == .shutdown)
        #expect(client.connectionsOpened == 1, "the dropped request opened nothing of its own")
    }

    @Test func unknownHostIsAConnectError() throws {
        let client = try NativeHTTP2Client()
        defer { client.shutdown() }
        let item = try #require(client.sendAndWait(PushHTTPRequest(url: "https://nowhere.invalid/x", headers: [], body: [])))
        guard case .failure(.connect(let message)) = item.result else { Issue.record("expected .connect, got \(item.result)"); return }
        #expect(message.contains("nowhere.invalid"))
    }

    @Test func missingCAFileFailsAtStart() {
        var c = HTTP2Client.Configuration()
        c.caFile = "/nonexistent/ca.pem"
        #expect(throws: PushTransportError.self) { try NativeHTTP2Client(configuration: c) }
    }

    @Test func sendAfterShutdownCompletesAtOnce() throws {
        let client = try NativeHTTP2Client()
        client.shutdown()
        let item = try #require(client.sendAndWait(PushHTTPRequest(url: "https://127.0.0.1:1/x", headers: [], body: []), timeout: 1))
        guard case .failure(.shutdown) = item.result else { Issue.record("expected .shutdown, got \(item.result)"); return }
        client.shutdown()
    }
}

/// A TCP listener on 127.0.0.1 that accepts connections (the kernel's backlog) and never answers:
/// a TLS handshake with it never ends.
final class SilentListener: Sendable {
    let fd: Int32
    let port: Int

    init?() {
        guard let (fd, port) = LoopbackSocket.open(listening: 16) else { return nil }
        self.fd = fd
        self.port = port
    }

    func close() { Glibc.close(fd) }
}
