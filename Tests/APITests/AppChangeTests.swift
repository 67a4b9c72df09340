import Dispatch
import Foundation
import HeraldCore
import Synchronization
import Testing

@testable import API
@testable import Realtime

/// `POST|PATCH /v1/apps` bodies (docs/api.md "PATCH /v1/apps/{app}"): `null` clears a member, a
/// secret included, or is refused naming the member and saying why; and how an app change's
/// answer learns whether the other nodes were told (the control bus, ADR 0006).
@Suite("App changes")
struct AppChangeTests {
    static func read(_ json: String, into settings: inout AppSettings) throws(HTTPError) -> AppChange {
        let object = try! JSONSerialization.jsonObject(with: Data(json.utf8)) as! [String: Any]
        return try AppChange.read(object, into: &settings)
    }

    static func refusal(_ json: String) -> HTTPError? {
        var settings = AppSettings()
        do {
            _ = try read(json, into: &settings)
            return nil
        } catch {
            return error
        }
    }

    @Test func aNullSecretIsRecordedAsAClearNotDropped() throws {
        var settings = AppSettings()
        let change = try Self.read(#"{"tokens": {"hs256_secret": null}, "push": {"apns": null, "expo": null}}"#, into: &settings)
        // Present with a nil value: the route removes the sealed secret (an absent key would keep it).
        #expect(change.secrets.keys.sorted { $0.rawValue < $1.rawValue } == [.apnsKey, .expoAccessToken, .jwtSecret].sorted { $0.rawValue < $1.rawValue })
        for field in [AppSecretField.jwtSecret, .apnsKey, .expoAccessToken] {
            #expect(change.secrets[field] == .some(nil))
        }
        let set = try Self.read(#"{"tokens": {"hs256_secret": "a-secret-of-32-bytes-0123456789ab"}}"#, into: &settings)
        #expect(set.secrets[.jwtSecret] == .some(Array("a-secret-of-32-bytes-0123456789ab".utf8)))
        #expect(try Self.read("{}", into: &settings).secrets.isEmpty)
    }

    @Test func nullClearsListsAndOptionalMembers() throws {
        var settings = AppSettings()
        settings.tokens.publicKeys = ["pem"]
        settings.tokens.algorithms = ["ES256"]
        settings.corsOrigins = ["https://a.example"]
        settings.payload.rootKey = "respondo"
        settings.exclusions = AppExclusions(audiences: ["staff"], kinds: ["k"], dataPrefixes: [AppDataPrefix(key: "u", prefix: "/x")])
        var cleared = settings
        _ = try Self.read(#"{"tokens": {"public_keys": null, "algorithms": null}, "cors_origins": null, "payload": null, "exclusions": null}"#,
                          into: &cleared)
        #expect(cleared.tokens.publicKeys.isEmpty && cleared.tokens.algorithms.isEmpty)
        #expect(cleared.corsOrigins.isEmpty)
        #expect(cleared.payload.rootKey == nil)
        #expect(cleared.exclusions == AppExclusions())
        var some = settings
        _ = try Self.read(#"{"exclusions": {"kinds": null, "data_prefixes": null}}"#, into: &some)
        #expect(some.exclusions == AppExclusions(audiences: ["staff"]))
    }

    @Test func nullsThatCannotClearAreRefusedSayingWhy() {
        let cases: [(String, String, String)] = [
            (#"{"server_keys": null}"#, "server_keys", "1 to 10"),
            (#"{"server_keys": "k"}"#, "server_keys", "1 to 10"),
            (#"{"tokens": null}"#, "tokens", "one by one"),
            (#"{"push": null}"#, "push", "one by one"),
            (#"{"tokens": {"user_claim": null}}"#, "tokens.user_claim", "cannot be cleared"),
            (#"{"cors_origins": 3}"#, "cors_origins", "origins"),
            (#"{"tokens": {"algorithms": "HS256"}}"#, "tokens.algorithms", "HS256, RS256, ES256"),
        ]
        for (body, field, says) in cases {
            let error = Self.refusal(body)
            #expect(error?.status == 400, "\(body)")
            #expect(error?.extra["field"] == field, "\(body)")
            #expect(error?.message.contains(says) == true, "\(body): \(error?.message ?? "accepted")")
        }
    }

    /// `cors_origins` are compared with a browser's `Origin` header as they are written, so a value
    /// no browser sends (a path, a query, user info, upper case, the scheme's default port, a bad
    /// port) would be stored and never match: refused naming the member, with the origin to give.
    @Test func corsOriginsMustBeOriginsAsBrowsersSendThem() throws {
        for origin in ["https://a.example/path", "https://a.example/", "https://a.example?x#y", "https://user@a.example",
                       "https://A.Example", "HTTPS://a.example", "https://a.example:443", "http://a.example:80",
                       "https://a.example:99999", "https://a.example:0", "https://a.example:08080", "https://", "https://a example",
                       "https://a.example:", "ftp://a.example", "https://[::1", "null"] {
            let error = Self.refusal(#"{"cors_origins": ["https://ok.example", "\#(origin)"]}"#)
            #expect(error?.status == 400, "\(origin) was accepted")
            #expect(error?.extra["field"] == "cors_origins", "\(origin)")
            #expect(error?.message.contains(origin) == true, "\(origin): \(error?.message ?? "accepted")")
        }
        #expect(Self.refusal(#"{"cors_origins": ["https://A.Example:443/x"]}"#)?.message.contains("https://a.example") == true)
        var settings = AppSettings()
        let fine = ["*", "https://a.example", "http://localhost:3000", "https://a.example:8443", "http://127.0.0.1:8080",
                    "https://[::1]:8443", "https://xn--bcher-kva.example"]
        let body = "{\"cors_origins\": [" + fine.map { "\"\($0)\"" }.joined(separator: ", ") + "]}"
        _ = try Self.read(body, into: &settings)
        #expect(settings.corsOrigins == fine)
    }

    // MARK: - Propagation

    static func app() throws -> ResolvedApp {
        try ResolvedApp(record: AppRecord(id: AppID("chat")!, settings: AppSettings(), createdAt: 0, updatedAt: 0), jwtSecret: nil)
    }

    /// Installs with `notify` and waits for the outcome (reported from another thread).
    static func propagation(_ directory: AppDirectory, notify: Bool = true, remove: Bool = false) throws -> AppPropagation? {
        let outcome = Mutex<AppPropagation?>(nil)
        let done = DispatchSemaphore(value: 0)
        let report: @Sendable (AppPropagation) -> Void = { result in
            outcome.withLock { $0 = result }
            done.signal()
        }
        if remove { directory.remove(AppID("chat")!, notify: notify, announced: report) } else {
            directory.install(try app(), notify: notify, announced: report)
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        return outcome.withLock { $0 }
    }

    struct BusDown: Error, CustomStringConvertible { var description: String { "connection refused" } }

    @Test func aChangeTheBusCannotSendIsReportedNotPropagated() throws {
        let directory = AppDirectory(configuration: APIConfiguration(serverKey: nil, verificationKeys: []))
        #expect(try Self.propagation(directory) == .propagated)   // one node: nothing to tell
        let sent = Mutex<[String]>([])
        directory.onChange { id in sent.withLock { $0.append(id.rawValue) }; return .propagated }
        #expect(try Self.propagation(directory) == .propagated)
        #expect(sent.withLock { $0 } == ["chat"])
        directory.onChange { _ in throw BusDown() }
        #expect(try Self.propagation(directory) == .notPropagated(reason: "connection refused"))
        #expect(try Self.propagation(directory, remove: true) == .notPropagated(reason: "connection refused"))
        // Installed here all the same; a change from another node is not sent back.
        #expect(try Self.propagation(directory, notify: false) == .propagated)
        #expect(directory.app(AppID("chat")!) != nil)
        // Told, and not every node confirmed: the hook's answer is the change's.
        directory.onChange { _ in .unconfirmed(nodes: 3, confirmed: 2) }
        #expect(try Self.propagation(directory) == .unconfirmed(nodes: 3, confirmed: 2))
        #expect(try Self.propagation(directory, remove: true) == .unconfirmed(nodes: 3, confirmed: 2))
    }

    @Test func theAnswerOfAChangeNotPropagatedSaysSo() throws {
        let record = AppRecord(id: AppID("chat")!, settings: AppSettings(), createdAt: 0, updatedAt: 0)
        let fine = AppRoutes.answer(200, record, propagation: .propagated)
        #expect(fine.headers[AppRoutes.propagationHeader] == nil)
        #expect(!String(decoding: fine.body, as: UTF8.self).contains("warning"))
        let failed = AppRoutes.answer(200, record, propagation: .notPropagated(reason: "connection refused"))
        #expect(failed.status == 200)
        #expect(failed.headers[AppRoutes.propagationHeader] == "failed")
        let body = try JSONSerialization.jsonObject(with: Data(failed.body)) as? [String: Any]
        let warning = body?["warning"] as? String ?? ""
        #expect(warning.contains("connection refused") && warning.contains("until Redis is back, when this node tells them again"), "\(warning)")
    }

    @Test func theAnswerOfAChangeNotEveryNodeConfirmedSaysSo() throws {
        let record = AppRecord(id: AppID("chat")!, settings: AppSettings(), createdAt: 0, updatedAt: 0)
        let unconfirmed = AppRoutes.answer(201, record, propagation: .unconfirmed(nodes: 3, confirmed: 2))
        #expect(unconfirmed.status == 201)
        #expect(unconfirmed.headers[AppRoutes.propagationHeader] == "unconfirmed")
        let body = try JSONSerialization.jsonObject(with: Data(unconfirmed.body)) as? [String: Any]
        let warning = body?["warning"] as? String ?? ""
        #expect(warning.contains("only 2 of the 3 nodes") && warning.contains("apps_not_loaded"), "\(warning)")
        let deleted = AppRoutes.deleted(AppID("chat")!, propagation: .unconfirmed(nodes: 2, confirmed: 1))
        #expect(deleted.status == 200 && deleted.headers[AppRoutes.propagationHeader] == "unconfirmed")
        let deletedBody = try JSONSerialization.jsonObject(with: Data(deleted.body)) as? [String: Any]
        #expect(deletedBody?["deleted"] as? Bool == true && (deletedBody?["warning"] as? String ?? "").contains("only 1 of the 2 nodes"))
        #expect(AppRoutes.deleted(AppID("chat")!, propagation: .propagated).status == 204)
    }
}
