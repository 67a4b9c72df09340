import Foundation
import Realtime

/// One route's OpenAPI operation, declared beside the route: `RouteTable.on` registers a route
/// only together with its spec, and `OpenAPIDocument.build` assembles `/openapi.json` from the
/// specs, so the document cannot drift from the routes (OP-7).
struct RouteSpec: Sendable {
    let method: HTTPMethod
    /// The router pattern, `/literal/{param}/…`.
    let path: String
    let auth: RouteAuth
    let operationID: String
    let tags: [String]
    let summary: String
    let description: String?
    let parameters: [OpenAPIParameter]
    let requestBody: OpenAPIRequestBody?
    /// Status code → response; written in ascending status order.
    let responses: [Int: OpenAPIResponse]

    init(_ method: HTTPMethod, _ path: String, auth: RouteAuth, operationID: String, tags: [String], summary: String,
         description: String? = nil, parameters: [OpenAPIParameter] = [], requestBody: OpenAPIRequestBody? = nil,
         responses: [Int: OpenAPIResponse]) {
        self.method = method
        self.path = path
        self.auth = auth
        self.operationID = operationID
        self.tags = tags
        self.summary = summary
        self.description = description
        self.parameters = parameters
        self.requestBody = requestBody
        var responses = responses
        // A route that may meet a busy database may meet a full disk too: storage failures are
        // mapped in one place (`DatabaseResponder`), so their 507 is declared in one place.
        if case .shared("StorageUnavailable", _)? = responses[503], responses[507] == nil { responses[507] = .storageFull }
        // Any request may carry headers past the limit, arrive too slowly, name a transfer coding
        // or an HTTP version Herald does not speak: the parser refuses them before routing.
        if responses[431] == nil { responses[431] = .headerTooLarge }
        if responses[408] == nil { responses[408] = .requestTimeout }
        if responses[501] == nil { responses[501] = .notImplemented }
        if responses[505] == nil { responses[505] = .versionNotSupported }
        // Any route that reads credentials refuses `Authorization` given twice, and an access
        // token sent both in it and as `?access_token=` (`Authenticator`).
        if case .none = auth {} else if responses[400] == nil { responses[400] = .invalidRequest }
        self.responses = responses
    }

    /// The document's path key: the pattern without empty segments (`/demo/` routes as `/demo`).
    var documentPath: String {
        "/" + path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
    }

    /// The operation object.
    var operation: JSONValue {
        var members: [(String, JSONValue)] = [
            ("tags", .array(tags.map(JSONValue.string))),
            ("summary", .string(summary)),
        ]
        if let description { members.append(("description", .string(description))) }
        members.append(("operationId", .string(operationID)))
        members.append(("security", auth.security))
        if !parameters.isEmpty { members.append(("parameters", .array(parameters.map(\.json)))) }
        if let requestBody { members.append(("requestBody", requestBody.json)) }
        members.append(("responses", .object(responses.sorted { $0.key < $1.key }.map { (String($0.key), $0.value.json) })))
        return .object(members)
    }
}

/// Who may call a route, stated as the operation's `security`.
enum RouteAuth: Sendable {
    /// Anyone (health, this document, the dev token minter, the demo's files).
    case none
    /// A client access token, in `Authorization: Bearer` or `?access_token=`.
    case accessToken
    /// An access token on the request, or none there and the token in the first message (WebSocket).
    case accessTokenOrFirstMessage
    /// `HERALD_SERVER_KEY`, for the app backend.
    case serverKey
    /// `HERALD_ADMIN_KEY`, for the admin API of apps.
    case adminKey

    var security: JSONValue {
        let token: [JSONValue] = [.object([("accessToken", .array([]))]), .object([("accessTokenQuery", .array([]))])]
        switch self {
        case .none: return .array([])
        case .accessToken: return .array(token)
        case .accessTokenOrFirstMessage: return .array(token + [.object([])])
        case .serverKey: return .array([.object([("serverKey", .array([]))])])
        case .adminKey: return .array([.object([("adminKey", .array([]))])])
        }
    }
}

/// A JSON Schema in the document.
enum OpenAPISchema: Sendable {
    /// `#/components/schemas/{name}`.
    case ref(String)
    /// The shared `Error` narrowed to these `error` codes.
    case error([String])
    /// A schema written out as JSON text.
    case json(String)

    var json: JSONValue {
        switch self {
        case .ref(let name): return OpenAPIDocument.reference("schemas", name)
        case .error(let codes):
            let narrowed: JSONValue = .object([("properties", .object([("error", .object([("enum", .array(codes.map(JSONValue.string)))]))]))])
            return .object([("allOf", .array([OpenAPIDocument.reference("schemas", "Error"), narrowed]))])
        case .json(let text): return OpenAPIDocument.parse(text)
        }
    }
}

/// One parameter of an operation.
enum OpenAPIParameter: Sendable {
    /// `#/components/parameters/{name}`.
    case shared(String)
    case inline(name: String, location: String, required: Bool, description: String?, schema: OpenAPISchema)

    /// A path parameter (always required).
    static func path(_ name: String, _ description: String?, _ schema: OpenAPISchema) -> OpenAPIParameter {
        .inline(name: name, location: "path", required: true, description: description, schema: schema)
    }

    /// A query parameter.
    static func query(_ name: String, _ description: String?, _ schema: OpenAPISchema, required: Bool = false) -> OpenAPIParameter {
        .inline(name: name, location: "query", required: required, description: description, schema: schema)
    }

    /// A header parameter.
    static func header(_ name: String, _ description: String?, _ schema: OpenAPISchema, required: Bool) -> OpenAPIParameter {
        .inline(name: name, location: "header", required: required, description: description, schema: schema)
    }

    var json: JSONValue {
        switch self {
        case .shared(let name): return OpenAPIDocument.reference("parameters", name)
        case .inline(let name, let location, let required, let description, let schema):
            var members: [(String, JSONValue)] = [("name", .string(name)), ("in", .string(location)), ("required", .bool(required))]
            if let description { members.append(("description", .string(description))) }
            members.append(("schema", schema.json))
            return .object(members)
        }
    }
}

/// The request body of an operation.
enum OpenAPIRequestBody: Sendable {
    /// `#/components/requestBodies/{name}`.
    case shared(String)
    /// A required `application/json` body.
    case json(OpenAPISchema)
    /// An `application/json` body the caller may leave out (an empty body means its defaults).
    case optionalJSON(OpenAPISchema)

    var json: JSONValue {
        switch self {
        case .shared(let name): return OpenAPIDocument.reference("requestBodies", name)
        case .json(let schema), .optionalJSON(let schema):
            let required: Bool = if case .json = self { true } else { false }
            return .object([("required", .bool(required)),
                            ("content", .object([("application/json", .object([("schema", schema.json)]))]))])
        }
    }
}

/// One response of an operation.
enum OpenAPIResponse: Sendable {
    /// `#/components/responses/{name}`, optionally with this operation's own description.
    case shared(String, description: String? = nil)
    /// A response written out here. `content` maps media types to their schema (nil: any body);
    /// `headers` and `links` are JSON text of the OpenAPI objects.
    case inline(description: String, content: [String: OpenAPISchema?], headers: String?, links: String?)

    /// An `application/json` response.
    static func json(_ description: String, _ schema: OpenAPISchema, headers: String? = nil, links: String? = nil) -> OpenAPIResponse {
        .inline(description: description, content: ["application/json": schema], headers: headers, links: links)
    }

    /// A response of other media types, or (empty `content`) without a body.
    static func content(_ description: String, _ content: [String: OpenAPISchema?] = [:], headers: String? = nil) -> OpenAPIResponse {
        .inline(description: description, content: content, headers: headers, links: nil)
    }

    var json: JSONValue {
        switch self {
        case .shared(let name, let description):
            var members = [("$ref", JSONValue.string("#/components/responses/\(name)"))]
            if let description { members.append(("description", .string(description))) }
            return .object(members)
        case .inline(let description, let content, let headers, let links):
            var members: [(String, JSONValue)] = [("description", .string(description))]
            members.append(("headers", Self.addingRequestID(to: headers.map(OpenAPIDocument.parse))))
            if !content.isEmpty {
                members.append(("content", .object(content.sorted { $0.key < $1.key }.map { type, schema in
                    (type, .object(schema.map { [("schema", $0.json)] } ?? []))
                })))
            }
            if let links { members.append(("links", OpenAPIDocument.parse(links))) }
            return .object(members)
        }
    }
}

extension OpenAPIResponse {
    /// The `X-Request-Id` header every routed answer carries (`HTTPConnection` adds it).
    static let requestIDHeader: (String, JSONValue) = ("X-Request-Id", OpenAPIDocument.reference("headers", "XRequestId"))

    /// A response's `headers` object with `X-Request-Id` added (kept first when already there).
    static func addingRequestID(to headers: JSONValue?) -> JSONValue {
        guard case .object(let members)? = headers else { return .object([requestIDHeader]) }
        return members.contains { $0.0 == requestIDHeader.0 } ? .object(members) : .object(members + [requestIDHeader])
    }

    /// The shared `responses` object with `X-Request-Id` in each response's `headers`.
    static func withRequestID(_ responses: JSONValue) -> JSONValue {
        guard case .object(let named) = responses else { preconditionFailure("responses are not an object") }
        return .object(named.map { name, response in
            guard case .object(var members) = response else { preconditionFailure("response \(name) is not an object") }
            if let index = members.firstIndex(where: { $0.0 == "headers" }) {
                members[index].1 = addingRequestID(to: members[index].1)
            } else {
                members.insert(("headers", addingRequestID(to: nil)), at: 1)
            }
            return (name, .object(members))
        })
    }
}
