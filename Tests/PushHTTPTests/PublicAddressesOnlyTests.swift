import Foundation
import PushTestSupport
import Testing

@testable import PushHTTP

/// `PushHTTPRequest.publicAddressesOnly` (a Web Push endpoint a client gave): the libcurl client
/// checks every address it connects to after DNS and the peer of a connection it reuses.
@Suite(.enabled(if: HTTP2ClientTestServer.available,
                "needs python3 with hypercorn, h2 and trustme (pip install hypercorn h2 trustme)"))
struct PublicAddressesOnlyTests {
    func request(_ server: HTTP2ClientTestServer, publicOnly: Bool) -> PushHTTPRequest {
        var request = PushHTTPRequest(url: server.url("/echo", host: "localhost"), headers: [], body: [1])
        request.publicAddressesOnly = publicOnly
        return request
    }

    @Test func aNameThatResolvesToLoopbackIsNotConnectedTo() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try HTTP2Client(configuration: HTTP2ClientTests.config(server))
        defer { client.shutdown() }

        // `localhost` is a name: only what it resolves to (127.0.0.1, ::1) shows it is not public.
        let refused = try #require(client.sendAndWait(request(server, publicOnly: true)))
        guard case .failure(.addressNotPublic(let text)) = refused.result else {
            Issue.record("expected .addressNotPublic, got \(refused.result)"); return
        }
        #expect(text.contains("localhost:\(server.port)") && text.contains("127.0.0.1"), "\(text)")
        #expect(refused.info.newConnections == 0 && client.connectionsOpened == 0, "no connection was made")
        #expect(!PushTransportError.addressNotPublic(text).isTransient && !PushTransportError.addressNotPublic(text).mayHaveReachedProvider)

        // The same request without the rule reaches the server: the refusal was the rule's.
        let allowed = try #require(client.sendAndWait(request(server, publicOnly: false)))
        #expect(try allowed.result.get().status == 200)
        #expect(client.connectionsOpened == 1)
    }

    @Test func aReusedConnectionToAnAddressThatIsNotPublicIsRefusedToo() throws {
        let server = try HTTP2ClientTestServer()
        defer { server.stop() }
        let client = try HTTP2Client(configuration: HTTP2ClientTests.config(server))
        defer { client.shutdown() }

        // A request without the rule (Expo shares the client) leaves a connection open to localhost.
        let first = try #require(client.sendAndWait(request(server, publicOnly: false)))
        #expect(try first.result.get().status == 200)
        let reused = try #require(client.sendAndWait(request(server, publicOnly: true)))
        guard case .failure(.addressNotPublic(let text)) = reused.result else {
            Issue.record("expected .addressNotPublic, got \(reused.result)"); return
        }
        #expect(text.contains("127.0.0.1") || text.contains("::1"), "\(text)")
        #expect(reused.info.newConnections == 0 && client.connectionsOpened == 1, "it was the open connection's peer that was refused")
        // The connection stays usable for requests without the rule.
        #expect(try #require(client.sendAndWait(request(server, publicOnly: false))).result.get().status == 200)
    }
}

@Suite struct PublicAddressesOnlyOfflineTests {
    @Test func aLiteralLoopbackAddressIsRefusedBeforeConnecting() throws {
        let client = try HTTP2Client(configuration: HTTP2Client.Configuration())
        defer { client.shutdown() }
        var request = PushHTTPRequest(url: "https://127.0.0.1:\(http2ClientClosedPort())/x", headers: [], body: [])
        request.publicAddressesOnly = true
        let item = try #require(client.sendAndWait(request))
        // A closed port would be `.connect`: the address was refused before any connect.
        guard case .failure(.addressNotPublic(let text)) = item.result else {
            Issue.record("expected .addressNotPublic, got \(item.result)"); return
        }
        #expect(text.hasSuffix("(refused: 127.0.0.1)"), "\(text)")
    }

    @Test func theNativeClientRefusesSuchARequestItCannotCheck() throws {
        let client = try NativeHTTP2Client(configuration: HTTP2Client.Configuration())
        defer { client.shutdown() }
        var request = PushHTTPRequest(url: "https://push.example.net/x", headers: [], body: [])
        request.publicAddressesOnly = true
        let item = try #require(client.sendAndWait(request))
        guard case .failure(.addressNotPublic) = item.result else { Issue.record("expected .addressNotPublic, got \(item.result)"); return }
        #expect(client.connectionsOpened == 0)
    }
}
