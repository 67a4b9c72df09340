import Foundation
import Testing
@testable import Realtime

/// The router answers a path of a parameter-free route from its lookup table (issue 17); the
/// answers must be the scan's, which still serves every other spelling of the same path.
@Suite struct RouterTests {
    private func router() -> Router {
        var router = Router()
        let ok: RouteHandler = { _ in .response(.empty(204)) }
        router.get("/v1/items/{id}", ok)        // registered first: it wins /v1/items/unread for GET
        router.get("/v1/items/unread", ok)
        router.post("/v1/items/unread", ok)
        router.post("/v1/notifications", ok)
        router.delete("/v1/{thing}/all", ok)   // registered before the literal route below
        router.put("/v1/items/all", ok)
        router.get("/", ok)
        return router
    }

    /// `pattern` and parameters of a match, or `405 [methods]`, or `404`.
    private func describe(_ match: Router.Match) -> String {
        switch match {
        case .found(_, let parameters, let pattern, _):
            return pattern + " " + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        case .methodNotAllowed(let methods):
            return "405 " + methods.map(\.rawValue).joined(separator: ",")
        case .badParameter(let name):
            return "400 " + name
        case .notFound:
            return "404"
        }
    }

    @Test(arguments: [
        ("GET", "/v1/items/unread", "/v1/items/{id} id=unread"),
        ("HEAD", "/v1/items/unread", "/v1/items/{id} id=unread"),
        ("POST", "/v1/items/unread", "/v1/items/unread "),
        ("DELETE", "/v1/items/unread", "405 GET,GET,POST"),
        ("POST", "/v1/notifications", "/v1/notifications "),
        ("GET", "/v1/notifications", "405 POST"),
        ("DELETE", "/v1/items/all", "/v1/{thing}/all thing=items"),
        ("PUT", "/v1/items/all", "/v1/items/all "),
        ("GET", "/v1/items/all", "/v1/items/{id} id=all"),
        ("PATCH", "/v1/items/all", "405 GET,DELETE,PUT"),
        ("GET", "/", "/ "),
        ("POST", "/", "405 GET"),
        ("GET", "/v1/nothing", "404"),
    ])
    func aStaticPathAnswersAsTheScanDoes(_ method: String, _ path: String, _ expected: String) {
        let router = router()
        // The same path with a trailing slash misses the table: the scan must give the same answer.
        for path in path == "/" ? [path] : [path, path + "/"] {
            let match = router.match(method: HTTPMethod(method), path: path)
            #expect(describe(match) == expected)
            // The metrics label: the matched route's method (GET for HEAD) and pattern.
            if case .found(_, _, let pattern, let label) = match {
                #expect(label == "\(method == "HEAD" ? "GET" : method) \(pattern)")
            }
        }
    }

    /// An empty segment matches nothing: a client that builds `/v1/jobs/\(id)/retry` with an
    /// empty id must get 404, not the bulk `/v1/jobs/retry` (found by a new user's run).
    @Test(arguments: ["/v1/jobs//retry", "//v1/jobs/retry", "/v1//jobs/retry", "/v1/jobs/retry//", "//", "/v1/jobs/7//"])
    func aPathWithAnEmptySegmentMatchesNoRoute(_ path: String) {
        var router = Router()
        let ok: RouteHandler = { _ in .response(.empty(204)) }
        router.post("/v1/jobs/retry", ok)
        router.post("/v1/jobs/{id}/retry", ok)
        router.get("/v1/jobs/{id}", ok)
        router.get("/", ok)
        #expect(describe(router.match(method: .post, path: path)) == "404")
        #expect(describe(router.match(method: .get, path: path)) == "404")
        #expect(describe(router.match(method: .post, path: "/v1/jobs/7/retry")) == "/v1/jobs/{id}/retry id=7")
        #expect(describe(router.match(method: .post, path: "/v1/jobs/retry/")) == "/v1/jobs/retry ")
    }

    /// A parameter segment that is not percent-encoded UTF-8 (`%FF`, a lone `%`) names the
    /// resource wrongly: a 400 naming the parameter when a route of the method has the path's
    /// shape (it was a 404 "no route", found by a new user's run); other methods still get 405,
    /// other shapes 404, and a good encoding still binds.
    @Test func anUndecodableParameterIsA400NamingIt() {
        var router = Router()
        let ok: RouteHandler = { _ in .response(.empty(204)) }
        router.delete("/v1/sessions/{sid}", ok)
        router.get("/v1/users/{user}/sessions/{sid}", ok)
        #expect(describe(router.match(method: .delete, path: "/v1/sessions/%FF")) == "400 sid")
        #expect(describe(router.match(method: .delete, path: "/v1/sessions/%")) == "400 sid")
        #expect(describe(router.match(method: .delete, path: "/v1/sessions/%C3%A9")) == "/v1/sessions/{sid} sid=é")
        #expect(describe(router.match(method: .get, path: "/v1/sessions/%FF")) == "404")
        #expect(describe(router.match(method: .get, path: "/v1/users/%FE/sessions/%FF")) == "400 user")
        #expect(describe(router.match(method: .delete, path: "/v1/sessions/%FF/x")) == "404")
    }

    /// `Authorization: Bearer` is read one way for tokens and keys (RFC 9110 §11.4): any case of
    /// the scheme, one or more spaces, trailing whitespace dropped; nothing else is a credential.
    @Test(arguments: [
        ("Bearer abc", "abc"), ("bearer abc", "abc"), ("BEARER abc", "abc"), ("Bearer  abc", "abc"),
        ("Bearer\tabc", "abc"), ("Bearer abc  ", "abc"), ("Bearer a b", "a b"), ("Bearer é€", "é€"),
        ("Bearer", nil), ("Bearer ", nil), ("Bearer   ", nil), ("Bearerabc", nil), ("Basic abc", nil),
        ("Bear abc", nil), ("", nil), ("Béarer abc", nil),
    ] as [(String, String?)])
    func bearerCredentialsAreReadOneWay(_ header: String, _ expected: String?) {
        #expect(RequestContext.bearerCredentials(in: header).map(String.init) == expected)
    }
}
