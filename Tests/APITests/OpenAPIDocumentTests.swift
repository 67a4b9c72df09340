import Foundation
import Testing

@testable import API
import Realtime
import HeraldCore
import RealtimeMemory

/// OP-7: `GET /openapi.json` documents exactly the routes `HeraldAPI.router` registers.
@Suite("OpenAPI document")
struct OpenAPIDocumentTests {
    /// The methods an OpenAPI path item may hold.
    static let operationKeys: Set<String> = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    /// The parsed document.
    static func document() throws -> [String: Any] {
        let parsed = try JSONSerialization.jsonObject(with: Data(try documentText(dev: true).utf8))
        return try #require(parsed as? [String: Any], "the document is not a JSON object")
    }

    /// The document built from the specs `HeraldAPI` declares, with or without dev mode.
    static func documentText(dev: Bool) throws -> String {
        try withRoutes(dev: dev) { OpenAPIDocument.build(routes: $0.specs).compactText }
    }

    /// `body` applied to Herald's routes, with every optional route on except the conformance-only echo.
    static func withRoutes<T>(dev: Bool, echo: Bool = false, _ body: (RouteTable) throws -> T) throws -> T {
        var configuration = APIConfiguration(serverKey: "k", verificationKeys: [],
                                             devIssuer: dev ? AccessTokenIssuer(secret: Array("x".utf8)) : nil)
        configuration.webSocketEcho = echo
        let group = try EventLoopGroup(count: 1)
        let database = UnavailableStorage()
        return try body(HeraldAPI.routes(configuration: configuration, node: RealtimeNode(group: group, broker: MemoryBroker(), presence: MemoryPresenceStore()),
                                         database: database, sessions: SessionRegistry()))
    }

    /// Every operation of the document as `(METHOD, path, operation)`.
    static func operations(_ document: [String: Any]) throws -> [(method: String, path: String, operation: [String: Any])] {
        let paths = try #require(document["paths"] as? [String: Any], "paths is not an object")
        var out: [(String, String, [String: Any])] = []
        for (path, item) in paths.sorted(by: { $0.key < $1.key }) {
            let item = try #require(item as? [String: Any], "\(path) is not a path item object")
            for (key, value) in item where operationKeys.contains(key) {
                out.append((key.uppercased(), path, try #require(value as? [String: Any], "\(key) \(path) is not an operation")))
            }
        }
        return out
    }

    /// The routes Herald serves, with every optional route on except the conformance-only echo.
    static func routeSignatures() throws -> Set<String> {
        try withRoutes(dev: true) { Set($0.router.routeSignatures.map { "\($0.method) \($0.pattern)" }) }
    }

    @Test("parses as an OpenAPI 3.1.0 document of Herald")
    func parses() throws {
        let document = try Self.document()
        #expect(document["openapi"] as? String == "3.1.0")
        let info = try #require(document["info"] as? [String: Any])
        #expect(info["title"] as? String == "Herald")
        #expect(info["version"] as? String == "0.1.0")
        let servers = try #require(document["servers"] as? [[String: Any]])
        #expect(servers.first?["url"] as? String == "/")
        let components = try #require(document["components"] as? [String: Any])
        let schemes = try #require(components["securitySchemes"] as? [String: Any])
        let accessToken = try #require(schemes["accessToken"] as? [String: Any])
        #expect(accessToken["type"] as? String == "http")
        #expect(accessToken["scheme"] as? String == "bearer")
        #expect(accessToken["bearerFormat"] as? String == "JWT")
        let serverKey = try #require(schemes["serverKey"] as? [String: Any])
        #expect(serverKey["type"] as? String == "http")
        #expect(serverKey["scheme"] as? String == "bearer")
        let schemas = try #require(components["schemas"] as? [String: Any])
        let error = try #require(schemas["Error"] as? [String: Any])
        #expect(Set(error["required"] as? [String] ?? []) == ["error", "message"])
        let properties = try #require(error["properties"] as? [String: Any])
        #expect(Set(properties.keys).isSuperset(of: ["error", "message", "field", "channel"]))
        #expect(error["additionalProperties"] as? Bool == false)
    }

    @Test("documents every route, and no route that does not exist")
    func routesMatchDocument() throws {
        let routes = try Self.routeSignatures()
        let documented = Set(try Self.operations(Self.document()).map { "\($0.method) \($0.path)" })
        let undocumented = routes.subtracting(documented).sorted()
        let unrouted = documented.subtracting(routes).sorted()
        #expect(undocumented.isEmpty, "routes without a RouteSpec: \(undocumented)")
        #expect(unrouted.isEmpty, "documented operations that HeraldAPI.router does not register: \(unrouted)")
        #expect(routes.contains("GET /openapi.json"))
    }

    @Test("every registered route has its spec, and only the conformance echo is undocumented")
    func everyRouteHasItsSpec() throws {
        try Self.withRoutes(dev: true, echo: true) { table in
            let routes = table.router.routeSignatures.map { "\($0.method) \($0.pattern)" }
            let specs = table.specs.map { "\($0.method.rawValue) \($0.documentPath)" }
            #expect(Set(routes).subtracting(specs) == ["GET /v1/ws/echo"])
            #expect(specs.count == Set(specs).count, "a route is declared twice")
            let operationIDs = table.specs.map(\.operationID)
            #expect(operationIDs.count == Set(operationIDs).count, "operationId is not unique")
        }
    }

    @Test("does not depend on dev mode: the dev routes are documented either way")
    func sameWithoutDevMode() throws {
        let dev = try Self.documentText(dev: true)
        #expect(dev == (try Self.documentText(dev: false)))
        #expect(dev.contains("\"/v1/dev/token\""))
    }

    @Test("every $ref resolves inside the document")
    func referencesResolve() throws {
        let document = try Self.document()
        var references: [String] = []
        func collect(_ value: Any) {
            if let object = value as? [String: Any] {
                for (key, member) in object {
                    if key == "$ref", let text = member as? String { references.append(text) } else { collect(member) }
                }
            } else if let array = value as? [Any] {
                array.forEach(collect)
            }
        }
        collect(document)
        #expect(!references.isEmpty)
        for reference in Set(references).sorted() {
            #expect(Self.resolve(reference, in: document) != nil, "unresolved $ref \(reference)")
        }
    }

    @Test("every operation declares security, its path parameters, a success and an error response")
    func operationsAreComplete() throws {
        let document = try Self.document()
        let components = try #require(document["components"] as? [String: Any])
        let schemes = try #require(components["securitySchemes"] as? [String: Any])
        for (method, path, operation) in try Self.operations(document) {
            let name = "\(method) \(path)"
            let responses = try #require(operation["responses"] as? [String: Any], "\(name) has no responses")
            let statuses = responses.keys.compactMap { Int($0) }
            #expect(statuses.contains { (200..<300).contains($0) || $0 == 101 }, "\(name) has no 2xx/101 response")
            #expect(statuses.contains { $0 >= 400 }, "\(name) has no error response")
            #expect(statuses.count == responses.count, "\(name) has a response key that is not a status code")

            let security = try #require(operation["security"] as? [[String: Any]], "\(name) does not declare its security")
            for requirement in security {
                for scheme in requirement.keys { #expect(schemes[scheme] != nil, "\(name) names unknown security scheme \(scheme)") }
            }

            let declared = Set(try (operation["parameters"] as? [Any] ?? []).compactMap { item -> String? in
                var parameter = try #require(item as? [String: Any])
                if let reference = parameter["$ref"] as? String {
                    parameter = try #require(Self.resolve(reference, in: document) as? [String: Any])
                }
                return parameter["in"] as? String == "path" ? parameter["name"] as? String : nil
            })
            let template = Set(path.split(separator: "/").filter { $0.hasPrefix("{") }.map { String($0.dropFirst().dropLast()) })
            #expect(declared == template, "\(name) declares path parameters \(declared.sorted()), its path has \(template.sorted())")
        }
    }

    /// What the transport answers on every route (docs/api.md "Limits and errors"): the parser's
    /// refusals, `X-Request-Id` on each answer, and 405 with `Allow` as a shared response.
    @Test("documents the transport's statuses, X-Request-Id and 405 with Allow")
    func transportAnswers() throws {
        let document = try Self.document()
        for (method, path, operation) in try Self.operations(document) {
            let responses = try #require(operation["responses"] as? [String: Any])
            for status in ["408", "431", "501", "505"] {
                #expect(responses[status] != nil, "\(method) \(path) lacks \(status)")
            }
            #expect(responses["500"] == nil, "\(method) \(path) documents a 500: a server fault is no operation's contract")
            for (status, response) in responses {
                var response = try #require(response as? [String: Any])
                if let reference = response["$ref"] as? String {
                    response = try #require(Self.resolve(reference, in: document) as? [String: Any], "\(reference)")
                }
                let headers = response["headers"] as? [String: Any]
                #expect(headers?["X-Request-Id"] != nil, "\(method) \(path) \(status) lacks X-Request-Id")
            }
        }
        let notAllowed = try #require(Self.resolve("#/components/responses/MethodNotAllowed", in: document) as? [String: Any])
        let allow = try #require((notAllowed["headers"] as? [String: Any])?["Allow"] as? [String: Any])
        #expect(allow["required"] as? Bool == true)
    }

    @Test("thread_id, sound and android_channel_id have one schema, 1-200 long, and collapse_key 1-64, on both send routes")
    func pushNamesShareOneSchema() throws {
        let document = try Self.document()
        let name = try #require(Self.resolve("#/components/schemas/PushName", in: document) as? [String: Any])
        #expect(name["minLength"] as? Int == 1)
        #expect(name["maxLength"] as? Int == NotificationRequest.maxPushNameScalars)
        for request in ["NotificationRequest", "PushNotificationRequest"] {
            let properties = try #require(Self.resolve("#/components/schemas/\(request)/properties", in: document) as? [String: Any])
            // collapse_key has the same 1-64 on both (push's said only the maximum; "" is refused on both).
            let collapseKey = try #require(properties["collapse_key"] as? [String: Any])
            #expect(collapseKey["minLength"] as? Int == 1 && collapseKey["maxLength"] as? Int == 64, "\(request).collapse_key")
            for member in ["thread_id", "sound", "android_channel_id"] {
                let schema = try #require(properties[member] as? [String: Any], "\(request) has no \(member)")
                #expect(schema as NSDictionary == ["$ref": "#/components/schemas/PushName"] as NSDictionary, "\(request).\(member)")
            }
        }
    }

    @Test("is served by the router at GET /openapi.json")
    func served() throws {
        let table = try Self.withRoutes(dev: false) { $0 }
        guard case .found(_, _, let pattern, _) = table.router.match(method: .get, path: "/openapi.json") else {
            Issue.record("GET /openapi.json is not routed")
            return
        }
        #expect(pattern == "/openapi.json")
        #expect(table.specs.last?.operationID == "openapi")
    }

    /// Resolves a local JSON pointer (`#/components/schemas/Error`).
    static func resolve(_ reference: String, in document: [String: Any]) -> Any? {
        guard reference.hasPrefix("#/") else { return nil }
        var current: Any = document
        for raw in reference.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let token = raw.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if let object = current as? [String: Any], let next = object[token] {
                current = next
            } else if let array = current as? [Any], let index = Int(token), array.indices.contains(index) {
                current = array[index]
            } else {
                return nil
            }
        }
        return current
    }
}
