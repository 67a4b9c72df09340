import CCurl
import Foundation
import HeraldCore
import PushTestSupport
import Synchronization
import Testing

@testable import PushHTTP

/// End-to-end tests of both HTTP/2 push clients (libcurl `HTTP2Client`, libnghttp2 `NativeHTTP2Client`)
/// against a local hypercorn HTTP/2-over-TLS server: every scenario runs on each.
@Suite(.enabled(if: HTTP2ClientTestServer.available,
                "needs python3 with hypercorn, h2 and trustme (pip install hypercorn h2 trustme)"))
struct HTTP2ClientTests {
    static func config(_ server: HTTP2ClientTestServer?, _ edit: (inout HTTP2Client.Configuration) -> Void = { _ in })
        -> HTTP2Client.Configuration {
        var c = HTTP2Client.Configuration()
        c.caFile = server?.caFile
        edit(&c)
        return c
    }

    struct Echo: Decodable {
        let method: String
        let path: String
        let http_version: String
        let headers: [[String]]
        let body_b64: String
    }

    @Test(arguments: H2ClientKind.allCases) func roundTripHeadersAndBodyOverHTTP2(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try kind.make(Self.config(server) { $0.userAgent = "herald-test/1" })
        defer { client.shutdown() }

        let body = (0..<300).map { UInt8($0 % 256) }          // binary, includes NUL bytes
        let headers: [(String, String)] = [
            ("authorization", "bearer eyJ.abc.def"),
            ("apns-topic", "com.example.app"),
            ("apns-push-type", "alert"),
            ("apns-priority", "10"),
            ("content-type", "application/json"),
            ("x-empty", ""),
        ]
        let item = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo", host: "localhost"),
                                                                   headers: headers, body: body)))
        let response = try item.result.get()
        #expect(response.status == 200)
        #expect(item.info.httpVersion == "2")
        #expect(response.header("APNS-ID") == "abc-123")
        #expect(response.header("content-type") == "application/json")
        #expect(response.headers.filter { $0.0 == "x-multi" }.map(\.1) == ["one", "two"])

        let echo = try JSONDecoder().decode(Echo.self, from: Data(response.body))
        #expect(echo.method == "POST")
        #expect(echo.path == "/echo")
        #expect(echo.http_version == "2")            // the server saw HTTP/2 too (ALPN h2)
        #expect(Array(Data(base64Encoded: echo.body_b64)!) == body)
        let received = echo.headers.map { ($0[0], $0[1]) }
        let expectedExtra: [(String, String)] = [("host", "localhost:\(server.port)"), ("user-agent", "herald-test/1"),
                                                 ("content-length", "300")]
        // Exactly our headers (lower-cased by HTTP/2) plus host/user-agent/content-length: no Accept,
        // no default Content-Type, no Expect.
        #expect(received.filter { n, _ in !["host", "user-agent", "content-length"].contains(n) }.map { "\($0.0)=\($0.1)" }
                == headers.map { "\($0.0)=\($0.1)" })
        for (n, v) in expectedExtra { #expect(received.contains { $0 == (n, v) }, "missing \(n): \(v)") }
        #expect(client.connectionsOpened == 1)
    }

    @Test(arguments: H2ClientKind.allCases) func asyncVariantAndEmptyBody(kind: H2ClientKind) async throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try kind.make(Self.config(server))
        defer { client.shutdown() }
        let response = try await client.send(PushHTTPRequest(url: server.url("/echo"), headers: [], body: []))
        #expect(response.status == 200)
        let echo = try JSONDecoder().decode(Echo.self, from: Data(response.body))
        #expect(echo.body_b64 == "")
        #expect(!echo.headers.contains { $0[0] == "content-type" || $0[0] == "accept" })
    }

    @Test(arguments: H2ClientKind.allCases) func clientErrorStatusIsAResponseNotAnError(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try kind.make(Self.config(server))
        defer { client.shutdown() }
        let item = try #require(client.sendAndWait(
            PushHTTPRequest(url: server.url("/status/400?reason=BadDeviceToken"), headers: [], body: Array("{}".utf8))))
        let response = try item.result.get()
        #expect(response.status == 400)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"reason": "BadDeviceToken"}"#)
        #expect(response.header("Content-Type") == "application/json")
    }

    @Test(arguments: H2ClientKind.allCases) func hundredConcurrentRequestsFromSeveralThreadsShareAtMostTwoConnections(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try kind.make(Self.config(server))
        defer { client.shutdown() }
        let completions = HTTP2ClientCompletions()
        let threads = 4, perThread = 25
        for t in 0..<threads {
            Thread.detachNewThread {
                for i in 0..<perThread {
                    let n = t * perThread + i
                    client.sendReportingInfo(PushHTTPRequest(url: server.url("/echo"), headers: [("x-n", "\(n)")],
                                                             body: Array("body-\(n)".utf8)),
                                             completion: completions.record(n))
                }
            }
        }
        let results = completions.wait(for: threads * perThread, timeout: 30)
        #expect(results.count == 100)
        for (n, item) in results {
            guard case .success(let response) = item.result else {
                Issue.record("request \(n) failed: \(item.result)"); continue
            }
            #expect(response.status == 200)
            #expect(item.info.httpVersion == "2")
            let echo = try JSONDecoder().decode(Echo.self, from: Data(response.body))
            #expect(Data(base64Encoded: echo.body_b64) == Data("body-\(n)".utf8))
            #expect(echo.headers.contains { $0 == ["x-n", "\(n)"] })
        }
        #expect(client.connectionsOpened >= 1 && client.connectionsOpened <= 2,
                "connections opened: \(client.connectionsOpened)")
        #expect(client.requestsCompleted == 100)
    }

    @Test(arguments: H2ClientKind.allCases) func serverThatNeverAnswersTimesOut(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try kind.make(Self.config(server) { $0.requestTimeoutMs = 800 })
        defer { client.shutdown() }
        // Warm the connection so the timeout covers only the unanswered stream.
        _ = client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: []))
        let start = ContinuousClock.now
        let item = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/hang"), headers: [], body: []), timeout: 10))
        let elapsed = ContinuousClock.now - start
        #expect(item.result.failureValue == .timeout)
        #expect(elapsed >= .milliseconds(700) && elapsed < .seconds(3), "elapsed \(elapsed)")
        // The connection survives a timed-out stream.
        let after = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        #expect(after.result.successValue?.status == 200)
    }

    @Test(arguments: H2ClientKind.allCases) func responseBodyOverTheCapIsAnError(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try kind.make(Self.config(server))
        defer { client.shutdown() }
        let big = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/big?n=100000"), headers: [], body: [])))
        #expect(big.result.failureValue == .responseTooLarge)
        let exact = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/big?n=65536"), headers: [], body: [])))
        #expect(exact.result.successValue?.body.count == 65536)
    }

    @Test(arguments: H2ClientKind.allCases) func serverKilledMidFlightFailsRequestsWithoutHanging(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try kind.make(Self.config(server))
        defer { client.shutdown() }
        let completions = HTTP2ClientCompletions()
        for i in 0..<5 {
            client.sendReportingInfo(PushHTTPRequest(url: server.url("/hang"), headers: [], body: []),
                                     completion: completions.record(i))
        }
        // Returns once the server holds all five streams.
        let gate = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/wait-hanging?n=5"), headers: [], body: [])))
        #expect(gate.result.successValue?.status == 200)
        server.kill()
        let results = completions.wait(for: 5, timeout: 15)
        #expect(results.count == 5)
        for (_, item) in results {
            switch item.result {
            case .failure(let e):
                #expect(e != .shutdown && e != .timeout, "unexpected \(e)")
                #expect(e.isTransient, "\(e)")
            case .success(let r): Issue.record("unexpected response \(r.status)")
            }
        }
        // A new request to the dead server fails to connect.
        let after = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        guard case .failure(.connect) = after.result else { Issue.record("expected .connect, got \(after.result)"); return }
    }

    @Test(arguments: H2ClientKind.allCases) func goawayBetweenRequestsMovesToANewConnection(kind: H2ClientKind) throws {
        // Raw h2 server: answers 5 requests per connection, then GOAWAY(last answered stream) and close.
        let server = try HTTP2ClientTestServer(goawayAfter: 5)
        defer { server.stop() }
        let client = try kind.make(Self.config(server) { $0.requestTimeoutMs = 5_000 })
        defer { client.shutdown() }
        var statuses: [String] = []
        for _ in 0..<25 {
            let item = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/3/device/abc"), headers: [], body: [])))
            statuses.append(item.result.successValue.map { "\($0.status)" } ?? "\(item.result)")
        }
        #expect(statuses == Array(repeating: "200", count: 25))
        #expect(client.connectionsOpened == 5)
    }

    @Test(arguments: H2ClientKind.allCases) func goawayWithStreamsInFlightFailsThemTransientlyWithoutHanging(kind: H2ClientKind) throws {
        // 50 concurrent streams; each connection answers 10, then GOAWAY refuses the rest. libcurl retries
        // refused streams on a new connection (up to 5 times); whatever still fails must be transient.
        let server = try HTTP2ClientTestServer(goawayAfter: 10)
        defer { server.stop() }
        let client = try kind.make(Self.config(server) { $0.requestTimeoutMs = 10_000 })
        defer { client.shutdown() }
        let completions = HTTP2ClientCompletions()
        let start = ContinuousClock.now
        for i in 0..<50 {
            client.sendReportingInfo(PushHTTPRequest(url: server.url("/3/device/abc"), headers: [], body: Array("{}".utf8)),
                                     completion: completions.record(i))
        }
        let results = completions.wait(for: 50, timeout: 30)
        #expect(results.count == 50)
        #expect(ContinuousClock.now - start < .seconds(8), "GOAWAY must not leave streams waiting for the timeout")
        let ok = results.values.filter { $0.result.successValue?.status == 200 }.count
        for item in results.values {
            if case .failure(let e) = item.result { #expect(e.isTransient && e != .timeout, "\(e)") }
        }
        #expect(ok >= 25, "only \(ok)/50 succeeded")
        #expect(client.connectionsOpened >= 5)
    }

    @Test(arguments: H2ClientKind.allCases) func shutdownCompletesInFlightRequestsWithShutdown(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try kind.make(Self.config(server))
        let completions = HTTP2ClientCompletions()
        for i in 0..<5 {
            client.sendReportingInfo(PushHTTPRequest(url: server.url("/hang"), headers: [], body: []),
                                     completion: completions.record(i))
        }
        let gate = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/wait-hanging?n=5"), headers: [], body: [])))
        #expect(gate.result.successValue?.status == 200)
        client.shutdown()
        // shutdown() joins the driver: every completion has already run.
        let results = completions.snapshot
        #expect(results.count == 5)
        for (_, item) in results { #expect(item.result.failureValue == .shutdown) }
        // After shutdown: immediate .shutdown, and shutdown is idempotent.
        let late = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: []), timeout: 1))
        #expect(late.result.failureValue == .shutdown)
        client.shutdown()
    }

    /// 300 streams on one connection: the read hold-off is at its cap (5 ms), and every answer still
    /// arrives, on one connection, and soon after the server sends it.
    @Test(arguments: H2ClientKind.allCases) func threeHundredConcurrentRequestsOnOneConnectionAllComplete(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer(maxStreams: 1000)
        defer { server.stop() }
        let client = try kind.make(Self.config(server) { $0.maxHostConnections = 1 })
        defer { client.shutdown() }
        let completions = HTTP2ClientCompletions()
        for n in 0..<300 {
            client.sendReportingInfo(PushHTTPRequest(url: server.url("/echo"), headers: [], body: Array("body-\(n)".utf8)),
                                     completion: completions.record(n))
        }
        let results = completions.wait(for: 300, timeout: 30)
        #expect(results.count == 300)
        for (n, item) in results {
            guard case .success(let response) = item.result else { Issue.record("request \(n) failed: \(item.result)"); continue }
            let echo = try JSONDecoder().decode(Echo.self, from: Data(response.body))
            #expect(Data(base64Encoded: echo.body_b64) == Data("body-\(n)".utf8))
        }
        #expect(client.connectionsOpened == 1)
        // The hold-off bounds how late an answer is handled; a lone request afterwards is not held back.
        let start = ContinuousClock.now
        let lone = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        #expect(lone.result.successValue?.status == 200)
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    /// With 200 streams hanging (hold-off at its cap), each one's request timeout fires, none before
    /// its time, and they fire together rather than one after another; and a shutdown with 200
    /// streams hanging completes them all at once. Nothing here depends on the machine's speed: the
    /// bounds are "not early" and "not serial" (200 timeouts one after another would take 300 s),
    /// and the shutdown half runs with no request timeout, so a slow machine cannot turn a
    /// `.shutdown` into a `.timeout`.
    @Test(arguments: H2ClientKind.allCases) func timeoutsAndShutdownWithManyStreamsInFlight(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer(maxStreams: 1000)
        defer { server.stop() }
        let client = try kind.make(Self.config(server) { $0.requestTimeoutMs = 1_500 })
        defer { client.shutdown() }
        _ = client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: []))   // connect first
        let timedOut = HTTP2ClientCompletions()
        let start = ContinuousClock.now
        for n in 0..<200 {
            client.sendReportingInfo(PushHTTPRequest(url: server.url("/hang"), headers: [], body: []),
                                     completion: timedOut.record(n))
        }
        let results = timedOut.wait(for: 200, timeout: 120)
        let elapsed = ContinuousClock.now - start
        #expect(results.count == 200, "serial timeouts would take 300 s")
        #expect(results.values.allSatisfy { $0.result.failureValue == .timeout })
        #expect(elapsed >= .milliseconds(1_400), "no timeout fires early: elapsed \(elapsed)")

        // Its own server, so its gate counts only these hanging streams.
        let quiet = try HTTP2ClientTestServer(maxStreams: 1000)
        defer { quiet.stop() }
        let stopping = try kind.make(Self.config(quiet) { $0.requestTimeoutMs = 600_000 })
        let stopped = HTTP2ClientCompletions()
        for n in 0..<200 {
            stopping.sendReportingInfo(PushHTTPRequest(url: quiet.url("/hang"), headers: [], body: []),
                                       completion: stopped.record(n))
        }
        let gate = try #require(stopping.sendAndWait(PushHTTPRequest(url: quiet.url("/wait-hanging?n=200"), headers: [], body: []),
                                                     timeout: 120))
        #expect(gate.result.successValue?.status == 200)
        stopping.shutdown()
        // shutdown() joins the driver: every completion has already run.
        let aborted = stopped.snapshot
        #expect(aborted.count == 200)
        #expect(aborted.values.allSatisfy { $0.result.failureValue == .shutdown })
    }

    @Test(arguments: H2ClientKind.allCases) func caFileOptionDecidesTrust(kind: H2ClientKind) throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let request = PushHTTPRequest(url: server.url("/echo", host: "localhost"), headers: [], body: [])

        let untrusting = try kind.make(Self.config(nil))
        defer { untrusting.shutdown() }
        let denied = try #require(untrusting.sendAndWait(request))
        guard case .failure(.certificateRejected(let message)) = denied.result else {
            Issue.record("expected .certificateRejected, got \(denied.result)"); return
        }
        #expect(message.contains("local issuer certificate"), "the verifier's words: \(message)")
        // ADR 0018: its own reason, kept and retried no sooner than a minute, counted by ProviderHealth.
        let classification = classifyTransportError(PushTransportError.certificateRejected(message))
        #expect(classification.outcome == .notSent(afterSeconds: 60, reason: "tls_certificate_rejected: \(message)"))
        #expect(classification.isUnanswered && classification.isCertificateRejection)
        #expect(!classifyTransportError(PushTransportError.tls("ALPN")).isCertificateRejection)

        let trusting = try kind.make(Self.config(server))
        defer { trusting.shutdown() }
        let ok = try #require(trusting.sendAndWait(request))
        #expect(ok.result.successValue?.status == 200)
    }

    /// Not an assertion: `HERALD_H2_THROUGHPUT=1 swift test --filter throughput` prints requests/s for
    /// 10 000 small POSTs (override with HERALD_H2_THROUGHPUT_N) submitted at once from one thread.
    /// hypercorn runs with its default 100 streams per connection and GOAWAY disabled (its GOAWAY after
    /// keep_alive_max_requests abandons the in-flight streams, and it stalls with 1000-stream bursts).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HERALD_H2_THROUGHPUT"] != nil))
    func throughput() throws {
        let total = Int(ProcessInfo.processInfo.environment["HERALD_H2_THROUGHPUT_N"] ?? "") ?? 10_000
        for maxInFlight in [1000, 200] {
            let server = try HTTP2ClientTestServer(maxStreams: 100, maxRequestsPerConnection: 100_000_000)
            defer { server.stop() }
            let client = try HTTP2Client(configuration: Self.config(server) { $0.maxInFlight = maxInFlight })
            defer { client.shutdown() }
            let completions = HTTP2ClientCompletions()
            let body = Array(#"{"aps":{"alert":{"title":"Hi","body":"There"}}}"#.utf8)
            let start = ContinuousClock.now
            for i in 0..<total {
                client.sendReportingInfo(PushHTTPRequest(url: server.url("/3/device/abc"),
                                                         headers: [("apns-topic", "x")], body: body),
                                         completion: completions.record(i))
            }
            let results = completions.wait(for: total, timeout: 300)
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let ok = results.values.filter { $0.result.successValue?.status == 200 }.count
            var errors: [String: Int] = [:]
            for item in results.values { if case .failure(let e) = item.result { errors["\(e)", default: 0] += 1 } }
            print("THROUGHPUT maxInFlight=\(maxInFlight): \(total) requests, \(ok) x 200, "
                  + "\(String(format: "%.2f", seconds)) s, \(Int(Double(total) / seconds)) req/s, "
                  + "connections opened \(client.connectionsOpened), errors \(errors)")
        }
    }
}

extension Result {
    var successValue: Success? { if case .success(let s) = self { return s } else { return nil } }
    var failureValue: Failure? { if case .failure(let f) = self { return f } else { return nil } }
}

/// HTTP2Client tests that need no test server (they run even without python3/hypercorn).
@Suite struct HTTP2ClientOfflineTests {
    @Test(arguments: H2ClientKind.allCases) func closedPortIsAConnectError(kind: H2ClientKind) throws {
        let client = try kind.make(HTTP2Client.Configuration())
        defer { client.shutdown() }
        let port = http2ClientClosedPort()
        let item = try #require(client.sendAndWait(PushHTTPRequest(url: "https://127.0.0.1:\(port)/x", headers: [], body: [])))
        guard case .failure(.connect(let message)) = item.result else {
            Issue.record("expected .connect, got \(item.result)"); return
        }
        #expect(!message.isEmpty)
        #expect(PushTransportError.connect(message).isTransient)
    }

    @Test(arguments: [
        (7, "Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server", false, PushTransportError.connect("Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server")),
        (6, "Could not resolve host: nowhere.invalid", false, .connect("Could not resolve host: nowhere.invalid")),
        (28, "Operation timed out after 800 milliseconds with 0 bytes received", false, .timeout),
        (60, "SSL certificate problem: unable to get local issuer certificate", false, .certificateRejected("SSL certificate problem: unable to get local issuer certificate")),
        (83, "SSL: issuer check failed", false, .certificateRejected("SSL: issuer check failed")),
        (35, "error:0A00010B:SSL routines::wrong version number", false, .tls("error:0A00010B:SSL routines::wrong version number")),
        (35, "Recv failure: Connection reset by peer", false, .connect("Recv failure: Connection reset by peer")),
        (35, "OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to x:443 ", false, .connect("OpenSSL SSL_connect: SSL_ERROR_SYSCALL in connection to x:443 ")),
        (16, "Error in the HTTP2 framing layer", false, .protocolError("Error in the HTTP2 framing layer")),
        (92, "HTTP/2 stream 1 was not closed cleanly: PROTOCOL_ERROR (err 1)", false, .protocolError("HTTP/2 stream 1 was not closed cleanly: PROTOCOL_ERROR (err 1)")),
        (56, "Recv failure: Connection reset by peer", false, .protocolError("Recv failure: Connection reset by peer")),
        (52, "Empty reply from server", false, .protocolError("Empty reply from server")),
        (23, "Failure writing output to destination", true, .responseTooLarge),
        (23, "Failure writing output to destination", false, .other(code: 23, message: "Failure writing output to destination")),
        (3, "URL using bad/illegal format or missing URL", false, .other(code: 3, message: "URL using bad/illegal format or missing URL")),
    ] as [(UInt32, String, Bool, PushTransportError)])
    func curlCodeMapping(code: UInt32, message: String, tooLarge: Bool, expected: PushTransportError) {
        #expect(PushTransportError.from(code: CURLcode(rawValue: code), message: message, bodyTooLarge: tooLarge) == expected)
    }

    @Test func configurationFromEnvironmentReadsHeraldCAFile() {
        let c = HTTP2Client.Configuration.fromEnvironment(["HERALD_CA_FILE": "/tmp/some-ca.pem"])
        #expect(HTTP2Client.Configuration.fromEnvironment(["HERALD_CA_FILE": ""]).caFile == nil)
        #expect(c.caFile == "/tmp/some-ca.pem")
        #expect(c.maxHostConnections == 2 && c.maxConcurrentStreams == 1000)
        #expect(c.connectTimeoutMs == 10_000 && c.requestTimeoutMs == 30_000)
    }

    @Test(arguments: H2ClientKind.allCases) func invalidHeaderIsRejectedBeforeSending(kind: H2ClientKind) throws {
        let client = try kind.make(HTTP2Client.Configuration())
        defer { client.shutdown() }
        let item = try #require(client.sendAndWait(
            PushHTTPRequest(url: "https://127.0.0.1:1/x", headers: [("x-evil", "a\r\nInjected: yes")], body: [])))
        guard case .failure(.other) = item.result else { Issue.record("expected .other, got \(item.result)"); return }
    }

    @Test(arguments: H2ClientKind.allCases) func adapterIsAPushTransportAndKeepsTypedErrors(kind: H2ClientKind) throws {
        let client = try kind.make(HTTP2Client.Configuration())
        defer { client.shutdown() }
        let transport: any PushTransport = HTTP2PushTransport(client: client)
        let done = HTTP2ClientCompletions()
        let port = http2ClientClosedPort()
        transport.send(PushHTTPRequest(url: "https://127.0.0.1:\(port)/", headers: [], body: [])) { result in
            let typed = result.mapError { $0 as? PushTransportError ?? .other(code: -99, message: "\($0)") }
            done.record(0)(typed, PushTransferInfo(httpVersion: "", newConnections: 0, elapsed: .zero))
        }
        let item = try #require(done.wait(for: 1, timeout: 20)[0])
        guard case .failure(.connect) = item.result else { Issue.record("expected .connect, got \(item.result)"); return }
    }
}
