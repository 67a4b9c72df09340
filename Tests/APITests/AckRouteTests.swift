import Foundation
import HeraldCore
import RealtimeMemory
import Synchronization
import Testing

@testable import API
@testable import Realtime

/// ADR 0025: `POST /v1/me/acks` answers only once storage has been asked for the pushes waiting
/// for the ack; storage that cannot answer gives 503, and the ack is still held in memory.
@Suite("Ack route")
struct AckRouteTests {
    @Test func storageThatCannotAnswerGives503AndTheAckIsStillHeldInMemory() throws {
        let authenticator = try AppRoutingTests.directory([])
        let presence = MemoryPresenceStore()
        let routes = PresenceRoutes(authenticator: authenticator, presence: presence, storage: UnavailableStorage())
        let token = AppRoutingTests.token(AppRoutingTests.claims(), hs256: AppRoutingTests.defaultSecret)
        let request = HTTPRequest(method: .post, target: "/v1/me/acks",
                                  headers: ["Content-Type": "application/json", "Authorization": "Bearer \(token)"],
                                  body: Array(#"{"ids":["e1"]}"#.utf8))
        let response = try DemoRoutesTests.response(try routes.acknowledge(
            RequestContext(request: request, pathParameters: [:], remoteAddress: "127.0.0.1", loopIndex: 0)))
        #expect(response.status == 503)
        #expect(String(decoding: response.body, as: UTF8.self).contains("storage_unavailable"))
        #expect(presence.hasAcknowledged(userID: Presence.userKey(app: "default", userID: "carol"), sessionID: "s1", id: "e1"))
    }
}

/// ADR 0026: the WebSocket `ack` takes the HTTP route's way into storage, and its failure the
/// route's code and message.
@Suite("WebSocket ack keeper")
struct WebSocketAckKeeperTests {
    private static func kept(_ storage: any Storage, sessionID: String?) -> HTTPError?? {
        let done = DispatchSemaphore(value: 0)
        let answer = Mutex<HTTPError??>(nil)
        var identity = StreamIdentity(userID: "carol", sessionID: sessionID, grants: [], expiresAt: nil)
        identity.app = "default"
        WebSocketRoutes.ackKeeper(storage)(identity, ["e1"]) { failure in
            answer.withLock { $0 = .some(failure) }
            done.signal()
        }
        _ = done.wait(timeout: .now() + 10)
        return answer.withLock { $0 }
    }

    @Test func storageThatCannotAnswerIsToldWithTheRoutesCodeAndMessage() throws {
        let answer = try #require(Self.kept(UnavailableStorage(), sessionID: "s1"))
        let failure = try #require(answer)
        #expect(failure.code == "storage_unavailable" && failure.status == 503)
        #expect(failure.message == DatabaseResponder.error(StorageError.unavailable(message: "x")).message)
    }

    @Test func aTokenWithoutSessionIsKeptAtOnceWithoutAskingStorage() throws {
        // Storage that cannot answer would fail the ack: it was not asked.
        let answer = try #require(Self.kept(UnavailableStorage(), sessionID: nil))
        #expect(answer == nil)
    }
}
