import Foundation
import Realtime

/// The OpenAPI 3.1 document served at `GET /openapi.json` (SPEC OP-7), assembled from the
/// `RouteSpec` of every route and the shared `OpenAPIComponents`.
enum OpenAPIDocument {
    static let info: JSONValue = .object([
        ("title", .string("Herald")),
        ("version", .string("0.1.0")),
        ("summary", .string("Realtime invalidation streams (SSE and WebSocket), presence, the push-device registry, and notifications (inbox, preferences, push planning).")),
        ("description", .string(#"Herald's HTTP API (docs/api.md; stream protocol in docs/protocol.md). Every error is `{"error", "message"}` plus `field` for validation errors. `HEAD` is answered for every `GET` route; unknown paths are 404 `not_found`, other methods on a known path 405 `method_not_allowed` with `Allow` (`#/components/responses/MethodNotAllowed`). Malformed HTTP is refused before routing (400, 408, 413, 431, 501, 505). Every routed answer carries `X-Request-Id` (`#/components/headers/XRequestId`). A 500 `internal_error` is a server fault on any route, not part of any operation's contract."#)),
    ])

    /// The tags, in the order documentation tools list them.
    static let tags: [(name: String, description: String)] = [
        ("operations", "Health and this document."),
        ("client", "Apps and browsers, with an access token."),
        ("devices", "Push devices of the caller (DV-1 to DV-3)."),
        ("compatibility", "The routes of the seed apps (DV-5)."),
        ("server", "The app backend, with the server key: publishing, presence, sessions, jobs."),
        ("notifications", "Notifications (NO-1 to NO-8): sending and delivery records (server key), the inbox and push preferences (access token), scope members (server key)."),
        ("dev", "Dev mode only (`HERALD_DEV=1`)."),
        ("apps", "Apps (tenants), with the admin key (AP-1, AP-2)."),
    ]

    /// The document of `specs`: one path item per path, in order of first declaration.
    static func build(routes specs: [RouteSpec]) -> JSONValue {
        var paths: [(String, [(String, JSONValue)])] = []
        for spec in specs {
            let path = spec.documentPath
            let operation = (spec.method.rawValue.lowercased(), spec.operation)
            if let index = paths.firstIndex(where: { $0.0 == path }) {
                precondition(!paths[index].1.contains { $0.0 == operation.0 }, "\(spec.method.rawValue) \(path) is declared twice")
                paths[index].1.append(operation)
            } else {
                paths.append((path, [operation]))
            }
        }
        return .object([
            ("openapi", .string("3.1.0")),
            ("info", info),
            ("servers", .array([.object([("url", .string("/"))])])),
            ("tags", .array(tags.map { .object([("name", .string($0.name)), ("description", .string($0.description))]) })),
            ("paths", .object(paths.map { ($0.0, .object($0.1)) })),
            ("components", OpenAPIComponents.json),
        ])
    }

    /// A `$ref` to `#/components/{section}/{name}`.
    static func reference(_ section: String, _ name: String) -> JSONValue {
        .object([("$ref", .string("#/components/\(section)/\(name)"))])
    }

    /// A JSON fragment of the document; the fragments are constants, so a bad one is a bug the
    /// OpenAPI tests catch.
    static func parse(_ text: String) -> JSONValue {
        do {
            return try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        } catch {
            preconditionFailure("OpenAPI fragment is not JSON (\(error)): \(text.prefix(200))")
        }
    }
}
