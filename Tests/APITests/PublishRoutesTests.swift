import HeraldCore
import RealtimeMemory
import Synchronization
import Testing

@testable import API
@testable import Realtime

/// A broker whose store is down: every fallible call throws (the 503 path the memory broker
/// never takes).
private final class UnavailableBroker: Broker {
    let epoch: UInt32 = 1
    /// What a publish throws.
    let publishError: BrokerError
    init(publishError: BrokerError = .unavailable("connection refused")) { self.publishError = publishError }
    func setInboundHandler(_ handler: @escaping BrokerInboundHandler) {}
    func publish(_ batch: [PublishRequest]) throws(BrokerError) -> [PublishReceipt] { throw publishError }
    func subscribe(_ channels: [ChannelName], resume: ResumePoint) throws(BrokerError) -> SubscribeSnapshot { throw .timedOut }
    func unsubscribe(_ channels: [ChannelName]) {}
    func history(_ channel: ChannelName, after position: StreamCursor) throws(BrokerError) -> ChannelHistory { throw .timedOut }
    func retained(_ channel: ChannelName) throws(BrokerError) -> ChannelMessage? { throw .timedOut }
    func clearRetained(_ channel: ChannelName) throws(BrokerError) { throw publishError }
    func sweep() {}
    func removeChannels(app: String) throws(BrokerError) { throw .unavailable("test") }
    var publishedCount: UInt64 { 0 }
}

/// Loops that always keep up: publishes are answered at once.
private struct NeverBehind: PublishPacer {
    var isBehind: Bool { false }
    func afterPendingDeliveries(timeoutNanoseconds: UInt64, _ done: @escaping @Sendable () -> Void) { done() }
}

/// RT-4 when the broker fails: the publish routes answer 503 `broker_unavailable` in the standard
/// error shape, and nothing is published.
@Suite("Publish routes")
struct PublishRoutesTests {
    static let routes = PublishRoutes(authenticator: Authenticator(configuration: APIConfiguration(serverKey: "k", verificationKeys: [])),
                                      configuration: APIConfiguration(serverKey: "k", verificationKeys: []),
                                      broker: UnavailableBroker(), pacer: NeverBehind())

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

    /// fresh14: a publish whose broker answer timed out or was lost may have reached subscribers;
    /// the 503 used to say "nothing was published", so a caller retried and delivered it twice.
    @Test("a 503 says whether the publish may still have happened", arguments: [
        (BrokerError.unavailable("connection refused"), false),
        (BrokerError.timedOut, true),
        (BrokerError.unconfirmed("RedisError.connectionLost: reset"), true),
    ])
    func unconfirmedPublish(error: BrokerError, mayHaveHappened: Bool) {
        let configuration = APIConfiguration(serverKey: "k", verificationKeys: [])
        let routes = PublishRoutes(authenticator: Authenticator(configuration: configuration), configuration: configuration,
                                   broker: UnavailableBroker(publishError: error), pacer: NeverBehind())
        let calls: [() throws -> RouteResult] = [
            { try routes.publish(Self.context("/v1/publish", body: #"{"channel":"room:1","data":1}"#)) },
            { try routes.publishBatch(Self.context("/v1/publish/batch", body: #"{"messages":[{"channel":"room:1","data":1}]}"#)) },
        ]
        for call in calls {
            do {
                _ = try call()
                Issue.record("answered although the broker failed")
            } catch let answer as HTTPError {
                #expect(answer.status == 503 && answer.code == "broker_unavailable")
                #expect(answer.message == (mayHaveHappened ? PublishRoutes.unconfirmedMessage : PublishRoutes.unavailableMessage))
                #expect(answer.message.contains("nothing was published") == !mayHaveHappened, "\(answer.message)")
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

/// Back-pressure (issue 17): while the loops keep up a publish is answered at once; when they are
/// behind, the answer waits for the barrier, and the message is published either way.
@Suite("Publish pacing")
struct PublishPacingTests {
    /// Loops whose state the test sets, and whose barrier the test releases.
    final class ScriptedPacer: PublishPacer, @unchecked Sendable {
        private let lock = Mutex<(behind: Bool, waiting: [@Sendable () -> Void], timeouts: [UInt64])>((false, [], []))
        var isBehind: Bool { lock.withLock { $0.behind } }
        func setBehind(_ behind: Bool) { lock.withLock { $0.behind = behind } }
        func afterPendingDeliveries(timeoutNanoseconds: UInt64, _ done: @escaping @Sendable () -> Void) {
            lock.withLock {
                $0.waiting.append(done)
                $0.timeouts.append(timeoutNanoseconds)
            }
        }
        var timeouts: [UInt64] { lock.withLock { $0.timeouts } }
        /// Runs the waiting barriers' actions; returns how many there were.
        func release() -> Int {
            let waiting = lock.withLock { state -> [@Sendable () -> Void] in
                defer { state.waiting = [] }
                return state.waiting
            }
            for done in waiting { done() }
            return waiting.count
        }
    }

    static func routes(_ pacer: ScriptedPacer, broker: MemoryBroker) -> PublishRoutes {
        let configuration = APIConfiguration(serverKey: "k", verificationKeys: [])
        return PublishRoutes(authenticator: Authenticator(configuration: configuration), configuration: configuration,
                             broker: broker, pacer: pacer)
    }

    /// Runs a deferred result's work and returns what it answered (nil until the barrier is released).
    static func deferredAnswer(_ result: RouteResult, pacer: ScriptedPacer) -> (before: HTTPResponse?, after: HTTPResponse?) {
        guard case .deferred(let work) = result else {
            Issue.record("answered at once although the loops are behind")
            return (nil, nil)
        }
        let answer = Mutex<HTTPResponse?>(nil)
        work(ResponseWriter { response in answer.withLock { $0 = response } })
        let before = answer.withLock { $0 }
        #expect(pacer.release() == 1)
        return (before, answer.withLock { $0 })
    }

    @Test("POST /v1/publish is answered at once while the loops keep up")
    func immediate() throws {
        let pacer = ScriptedPacer()
        let broker = MemoryBroker()
        let result = try Self.routes(pacer, broker: broker).publish(
            PublishRoutesTests.context("/v1/publish", body: #"{"channel":"room:1","data":{"x":1}}"#))
        guard case .response(let response) = result else {
            Issue.record("not answered at once")
            return
        }
        #expect(response.status == 200)
        #expect(pacer.release() == 0, "no barrier was asked for")
        #expect(broker.publishedCount == 1)
    }

    @Test("POST /v1/publish waits for the loops when they are behind; the message is published at once")
    func waitsWhenBehind() throws {
        let pacer = ScriptedPacer()
        pacer.setBehind(true)
        let broker = MemoryBroker()
        let result = try Self.routes(pacer, broker: broker).publish(
            PublishRoutesTests.context("/v1/publish", body: #"{"channel":"room:1","data":{"x":1}}"#))
        #expect(broker.publishedCount == 1, "published before the answer waits")
        let (before, after) = Self.deferredAnswer(result, pacer: pacer)
        #expect(before == nil, "answered before the loops caught up")
        #expect(after?.status == 200)
        let body = after.map { String(decoding: $0.body, as: UTF8.self) } ?? ""
        #expect(body.contains(#""channel":"room:1""#), "\(body)")
        #expect(pacer.timeouts == [PublishRoutes.pacingTimeoutNanoseconds], "a wedged loop holds the answer at most this long")
    }

    @Test("POST /v1/publish/batch waits for the loops when they are behind")
    func batchWaitsWhenBehind() throws {
        let pacer = ScriptedPacer()
        pacer.setBehind(true)
        let broker = MemoryBroker()
        let result = try Self.routes(pacer, broker: broker).publishBatch(
            PublishRoutesTests.context("/v1/publish/batch", body: #"{"messages":[{"channel":"a","data":1},{"channel":"b","data":2}]}"#))
        #expect(broker.publishedCount == 2)
        let (before, after) = Self.deferredAnswer(result, pacer: pacer)
        #expect(before == nil)
        #expect(after?.status == 200)
        let body = after.map { String(decoding: $0.body, as: UTF8.self) } ?? ""
        #expect(body.hasPrefix(#"{"results":["#), "\(body)")
    }

    @Test("a refused publish is refused at once, behind or not, and waits for nothing")
    func refusalsDoNotWait() {
        let pacer = ScriptedPacer()
        pacer.setBehind(true)
        let broker = MemoryBroker()
        #expect(throws: HTTPError.self) {
            try Self.routes(pacer, broker: broker).publish(PublishRoutesTests.context("/v1/publish", body: #"{"channel":"bad channel","data":1}"#))
        }
        #expect(pacer.release() == 0)
        #expect(broker.publishedCount == 0)
    }
}

/// `DELETE /v1/channels/{name}/retained` (RT-6, ADR 0028).
@Suite("Clear retained route")
struct ClearRetainedRouteTests {
    static func context(_ name: String, key: String = "k") -> RequestContext {
        let request = HTTPRequest(method: .delete, target: "/v1/channels/\(name)/retained", headers: ["Authorization": "Bearer \(key)"], body: [])
        return RequestContext(request: request, pathParameters: ["name": name], remoteAddress: "127.0.0.1", loopIndex: 0)
    }

    static func routes(_ broker: any Broker) -> PublishRoutes {
        let configuration = APIConfiguration(serverKey: "k", verificationKeys: [])
        return PublishRoutes(authenticator: Authenticator(configuration: configuration), configuration: configuration,
                             broker: broker, pacer: NeverBehind())
    }

    @Test("204, and a later subscriber gets no retained message; a repeat is 204 too")
    func clears() throws {
        let broker = MemoryBroker()
        let name = ChannelName("generation:9")!
        _ = broker.publish([PublishRequest(channel: name, event: .message, data: "1", retain: true)])
        for _ in 0..<2 {
            guard case .response(let response) = try Self.routes(broker).clearRetained(Self.context("generation:9")) else {
                Issue.record("not answered at once"); return
            }
            #expect(response.status == 204 && response.body.isEmpty)
        }
        #expect(broker.retained(name) == nil)
        #expect(broker.subscribe([name], resume: .fresh).retained.isEmpty)
    }

    @Test("a bad name is a 400 on name; a wrong key a 401; neither clears")
    func refused() {
        let broker = MemoryBroker()
        let name = ChannelName("g")!
        _ = broker.publish([PublishRequest(channel: name, event: .message, data: "1", retain: true)])
        for (context, status, field) in [(Self.context("bad%20name"), 400, "name"), (Self.context("g", key: "wrong"), 401, nil)] {
            do {
                _ = try Self.routes(broker).clearRetained(context)
                Issue.record("answered")
            } catch let error as HTTPError {
                #expect(error.status == status)
                if let field { #expect(String(decoding: error.response.body, as: UTF8.self).contains("\"field\":\"\(field)\"")) }
            } catch {
                Issue.record("not an HTTPError: \(error)")
            }
        }
        #expect(broker.retained(name)?.data == "1")
    }

    @Test("503 broker_unavailable saying whether it may have been cleared", arguments: [
        (BrokerError.unavailable("connection refused"), false),
        (BrokerError.timedOut, true),
    ])
    func unavailable(error: BrokerError, mayHaveHappened: Bool) {
        do {
            _ = try Self.routes(UnavailableBroker(publishError: error)).clearRetained(Self.context("g"))
            Issue.record("answered although the broker failed")
        } catch let answer as HTTPError {
            #expect(answer.status == 503 && answer.code == "broker_unavailable")
            #expect(answer.message == (mayHaveHappened ? PublishRoutes.unconfirmedClearMessage : PublishRoutes.unavailableClearMessage))
        } catch {
            Issue.record("not an HTTPError: \(error)")
        }
    }
}
