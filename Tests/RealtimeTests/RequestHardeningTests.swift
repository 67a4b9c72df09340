import Foundation
import Testing
@testable import Realtime

/// The HTTP lows of issue 17's new-user runs, at the unit level: CORS asks the app's list with the
/// request (not any app's), 404/405 messages repeat a bounded path, and a route's head check sees
/// the head of a request whose body the client has not sent yet.
@Suite struct RequestHardeningTests {
    private func request(_ target: String, origin: String?, method: HTTPMethod = .get) -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "x")
        if let origin { headers.add(name: "Origin", value: origin) }
        return HTTPRequest(method: method, target: target, headers: headers)
    }

    @Test func corsAsksTheHookWithTheRequestAndWhetherItIsAPreflight() {
        var policy = CORSPolicy(allowedOrigins: ["https://env.example"])
        // The hook stands for the apps: only a request naming app `a` may be read by a.example.
        policy.moreOrigins = { origin, request, preflight in
            origin == "https://a.example" && (preflight || request.firstQueryValue("app") == "a")
        }
        #expect(policy.allowOrigin(for: request("/x", origin: nil), preflight: false) == nil)
        #expect(policy.allowOrigin(for: request("/x", origin: "https://env.example"), preflight: false) == "https://env.example")
        #expect(policy.allowOrigin(for: request("/x?app=a", origin: "https://a.example"), preflight: false) == "https://a.example")
        #expect(policy.allowOrigin(for: request("/x?app=b", origin: "https://a.example"), preflight: false) == nil)
        #expect(policy.allowOrigin(for: request("/x", origin: "https://a.example", method: .options), preflight: true) == "https://a.example")
        #expect(policy.allowOrigin(for: request("/x?app=a", origin: "https://b.example"), preflight: false) == nil)
    }

    @Test func errorMessagesRepeatAtMost200BytesOfThePath() {
        #expect(HTTPConnection.shown("/v1/short") == "/v1/short")
        let exact = "/" + String(repeating: "a", count: 199)
        #expect(HTTPConnection.shown(exact) == exact)
        let long = "/" + String(repeating: "b", count: 15_000)
        #expect(HTTPConnection.shown(long) == String(long.prefix(200)) + "…")
        // A character is never cut in two: 2-byte é from byte 199 on stops at 199 bytes.
        let accented = "/" + String(repeating: "c", count: 198) + String(repeating: "é", count: 10)
        let shown = HTTPConnection.shown(accented)
        #expect(shown == "/" + String(repeating: "c", count: 198) + "…")
        #expect(shown.utf8.count - "…".utf8.count <= HTTPConnection.shownPathBytes)
    }

    @Test func theHeadOfABodyBeingReadIsAvailableBeforeTheBody() throws {
        var parser = HTTPRequestParser()
        parser.append(Array("POST /v1/publish?x=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n".utf8))
        let early = try parser.next()
        #expect(early == nil)
        let asksForBody = parser.takeContinueRequest()
        #expect(asksForBody)
        let head = try #require(parser.headOfBodyBeingRead)
        #expect(head.method == .post && head.path == "/v1/publish" && head.query == "x=1" && head.body.isEmpty)
        #expect(head.headers["Authorization"] == "Bearer k")
        parser.append(Array("hello".utf8))
        let complete = try parser.next()
        let whole = try #require(complete)
        #expect(whole.body == Array("hello".utf8))
        #expect(parser.headOfBodyBeingRead == nil)
    }

    @Test func headChecksAreFoundByMethodAndPattern() {
        var router = Router()
        router.post("/v1/items/{id}", { _ in .response(.empty(204)) })
        #expect(router.headCheck(method: .post, pattern: "/v1/items/{id}") == nil)
        router.checkHead(.post, "/v1/items/{id}") { context in
            context.pathParameters["id"] == "bad" ? .error(401, code: "unauthorized", message: "no") : nil
        }
        let check = router.headCheck(method: .post, pattern: "/v1/items/{id}")
        #expect(router.headCheck(method: .get, pattern: "/v1/items/{id}") == nil)
        let bad = RequestContext(request: request("/v1/items/bad", origin: nil, method: .post), pathParameters: ["id": "bad"],
                                 remoteAddress: "127.0.0.1", loopIndex: 0)
        let good = RequestContext(request: request("/v1/items/ok", origin: nil, method: .post), pathParameters: ["id": "ok"],
                                  remoteAddress: "127.0.0.1", loopIndex: 0)
        #expect(check?(bad)?.status == 401)
        #expect(check?(good) == nil)
    }
}
