import Realtime
import Synchronization

/// The routes Herald serves together with their OpenAPI operations. Registering goes through a
/// `RouteSpec`, so a route cannot exist without its entry in `/openapi.json`; `Router` itself
/// stays in Realtime and knows nothing of OpenAPI.
struct RouteTable {
    private(set) var router = Router()
    /// Every documented operation, in declaration order.
    private(set) var specs: [RouteSpec] = []

    /// Registers `handler` at the spec's method and path.
    mutating func on(_ spec: RouteSpec, _ handler: @escaping RouteHandler) {
        specs.append(spec)
        router.on(spec.method, spec.path, handler)
    }

    /// Gives each route declared so far the head check `check` makes for its spec (nil: none),
    /// run before a body the client waits to send (`Router.checkHead`).
    mutating func checkHeads(_ check: (RouteSpec) -> Router.HeadCheck?) {
        for spec in specs {
            if let headCheck = check(spec) { router.checkHead(spec.method, spec.path, headCheck) }
        }
    }

    /// Registers `spec`'s route answering with the document of every spec declared so far,
    /// `spec` included.
    mutating func serveDocument(_ spec: RouteSpec) {
        specs.append(spec)
        let document = LazyDocument(specs: specs)
        router.on(spec.method, spec.path) { _ in .response(.json(200, document.text)) }
    }

    /// Documents routes this process does not serve in its configuration: the dev-mode routes
    /// are in the document whether or not `HERALD_DEV=1`, so the document does not depend on
    /// the deployment.
    mutating func document(_ specs: [RouteSpec]) {
        self.specs += specs
    }

    /// Registers a route that is deliberately missing from the document (the conformance-only
    /// WebSocket echo, which a production server never has).
    mutating func undocumented(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping RouteHandler) {
        router.on(method, pattern, handler)
    }
}

/// `/openapi.json`, built when it is first asked for. Built at start, the 132 KB document (and
/// the heap its schemas' decoding and writing left behind, and the JSON code pages it touched)
/// cost every process 1.2 MB of RSS, 0.75 MB of it private, though most never serve it (issue 17,
/// idle footprint). Same bytes either way; the first request pays the few ms of building it.
private final class LazyDocument: Sendable {
    private let state: Mutex<(specs: [RouteSpec], text: String?)>

    init(specs: [RouteSpec]) { state = Mutex((specs, nil)) }

    /// The compact JSON text; the first call builds it (a few ms) and drops the specs.
    var text: String {
        state.withLock { state in
            if let text = state.text { return text }
            let text = OpenAPIDocument.build(routes: state.specs).compactText
            state = ([], text)
            return text
        }
    }
}
