import HeraldCore
import Testing

@testable import API
@testable import Realtime

/// A broker whose store is down: every fallible call throws (the 503 path the memory broker
/// never takes).
private final class UnavailableBroker: Broker {
    let epoch: UInt32 = 1
    func setInboundHandler(_ handler: @escaping BrokerInboundHandler) {}
    func publish(_ batch: [PublishRequest]) throws(BrokerError) -> [PublishReceipt] { throw .unavailable("connection refused") }
    func subscribe(_ channels: [ChannelName], resume: ResumePoint) throws(BrokerError) -> SubscribeSnapshot { throw .timedOut }
    func unsubscribe(_ channels: [ChannelName]) {}
    func history(_ channel: ChannelName, after position: StreamCursor) throws(BrokerError) -> ChannelHistory { throw .timedOut }
    func retained(_ channel: ChannelName) throws(BrokerError) -> ChannelMessage? { throw .timedOut }
    func sweep() {}
    var publishedCount: UInt64 { 0 }
}

/// RT-4 when the broker fails: the publish routes answer 503 `broker_unavailable` in the standard
/// error shape, and nothing is published.
@Suite("Publish routes")
struct PublishRoutesTests {
    static let routes = PublishRoutes(authenticator: Authenticator(configuration: APIConfiguration(serverKey: "k", verificationKeys: [])),
                                      configuration: APIConfiguration(serverKey: "k", verificationKeys: []),
                                      broker: UnavailableBroker())

    static func context(_ path: String, body: String) -> RequestContext {
        let request = HTTPRequest(method: .post, target: path,
                                  headers: ["Authorization": "Bearer k", "Content-Type": "application/json"], body: Array(body.utf8))
        return RequestContext(request: request, pathParameters: [:], remoteAddress: "127.0.0.1", loopIndex: 0)
    }

    static func expectUnavailable(_ call: () throws -> RouteResult) {
        do {
            _ = try call()
            Issue.record("the route answered although the broker failed")
        } catch let error as HTTPError {
            #expect(error.status == 503)
            #expect(error.code == "broker_unavailable")
            let body = String(decoding: error.response.body, as: UTF8.self)
            #expect(body.hasPrefix("{\"error\":\"broker_unavailable\",\"message\":"), "\(body)")
        } catch {
            Issue.record("not an HTTPError: \(error)")
        }
    }

    @Test("POST /v1/publish answers 503 broker_unavailable when the broker fails")
    func publish() {
        Self.expectUnavailable {
            try Self.routes.publish(Self.context("/v1/publish", body: #"{"channel":"room:1","data":{"x":1}}"#))
        }
    }

    @Test("POST /v1/publish/batch answers 503 broker_unavailable when the broker fails")
    func batch() {
        Self.expectUnavailable {
            try Self.routes.publishBatch(Self.context("/v1/publish/batch", body: #"{"messages":[{"channel":"room:1","data":1}]}"#))
        }
    }

    /// Found by the fuzz loop (Tests/Fuzz/corpus/publish-body/regression-number-overflow): the
    /// scanner used to publish a number the decoder path refuses.
    @Test("a number beyond a double's range in data is a 400, on the scanner's path too")
    func numberOutOfRange() {
        for path in ["/v1/publish", "/v1/publish/batch"] {
            let message = #"{"channel":"room:1","data":{"n":123456789012e4567890}}"#
            let body = path == "/v1/publish" ? message : #"{"messages":["# + message + "]}"
            do {
                _ = try path == "/v1/publish" ? Self.routes.publish(Self.context(path, body: body))
                    : Self.routes.publishBatch(Self.context(path, body: body))
                Issue.record("accepted")
            } catch let error as HTTPError {
                #expect(error.status == 400)
                #expect(error.code == "invalid_request")
                #expect(error.message.contains("beyond the range of a double"), "\(error.message)")
            } catch {
                Issue.record("not an HTTPError: \(error)")
            }
        }
    }

    @Test("a bad body is still a 400 before the broker is asked")
    func validationFirst() {
        #expect(throws: HTTPError.self) {
            try Self.routes.publish(Self.context("/v1/publish", body: #"{"channel":"bad channel","data":1}"#))
        }
    }
}
