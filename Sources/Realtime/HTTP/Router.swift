import Foundation

/// What a route handler asks the connection to do.
public enum RouteResult: Sendable {
    /// Send this response now.
    case response(HTTPResponse)
    /// The handler finishes elsewhere (worker pool, database) and calls the writer exactly once,
    /// from any thread; later pipelined requests wait their turn.
    case deferred(@Sendable (ResponseWriter) -> Void)
    /// Turn the connection into an SSE stream (RT-1).
    case eventStream(EventStreamRequest)
    /// Upgrade the connection to a WebSocket (RT-2).
    case webSocket(WebSocketRequest)
}

/// A route handler: a plain function of the request (Hummingbird style). Throw an
/// `HTTPResponseError` to answer with its response; anything else becomes a 500.
public typealias RouteHandler = @Sendable (RequestContext) throws -> RouteResult

/// Per-request data handed to a route; it lives as long as the request.
public struct RequestContext: Sendable {
    public let request: HTTPRequest
    /// Percent-decoded values of the `{name}` segments of the matched pattern.
    public let pathParameters: [String: String]
    /// The peer's numeric IP address.
    public let remoteAddress: String
    /// Index of the event loop serving the connection.
    public let loopIndex: Int

    /// The credentials of an `Authorization: Bearer <credentials>` value (RFC 9110 §11.4, RFC 6750
    /// §2.1): the scheme in any case, then one or more spaces (or tabs), trailing whitespace
    /// dropped. One reading for access tokens and keys alike: they used to differ on two spaces.
    ///
    /// - Returns: nil for another scheme, or for `Bearer` with nothing after it.
    public static func bearerCredentials(in header: String) -> Substring? {
        let utf8 = header.utf8
        var index = utf8.startIndex
        for expected in "bearer".utf8 {
            guard index < utf8.endIndex, utf8[index] | 0x20 == expected else { return nil }
            index = utf8.index(after: index)
        }
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        var start = index
        while start < utf8.endIndex, isSpace(utf8[start]) { start = utf8.index(after: start) }
        var end = utf8.endIndex
        while end > start, isSpace(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        guard start > index, start < end else { return nil }
        // Both ends sit next to ASCII bytes: valid String indices.
        return header[start..<end]
    }
}

/// Finishes a `.deferred` route from any thread by handing the response back to the loop.
public struct ResponseWriter: Sendable {
    let deliver: @Sendable (HTTPResponse) -> Void
    /// Sends `response`; only the first call counts.
    public func complete(_ response: HTTPResponse) { deliver(response) }
}

/// Method + path-pattern routing with `{param}` segments.
public struct Router: Sendable {
    private struct Route: Sendable {
        let method: HTTPMethod
        let pattern: String
        /// `METHOD pattern`, made once: every request's metrics label.
        let label: String
        let segments: [Segment]
        let handler: RouteHandler

        /// Whether the route answers `method`: its own, and HEAD for a GET route.
        func serves(_ method: HTTPMethod) -> Bool {
            self.method == method || (method == .head && self.method == .get)
        }
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// Outcome of matching a request.
    public enum Match {
        /// The handler, the path parameters, the route's pattern, and `METHOD pattern` with the
        /// route's method (GET for a HEAD request): a bounded metrics label.
        case found(RouteHandler, [String: String], pattern: String, label: String)
        /// The path exists under other methods (→ 405 with `Allow`).
        case methodNotAllowed([HTTPMethod])
        /// A route of this method has the path's shape, but the segment for its parameter `name`
        /// is not percent-encoded UTF-8 (`%FF`): the request names a resource wrongly, so it is a
        /// 400 naming the parameter, not a 404 saying no such route exists.
        case badParameter(name: String)
        case notFound
    }

    private var routes: [Route] = []

    /// Judges a request from its head alone, before its body is read (`checkHead`): nil lets it
    /// go on; a response refuses it.
    public typealias HeadCheck = @Sendable (RequestContext) -> HTTPResponse?

    /// Head checks by `METHOD pattern`.
    private var headChecks: [String: HeadCheck] = [:]

    /// Adds a check of the route at `method` and `pattern` that runs on a request's head when the
    /// client waits for `100 Continue` before sending the body (RFC 9110 §10.1.1): a request the
    /// route would refuse anyway (a missing or wrong key) gets its final answer instead, and no
    /// body is sent for nothing. The route's handler still checks everything when the request
    /// arrives whole.
    public mutating func checkHead(_ method: HTTPMethod, _ pattern: String, _ check: @escaping HeadCheck) {
        headChecks["\(method.rawValue) \(pattern)"] = check
    }

    /// The head check of the route at `method` and `pattern`, if it has one.
    public func headCheck(method: HTTPMethod, pattern: String) -> HeadCheck? {
        headChecks.isEmpty ? nil : headChecks["\(method.rawValue) \(pattern)"]
    }

    /// A route that matches one exact path, with the parameters it binds there.
    private struct Candidate: Sendable {
        let route: Int
        let parameters: [String: String]
    }

    /// For the path of every route without parameters (`/v1/notifications`): each route that
    /// matches that exact path text, in registration order, with what it binds. `match` looks such
    /// a path up with one hash instead of splitting it and trying every route (~18,000
    /// instructions a request with the API's routes, issue 17); any other path (parameters, a
    /// trailing slash) takes the scan, which gives the same answer.
    private var staticPaths: [String: [Candidate]] = [:]

    public init() {}

    /// Every registered route as `(method, pattern)`, in registration order (the OpenAPI test
    /// compares them with the document).
    public var routeSignatures: [(method: String, pattern: String)] {
        routes.map { route in
            let path = route.segments.map { segment -> String in
                switch segment {
                case .literal(let text): return text
                case .parameter(let name): return "{\(name)}"
                }
            }
            return (route.method.rawValue, "/" + path.joined(separator: "/"))
        }
    }

    /// Adds a route. `pattern` is `/literal/{param}/…`.
    public mutating func on(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping RouteHandler) {
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: true).map { part -> Segment in
            if part.hasPrefix("{"), part.hasSuffix("}") { return .parameter(String(part.dropFirst().dropLast())) }
            return .literal(String(part))
        }
        routes.append(Route(method: method, pattern: pattern, label: "\(method.rawValue) \(pattern)", segments: segments, handler: handler))
        let index = routes.count - 1
        for (path, candidates) in staticPaths {
            if let parts = Self.parts(path), let parameters = Self.bind(segments, to: parts).parameters {
                staticPaths[path] = candidates + [Candidate(route: index, parameters: parameters)]
            }
        }
        let literals = segments.compactMap { segment -> String? in
            if case .literal(let text) = segment { return text }
            return nil
        }
        let path = "/" + literals.joined(separator: "/")
        if literals.count == segments.count, staticPaths[path] == nil {
            let parts = Self.parts(path) ?? []
            staticPaths[path] = routes.indices.compactMap { index in
                Self.bind(routes[index].segments, to: parts).parameters.map { Candidate(route: index, parameters: $0) }
            }
        }
    }

    /// The segments of `path`, or nil when one is empty (`/v1/jobs//retry`, `//healthz`): such a
    /// path matches no route, since dropping the empty segment turned a client's missing id into
    /// another route (`POST /v1/jobs//retry` retried every dead job). One trailing slash is allowed.
    private static func parts(_ path: String) -> [Substring]? {
        var parts = path.split(separator: "/", omittingEmptySubsequences: false)
        if parts.first?.isEmpty == true { parts.removeFirst() }
        if parts.last?.isEmpty == true { parts.removeLast() }
        return parts.contains(where: \.isEmpty) ? nil : parts
    }

    public mutating func get(_ pattern: String, _ handler: @escaping RouteHandler) { on(.get, pattern, handler) }
    public mutating func post(_ pattern: String, _ handler: @escaping RouteHandler) { on(.post, pattern, handler) }
    public mutating func put(_ pattern: String, _ handler: @escaping RouteHandler) { on(.put, pattern, handler) }
    public mutating func delete(_ pattern: String, _ handler: @escaping RouteHandler) { on(.delete, pattern, handler) }

    /// Finds the handler for `method` and `path`. HEAD matches GET routes.
    public func match(method: HTTPMethod, path: String) -> Match {
        var allowed: [HTTPMethod] = []
        if let candidates = staticPaths[path] {
            for candidate in candidates {
                let route = routes[candidate.route]
                if route.serves(method) {
                    return .found(route.handler, candidate.parameters, pattern: route.pattern, label: route.label)
                }
                allowed.append(route.method)
            }
            return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
        }
        guard let parts = Self.parts(path) else { return .notFound }
        var undecodable: String?
        for route in routes {
            let parameters: [String: String]
            switch Self.bind(route.segments, to: parts) {
            case .mismatch: continue
            case .undecodable(let name):
                if undecodable == nil, route.serves(method) { undecodable = name }
                continue
            case .bound(let bound): parameters = bound
            }
            if route.serves(method) {
                return .found(route.handler, parameters, pattern: route.pattern, label: route.label)
            }
            allowed.append(route.method)
        }
        if let undecodable { return .badParameter(name: undecodable) }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed)
    }

    private enum Binding {
        case mismatch
        /// The literals match; this parameter's segment does not decode.
        case undecodable(String)
        case bound([String: String])

        var parameters: [String: String]? {
            if case .bound(let parameters) = self { return parameters }
            return nil
        }
    }

    private static func bind(_ segments: [Segment], to parts: [Substring]) -> Binding {
        guard segments.count == parts.count else { return .mismatch }
        var parameters: [String: String] = [:]
        var undecodable: String?
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal(let literal):
                guard part == literal else { return .mismatch }
            case .parameter(let name):
                guard let decoded = String(part).removingPercentEncoding, !decoded.isEmpty else {
                    if undecodable == nil { undecodable = name }
                    continue
                }
                parameters[name] = decoded
            }
        }
        if let undecodable { return .undecodable(undecodable) }
        return .bound(parameters)
    }
}

/// Cross-origin rules for browsers (Fetch standard, CORS protocol). Empty `allowedOrigins`
/// means no CORS headers at all; `["*"]` allows every origin.
public struct CORSPolicy: Sendable {
    public var allowedOrigins: [String]
    public var allowedHeaders = "Authorization, Content-Type, Last-Event-ID, Idempotency-Key"
    public var allowedMethods = "GET, HEAD, POST, PUT, DELETE, OPTIONS"
    public var maxAgeSeconds = 600
    /// Origins allowed besides `allowedOrigins`, asked at each request with an `Origin`: the apps'
    /// `cors_origins` (ADR 0006), which change while the server runs. Called with the request and
    /// whether it is a preflight: a preflight carries no credentials, so it can only ask whether
    /// any app lists the origin; any other request is its credentials' app's, and only that app's
    /// list counts.
    public var moreOrigins: (@Sendable (_ origin: String, _ request: HTTPRequest, _ preflight: Bool) -> Bool)?

    public init(allowedOrigins: [String] = []) {
        self.allowedOrigins = allowedOrigins
    }

    /// The `Access-Control-Allow-Origin` value for `request`'s `Origin`, or nil to send none.
    /// - Parameter preflight: `request` is an `OPTIONS` preflight (it has `Access-Control-Request-Method`).
    public func allowOrigin(for request: HTTPRequest, preflight: Bool) -> String? {
        guard let origin = request.headers["Origin"] else { return nil }
        if allowedOrigins.contains("*") { return "*" }
        if allowedOrigins.contains(origin) || moreOrigins?(origin, request, preflight) == true { return origin }
        return nil
    }
}
