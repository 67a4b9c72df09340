import Dispatch
import Foundation
import Testing

@testable import API
@testable import Realtime
import HeraldCore
import RealtimeMemory

/// OP-6: the web demo's files are served from one directory and nothing outside it, and the
/// dev helper fills in the caller as the recipient.
@Suite("Demo routes")
struct DemoRoutesTests {
    /// A temporary demo directory with an index, a script, a hidden file and a symbolic link
    /// pointing outside; removed by `cleanUp()`.
    struct Fixture {
        let root: URL
        let directory: URL

        init() throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent("herald-demo-\(UUID().uuidString)")
            directory = root.appendingPathComponent("web-demo")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data("<!doctype html><title>demo</title>".utf8).write(to: directory.appendingPathComponent("index.html"))
            try Data("export const x = 1;".utf8).write(to: directory.appendingPathComponent("app.js"))
            try Data("secret".utf8).write(to: directory.appendingPathComponent(".env"))
            try Data("outside".utf8).write(to: root.appendingPathComponent("outside.txt"))
            try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent("link.txt").path,
                                                       withDestinationPath: root.appendingPathComponent("outside.txt").path)
        }

        func cleanUp() { try? FileManager.default.removeItem(at: root) }
    }

    /// The routes over `directory`; the file routes touch neither the database nor the node.
    static func routes(directory: String) throws -> DemoRoutes {
        let configuration = APIConfiguration(serverKey: "k", verificationKeys: [])
        let authenticator = Authenticator(configuration: configuration)
        let database = UnavailableStorage()
        let node = RealtimeNode(group: try EventLoopGroup(count: 1), broker: MemoryBroker(), presence: MemoryPresenceStore())
        let notifications = NotificationRoutes(authenticator: authenticator, configuration: configuration,
                                               responder: DatabaseResponder(database: database),
                                               notifier: Notifier(database: database, broker: node.broker, presence: node.presence, barrier: node,
                                                                  providers: nil, catalog: .empty),
                                               presence: node.presence, push: nil)
        return DemoRoutes(authenticator: authenticator, directory: directory, notifications: notifications,
                          presence: PresenceRoutes(authenticator: authenticator, presence: node.presence, storage: database), pushDouble: nil)
    }

    /// Runs a route result to its response (waiting for a deferred one).
    static func response(_ result: RouteResult) throws -> HTTPResponse {
        switch result {
        case .response(let response):
            return response
        case .deferred(let work):
            let done = DispatchSemaphore(value: 0)
            let box = Box()
            work(ResponseWriter { response in
                box.set(response)
                done.signal()
            })
            #expect(done.wait(timeout: .now() + 5) == .success, "the deferred route never answered")
            return try #require(box.get())
        default:
            Issue.record("a file route answered with a stream")
            throw CancellationError()
        }
    }

    final class Box: @unchecked Sendable {
        private let lock = NSLock()
        private var value: HTTPResponse?
        func set(_ response: HTTPResponse) { lock.withLock { value = response } }
        func get() -> HTTPResponse? { lock.withLock { value } }
    }

    @Test("file names: plain names with a known extension only")
    func names() {
        for good in ["index.html", "app.js", "herald-client.js", "style.css", "a_b-c.1.json"] {
            #expect(DemoRoutes.isServableName(good), "\(good)")
        }
        for bad in ["", ".env", "..", "../Package.swift", "a/b.js", "a\\b.js", "%2e%2e", "x y.js", String(repeating: "a", count: 101) + ".js"] {
            #expect(!DemoRoutes.isServableName(bad), "\(bad)")
        }
        #expect(DemoRoutes.fileExtension("herald-client.JS") == "js")
        #expect(DemoRoutes.contentTypes[DemoRoutes.fileExtension("run.sh")] == nil)
    }

    @Test("serves the directory's files, typed and uncached")
    func servesFiles() throws {
        let fixture = try Fixture()
        defer { fixture.cleanUp() }
        let routes = try Self.routes(directory: fixture.directory.path)

        let index = try Self.response(routes.file("index.html"))
        #expect(index.status == 200)
        #expect(index.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(index.headers["Cache-Control"] == "no-cache")
        #expect(index.headers["Content-Security-Policy"]?.contains("script-src 'self'") == true)
        #expect(String(decoding: index.body, as: UTF8.self).contains("<title>demo</title>"))

        let script = try Self.response(routes.file("app.js"))
        #expect(script.status == 200)
        #expect(script.headers["Content-Type"] == "text/javascript; charset=utf-8")
        #expect(script.headers["Cache-Control"] == "no-cache")
    }

    @Test("nothing outside the directory, hidden, unknown or missing is served")
    func refusesOthers() throws {
        let fixture = try Fixture()
        defer { fixture.cleanUp() }
        let routes = try Self.routes(directory: fixture.directory.path)
        for name in [".env", "../outside.txt", "link.txt", "missing.js", "app.sh", "web-demo"] {
            let response = try Self.response(routes.file(name))
            #expect(response.status == 404, "\(name) answered \(response.status)")
            #expect(String(decoding: response.body, as: UTF8.self).contains("\"not_found\""))
        }
    }

    @Test("a missing directory is a 404, not an error")
    func missingDirectory() throws {
        let routes = try Self.routes(directory: "/nonexistent/herald-web-demo")
        #expect(try Self.response(routes.file("index.html")).status == 404)
    }

    @Test("the dev helper names the caller as recipient when the body names none")
    func defaultRecipients() throws {
        let filled = try DemoRoutes.insertingRecipients(userID: "u\"1", into: Array(#" {"kind":"demo","title":"Hi"}"#.utf8))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(filled)) as? [String: Any])
        #expect((object["recipients"] as? [String: Any])?["user_ids"] as? [String] == ["u\"1"])
        #expect(object["kind"] as? String == "demo")

        let empty = try DemoRoutes.insertingRecipients(userID: "u", into: Array("{ }".utf8))
        #expect(String(decoding: empty, as: UTF8.self) == #"{"recipients":{"user_ids":["u"]} }"#)

        #expect(throws: HTTPError.self) { try DemoRoutes.insertingRecipients(userID: "u", into: Array("[1]".utf8)) }
    }

    @Test("the demo and its helpers exist in dev mode only")
    func devOnly() throws {
        let database = UnavailableStorage()
        let node = RealtimeNode(group: try EventLoopGroup(count: 1), broker: MemoryBroker(), presence: MemoryPresenceStore())
        let production = HeraldAPI.router(configuration: APIConfiguration(serverKey: "k", verificationKeys: []),
                                          node: node, database: database, sessions: SessionRegistry())
        let dev = HeraldAPI.router(configuration: APIConfiguration(serverKey: "k", verificationKeys: [],
                                                                   devIssuer: AccessTokenIssuer(secret: Array("x".utf8))),
                                   node: node, database: database, sessions: SessionRegistry())
        for (method, path) in [(HTTPMethod.get, "/"), (.get, "/demo/"), (.get, "/demo/app.js"), (.post, "/v1/dev/notifications"),
                               (.get, "/v1/dev/notifications/n1/deliveries"), (.get, "/v1/dev/channels/generation:1/presence"),
                               (.get, "/v1/dev/push-double/requests")] {
            guard case .notFound = production.match(method: method, path: path) else {
                Issue.record("\(method) \(path) is routed outside dev mode")
                continue
            }
            guard case .found = dev.match(method: method, path: path) else {
                Issue.record("\(method) \(path) is not routed in dev mode")
                continue
            }
        }
    }
}
