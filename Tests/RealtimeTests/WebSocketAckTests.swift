import Dispatch
import Foundation
import HeraldCore
import Synchronization
import Testing
@testable import Realtime
import RealtimeMemory

/// A `WebSocketAckKeeper` that holds each call until the test answers it.
private final class HeldKeeper: Sendable {
    private let calls = Mutex<[(ids: [String], done: @Sendable (HTTPError?) -> Void)]>([])
    private let called = DispatchSemaphore(value: 0)

    var keeper: WebSocketAckKeeper {
        { [self] _, ids, done in
            calls.withLock { $0.append((ids, done)) }
            called.signal()
        }
    }

    var count: Int { calls.withLock { $0.count } }

    /// The ids of call `index`, once it was made (nil after 10 s).
    func waitForCall(_ index: Int) -> [String]? {
        while count <= index {
            guard called.wait(timeout: .now() + 10) == .success else { return nil }
        }
        return calls.withLock { $0[index].ids }
    }

    func answer(_ index: Int, _ failure: HTTPError?) {
        calls.withLock { $0[index] }.done(failure)
    }
}

/// An in-process server whose `GET /ws` opens a herald WebSocket for user `u`, session `s`, its
/// acks kept by `keeper`.
private final class AckServer {
    let presence = MemoryPresenceStore()
    let server: HTTPServer
    let port: Int

    init(keeper: WebSocketAckKeeper?) throws {
        let group = try EventLoopGroup(count: 1)
        let node = RealtimeNode(group: group, broker: MemoryBroker(limits: MemoryBroker.Limits(historySize: 100)), presence: presence)
        var router = Router()
        router.get("/ws") { context in
            let key = try WebSocketUpgrade.validate(context.request)
            return .webSocket(WebSocketRequest(mode: .herald, key: key,
                                               identity: StreamIdentity(userID: "u", sessionID: "s", grants: [], expiresAt: nil),
                                               keepAcks: keeper) { _ in .failure(HTTPError(401, "invalid_token", "unused")) })
        }
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        server = HTTPServer(configuration: configuration, router: router, node: node)
        port = try server.start()
    }

    deinit {
        server.shutdown()
        stoppedServers.withLock { $0.append(server) }
    }

    /// A client past the upgrade and the `ready` message.
    func connect() throws -> TestClient {
        let client = try TestClient(port: port)
        client.send("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        _ = try #require(client.read(through: "\r\n\r\n"))
        let ready = try #require(Self.receive(client))
        #expect(ready["type"] as? String == "ready")
        return client
    }

    func hasAcknowledged(_ id: String) -> Bool {
        presence.hasAcknowledged(userID: Presence.userKey(app: "default", userID: "u"), sessionID: "s", id: id)
    }

    static func send(_ client: TestClient, _ json: String) {
        client.send(wsFrame(0x1, Array(json.utf8)))
    }

    /// The next server message (an unmasked text frame) as a JSON object.
    static func receive(_ client: TestClient) -> [String: Any]? {
        guard let head = client.read(count: 2), head[0] == 0x81 else { return nil }
        var length = Int(head[1] & 0x7F)
        guard length != 127 else { return nil }
        if length == 126 {
            guard let extended = client.read(count: 2) else { return nil }
            length = Int(extended[0]) << 8 | Int(extended[1])
        }
        guard let payload = client.read(count: length) else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any]
    }
}

/// ADR 0026: a WebSocket `ack` is held in memory at once, stored off the read loop (one store in
/// flight, later acks merged into the next), and answered in order once stored or failed.
@Suite(.serialized) struct WebSocketAckTests {
    /// A connection whose ack of `id` is being stored, held until the test answers call 0.
    private static func storing(_ id: String) throws -> (HeldKeeper, AckServer, TestClient) {
        let keeper = HeldKeeper()
        let server = try AckServer(keeper: keeper.keeper)
        let client = try server.connect()
        AckServer.send(client, #"{"type":"ack","id":"\#(id)"}"#)
        #expect(keeper.waitForCall(0) == [id])
        return (keeper, server, client)
    }

    @Test func anAckIsAnsweredOnlyOnceStoredAndAStoreInFlightStallsNothing() throws {
        let (keeper, server, client) = try Self.storing("e1")
        AckServer.send(client, #"{"type":"ack","ids":["e2","e3"]}"#)
        AckServer.send(client, #"{"type":"ack","id":"e4"}"#)
        AckServer.send(client, #"{"type":"ping"}"#)
        // Frames are handled in order: by the pong both later acks were read, and neither waited.
        #expect(AckServer.receive(client)?["type"] as? String == "pong")
        #expect(keeper.count == 1)
        #expect(server.hasAcknowledged("e1") && server.hasAcknowledged("e3") && server.hasAcknowledged("e4"))
        keeper.answer(0, nil)
        let acked = try #require(AckServer.receive(client))
        #expect(acked["type"] as? String == "acked" && acked["ids"] as? [String] == ["e1"])
        // The two that waited go in one store, answered per message in the order sent.
        #expect(keeper.waitForCall(1) == ["e2", "e3", "e4"])
        keeper.answer(1, nil)
        #expect(AckServer.receive(client)?["ids"] as? [String] == ["e2", "e3"])
        #expect(AckServer.receive(client)?["ids"] as? [String] == ["e4"])
    }

    @Test func aFailedStoreIsAnErrorNamingEachMessagesIdsAndTheAckStaysInMemory() throws {
        let keeper = HeldKeeper()
        let server = try AckServer(keeper: keeper.keeper)
        let client = try server.connect()
        AckServer.send(client, #"{"type":"ack","id":"e1","ids":["e2"]}"#)
        #expect(keeper.waitForCall(0) == ["e1", "e2"])
        keeper.answer(0, HTTPError(503, "storage_unavailable", "the database is unavailable; retry later"))
        let error = try #require(AckServer.receive(client))
        #expect(error["type"] as? String == "error" && error["error"] as? String == "storage_unavailable")
        #expect(error["ids"] as? [String] == ["e1", "e2"])
        #expect((error["message"] as? String)?.contains("retry later") == true)
        #expect(server.hasAcknowledged("e1") && server.hasAcknowledged("e2"))
        // The socket stays open and the next ack is stored again.
        AckServer.send(client, #"{"type":"ack","id":"e1"}"#)
        #expect(keeper.waitForCall(1) == ["e1"])
        keeper.answer(1, nil)
        #expect(AckServer.receive(client)?["type"] as? String == "acked")
    }

    @Test func anAckPastTheWaitingBoundIsRefusedAtOnceAndHeldInMemoryOnly() throws {
        let (keeper, server, client) = try Self.storing("first")
        let full = (1...HTTPConnection.maxWaitingAckIDs).map { "w\($0)" }
        AckServer.send(client, #"{"type":"ack","ids":"# + JSONText.array(full) + "}")
        AckServer.send(client, #"{"type":"ack","id":"over"}"#)
        let refused = try #require(AckServer.receive(client))
        #expect(refused["type"] as? String == "error" && refused["error"] as? String == "too_many_acks")
        #expect(refused["ids"] as? [String] == ["over"])
        #expect(server.hasAcknowledged("over"))
        keeper.answer(0, nil)
        #expect(AckServer.receive(client)?["ids"] as? [String] == ["first"])
        #expect(keeper.waitForCall(1) == full)
        #expect(keeper.count == 2)
    }

    @Test func aStoreAnsweredAfterItsConnectionEndedIsDroppedAndTheServerGoesOn() throws {
        let (keeper, server, gone) = try Self.storing("e1")
        AckServer.send(gone, #"{"type":"ack","id":"e2"}"#)
        AckServer.send(gone, #"{"type":"ping"}"#)
        #expect(AckServer.receive(gone)?["type"] as? String == "pong")
        // The close handshake, so the answer surely comes after the connection ended.
        gone.send(wsFrame(0x8, [0x03, 0xE8]))
        #expect(gone.read(count: 2)?.first == 0x88)
        keeper.answer(0, nil)
        // The waiting `e2` is not stored for a connection that ended: the next call is the new one's.
        let client = try server.connect()
        AckServer.send(client, #"{"type":"ack","id":"e3"}"#)
        #expect(keeper.waitForCall(1) == ["e3"])
        keeper.answer(1, nil)
        #expect(AckServer.receive(client)?["ids"] as? [String] == ["e3"])
    }

    @Test func withoutAKeeperAnAckIsAnsweredAtOnce() throws {
        let server = try AckServer(keeper: nil)
        let client = try server.connect()
        AckServer.send(client, #"{"type":"ack","id":"e1"}"#)
        let acked = try #require(AckServer.receive(client))
        #expect(acked["type"] as? String == "acked" && acked["ids"] as? [String] == ["e1"])
        #expect(server.hasAcknowledged("e1"))
    }
}
