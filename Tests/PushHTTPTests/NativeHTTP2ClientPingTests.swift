import Foundation
import PushTestSupport
import Synchronization
import Testing

@testable import PushHTTP

/// The native client's connection health check (RFC 9113 §6.7): an idle connection is sent a PING,
/// and one that does not acknowledge it in time is closed and replaced. The driver's clock is moved
/// by hand; a request already past its send-by deadline wakes the driver, whose pass then sweeps.
@Suite(.enabled(if: HTTP2ClientTestServer.available,
                "needs python3 with hypercorn, h2 and trustme (pip install hypercorn h2 trustme)"))
struct NativeHTTP2ClientPingTests {
    /// The driver's clock, moved by hand (ns).
    final class ManualClock: Sendable {
        let now = Atomic<UInt64>(1_000_000_000_000)
    }

    /// A client on `clock`, with one request answered: its connection is open, its idle clock
    /// started at the clock's time.
    static func connectedClient(_ server: HTTP2ClientTestServer, clock: ManualClock) throws -> NativeHTTP2Client {
        var configuration = HTTP2Client.Configuration()
        configuration.caFile = server.caFile
        configuration.pingIdleMilliseconds = 60_000
        configuration.pingTimeoutMilliseconds = 20_000
        configuration.requestTimeoutMs = 3_600_000   // no stream timeout in the way
        let client = try NativeHTTP2Client(configuration: configuration, monotonicNanoseconds: { clock.now.load(ordering: .relaxed) })
        let first = client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: []))
        #expect((try? first?.result.get().status) == 200)
        return client
    }

    /// Moves the driver's clock by `seconds` and returns once the driver has swept at the new time:
    /// a wake request fails as it is taken from the inbox, before that pass's sweep, so a second
    /// one is sent after it (taken on a later pass, after the first one's sweep).
    static func advance(_ clock: ManualClock, seconds: UInt64, client: NativeHTTP2Client, server: HTTP2ClientTestServer) {
        clock.now.add(seconds * 1_000_000_000, ordering: .relaxed)
        for _ in 0..<2 {
            let wake = client.sendAndWait(PushHTTPRequest(url: server.url("/wake"), headers: [], body: [], sendWithinMilliseconds: 0))
            #expect(wake?.result.failureValue == .sendByPassed)
        }
    }

    /// A connection gone silent (no answer, no PING ACK) holds a request on the wire: after the
    /// idle interval it is sent a PING, and when the ACK has not come within the timeout it is
    /// closed; the request fails with `.protocolError` (transient: the worker retries the push),
    /// and the next request opens a new connection and is answered.
    @Test func anUnacknowledgedPingClosesTheConnectionAndFailsItsStreamsRetryably() throws {
        let server = try HTTP2ClientTestServer(silentAfterGoSilent: true)
        defer { server.stop() }
        let clock = ManualClock()
        let client = try Self.connectedClient(server, clock: clock)
        defer { client.shutdown() }
        let held = HTTP2ClientCompletions()
        client.sendReportingInfo(PushHTTPRequest(url: server.url("/go-silent"), headers: [], body: [1]), completion: held.record(0))
        // The driver takes its inbox in order: by the time the wake request fails, the held one
        // was written in the same pass or an earlier one.
        Self.advance(clock, seconds: 59, client: client, server: server)
        #expect(client.pingsSent == 0, "59 s without a frame: no PING yet")
        Self.advance(clock, seconds: 1, client: client, server: server)
        #expect(client.pingsSent == 1)
        Self.advance(clock, seconds: 19, client: client, server: server)
        #expect(held.snapshot.isEmpty, "19 s after the PING the connection is still given its chance")
        Self.advance(clock, seconds: 1, client: client, server: server)
        let failed = try #require(held.wait(for: 1, timeout: 10)[0])
        guard case .failure(let error) = failed.result, case .protocolError(let message) = error else {
            Issue.record("expected .protocolError, got \(failed.result)"); return
        }
        #expect(message.contains("PING not acknowledged"))
        #expect(error.isTransient && error.mayHaveReachedProvider, "retried as a transport error, its attempt counted")
        #expect(client.pingsAcknowledged == 0)
        let next = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
        #expect((try? next.result.get().status) == 200)
        #expect(next.info.newConnections == 1)
        #expect(client.connectionsOpened == 2)
    }

    /// A server that acknowledges keeps its connection: the PING after each idle interval is
    /// answered, nothing is closed past the ACK timeout, and requests keep going on it.
    @Test func anAcknowledgedPingKeepsTheConnection() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let clock = ManualClock()
        let client = try Self.connectedClient(server, clock: clock)
        defer { client.shutdown() }
        for round in 1...2 {
            Self.advance(clock, seconds: 60, client: client, server: server)
            #expect(client.pingsSent == round)
            // h2 acknowledges a PING as it reads it, so the ACK comes ahead of the answer to a
            // request written after the PING on the same connection: that answer is the event.
            let answered = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
            #expect((try? answered.result.get().status) == 200)
            #expect(client.pingsAcknowledged == round, "the server acknowledged PING \(round)")
            Self.advance(clock, seconds: 30, client: client, server: server)   // past the ACK timeout
            let item = try #require(client.sendAndWait(PushHTTPRequest(url: server.url("/echo"), headers: [], body: [])))
            #expect((try? item.result.get().status) == 200)
            #expect(item.info.newConnections == 0, "round \(round): the connection was kept")
        }
        #expect(client.connectionsOpened == 1)
        #expect(client.pingsSent == 2, "the answers in between restarted the idle clock")
    }
}
