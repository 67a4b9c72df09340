import Digests
import Dispatch
import Foundation
import HeraldCore
import PushHTTP
import Realtime
import Synchronization

/// What became of telling the other nodes about an app's change (the control bus, ADR 0006).
public enum AppPropagation: Sendable, Equatable {
    /// Every node serves the change: the control bus took the message, or there is no other node.
    case propagated
    /// Committed and served by this node, but the control bus could not take the message (Redis
    /// unreachable, `reason`): the other nodes serve the app as it was until they restart or a
    /// later change of it reaches them.
    case notPropagated(reason: String)
    /// The control bus took the message, but of the `nodes` that received it only `confirmed`
    /// said within the answer's wait that they reloaded the app: the others could not (their
    /// `/readyz` lists it under `apps_not_loaded`) or were slow (they apply it when their reload
    /// ends). Committed and served by this node.
    case unconfirmed(nodes: Int, confirmed: Int)
}

/// Every app this process serves, as one immutable snapshot swapped on each change (ADR 0006):
/// the environment's `default` and the stored apps. A request reads the snapshot once; an admin
/// write installs the app's new entry after its commit, so a change takes effect without a
/// restart. `changed` is the multi-node hook: called after every install or removal, for a
/// control bus to tell other nodes to reload that app (one process: nothing to do).
public final class AppDirectory: Sendable {
    struct Snapshot: Sendable {
        var apps: [AppID: ResolvedApp]
        var byServerKey: [String: AppID]
        var byIssuer: [String: AppID]
        /// Every stored app's `cors_origins` (`*` included when one lists it).
        var corsOrigins: Set<String> = []
        /// `HERALD_SERVER_KEY` until its hash is first needed: hashing opens libcrypto, which a
        /// process that has served no request does not map (issue 17, idle footprint at start).
        var unhashedDefaultServerKey: [UInt8]?
        /// The server key last found in `byServerKey`, and its app: the next request with the same
        /// key is answered by a constant-time comparison instead of a SHA-256 and a dictionary
        /// lookup of its hex (issue 17: ~10k instructions of every `POST /v1/notifications`).
        /// Only a key that verified is kept; any change of the keys clears it.
        var lastServerKey: (key: [UInt8], app: AppID)?

        /// Enters `HERALD_SERVER_KEY`'s hash for `default`, once, before any other app's key is
        /// looked up or entered (the default app's key wins over a stored app's equal one).
        mutating func hashDefaultServerKey() {
            guard let key = unhashedDefaultServerKey else { return }
            byServerKey[SecretBox.sha256Hex(key)] = .default
            unhashedDefaultServerKey = nil
        }
        /// Whether any app besides `default` exists; when not, tokens skip the routing peek.
        var hasStoredApps: Bool { apps.count > 1 }
        var defaultApp: ResolvedApp { apps[.default]! }
    }

    private let state: Mutex<Snapshot>
    private let changedHook: Mutex<(@Sendable (AppID) throws -> AppPropagation)?>

    /// - Parameter configuration: the environment's keys, the `default` app.
    public init(configuration: APIConfiguration) {
        let defaultApp = ResolvedApp(environment: configuration)
        var snapshot = Snapshot(apps: [.default: defaultApp], byServerKey: [:], byIssuer: [:])
        snapshot.unhashedDefaultServerKey = configuration.serverKey.map { Array($0.utf8) }
        state = Mutex(snapshot)
        changedHook = Mutex(nil)
    }

    /// Sets the hook called with an app's id after it changed here (the control bus, ADR 0006).
    /// It is called off the caller's thread and may block (bounded: the bus's call timeout); it
    /// returns what became of the change on the other nodes (`.propagated` or `.unconfirmed`),
    /// and throws when they could not be told; the change's answer says either.
    public func onChange(_ hook: @escaping @Sendable (AppID) throws -> AppPropagation) {
        changedHook.withLock { $0 = hook }
    }

    var snapshot: Snapshot {
        state.withLock { snapshot in
            snapshot.hashDefaultServerKey()
            return snapshot
        }
    }

    /// One app, if served.
    public func app(_ id: AppID) -> ResolvedApp? { state.withLock { $0.apps[id] } }

    /// A stored app's profile as its settings are now, for the `Notifier` (nil: `default`, or no
    /// such app).
    public func profile(_ app: String) -> AppProfile? {
        AppID(app).flatMap { self.app($0)?.profile }
    }

    /// Every app, `default` first.
    public var all: [ResolvedApp] {
        state.withLock { snapshot in snapshot.apps.values.sorted { ($0.id.isDefault ? 0 : 1, $0.id) < ($1.id.isDefault ? 0 : 1, $1.id) } }
    }

    /// Installs or replaces a stored app (never `default`).
    /// - Parameters:
    ///   - notify: false when the change came from another node (no echo back to them).
    ///   - announced: called once the other nodes were told, or could not be (from another
    ///     thread); at once with `.propagated` when `notify` is false.
    public func install(_ app: ResolvedApp, notify: Bool = true, announced: @escaping @Sendable (AppPropagation) -> Void = { _ in }) {
        precondition(!app.id.isDefault, "the default app is the environment's")
        state.withLock { snapshot in
            snapshot.hashDefaultServerKey()
            snapshot.apps[app.id] = app
            snapshot.lastServerKey = nil
            snapshot.byServerKey = snapshot.byServerKey.filter { $0.value != app.id }
            // A key belongs to one app: one `HERALD_SERVER_KEY` (or an app installed earlier) holds stays
            // theirs (the admin API refuses such keys; this guards against the environment's changing).
            for hash in app.serverKeyHashes where snapshot.byServerKey[hash] == nil { snapshot.byServerKey[hash] = app.id }
            snapshot.byIssuer = snapshot.byIssuer.filter { $0.value != app.id }
            // The admin API keeps issuers unique; of apps stored before it did, the first installed keeps it.
            if let issuer = app.settings.tokens.issuer, snapshot.byIssuer[issuer] == nil { snapshot.byIssuer[issuer] = app.id }
            snapshot.corsOrigins = Set(snapshot.apps.values.flatMap(\.settings.corsOrigins))
        }
        if notify { announce(app.id, then: announced) } else { announced(.propagated) }
    }

    /// Forgets a stored app.
    /// - Parameters:
    ///   - notify: false when the change came from another node.
    ///   - announced: as for `install`.
    public func remove(_ id: AppID, notify: Bool = true, announced: @escaping @Sendable (AppPropagation) -> Void = { _ in }) {
        precondition(!id.isDefault, "the default app is the environment's")
        state.withLock { snapshot in
            snapshot.apps[id] = nil
            snapshot.lastServerKey = nil
            snapshot.byServerKey = snapshot.byServerKey.filter { $0.value != id }
            snapshot.byIssuer = snapshot.byIssuer.filter { $0.value != id }
            snapshot.corsOrigins = Set(snapshot.apps.values.flatMap(\.settings.corsOrigins))
        }
        if notify { announce(id, then: announced) } else { announced(.propagated) }
    }

    /// Runs the change hook for `id` off the caller's thread (it may wait on Redis; the caller may
    /// be the storage thread that committed the change) and reports how it went.
    private func announce(_ id: AppID, then announced: @escaping @Sendable (AppPropagation) -> Void) {
        guard let hook = changedHook.withLock({ $0 }) else { return announced(.propagated) }
        DispatchQueue.global().async {
            do {
                announced(try hook(id))
            } catch {
                announced(.notPropagated(reason: "\(error)"))
            }
        }
    }

    /// Whether any stored app lists `origin` (or `*`) in its `cors_origins`: what a preflight,
    /// which carries no credentials, is allowed by beside `HERALD_CORS_ORIGINS`.
    public func anyAppAllowsOrigin(_ origin: String) -> Bool {
        state.withLock { $0.corsOrigins.contains(origin) || $0.corsOrigins.contains("*") }
    }

    /// Whether the app `request` is made for lists `origin` (or `*`) in its `cors_origins`, so one
    /// app's list never opens another's answers to a page (ADR 0006). The app is the one its
    /// credentials name, read as routing reads them and before they are verified: a server key's
    /// app, else the access token's (`Authorization: Bearer`, else `?access_token=`: its `app`
    /// claim, else its `iss`), else `?app=` (the public routes that take one), else `default`,
    /// whose origins are `HERALD_CORS_ORIGINS` alone. An unverified name gains nothing: a token
    /// that does not verify for that app is refused, and the refusal is all the page can read.
    public func allowsOrigin(_ origin: String, request: HTTPRequest) -> Bool {
        let snapshot = self.snapshot
        guard !snapshot.corsOrigins.isEmpty, snapshot.corsOrigins.contains(origin) || snapshot.corsOrigins.contains("*") else { return false }
        guard let app = Self.requestApp(request, snapshot: snapshot), let origins = snapshot.apps[app]?.settings.corsOrigins else { return false }
        return origins.contains(origin) || origins.contains("*")
    }

    /// The stored app `request`'s credentials (or its `?app=`) name, if any.
    private static func requestApp(_ request: HTTPRequest, snapshot: Snapshot) -> AppID? {
        let token: String?
        if let header = request.headers["Authorization"] {
            guard let credentials = RequestContext.bearerCredentials(in: header) else { return nil }
            if let app = snapshot.byServerKey[SecretBox.sha256Hex(Array(credentials.utf8))] { return app }
            token = String(credentials)
        } else {
            token = request.firstQueryValue("access_token")
        }
        if let token {
            let peek = TokenPeek(token)
            if let name = peek.app { return AppID(name) }
            return peek.issuer.flatMap { snapshot.byIssuer[$0] }
        }
        return request.firstQueryValue("app").flatMap { AppID($0) }
    }

    /// The app tokens with `iss` = `issuer` are routed to, if any.
    public func app(issuer: String) -> AppID? { state.withLock { $0.byIssuer[issuer] } }

    /// Whether any app has a server key (`HERALD_SERVER_KEY` or a stored app's).
    var hasServerKeys: Bool {
        state.withLock { $0.unhashedDefaultServerKey != nil || !$0.byServerKey.isEmpty }
    }

    /// The app whose server key is `key` (the credentials' bytes), if any: the key last found
    /// is compared in constant time (`HMACSHA256.constantTimeEqual`), any other is looked up by
    /// its SHA-256, outside the lock, and kept when it is found.
    func app(serverKey key: [UInt8]) -> AppID? {
        if let last = state.withLock({ $0.lastServerKey }), HMACSHA256.constantTimeEqual(last.key, key) { return last.app }
        let hash = SecretBox.sha256Hex(key)
        return state.withLock { snapshot in
            snapshot.hashDefaultServerKey()
            guard let app = snapshot.byServerKey[hash] else { return nil }
            snapshot.lastServerKey = (key, app)
            return app
        }
    }

    /// The app whose server key hashes to `hash`, if any.
    func app(serverKeyHash hash: String) -> AppID? {
        state.withLock { snapshot in
            snapshot.hashDefaultServerKey()
            return snapshot.byServerKey[hash]
        }
    }

    /// Whether `hash` is a server key of an app other than `id` (keys are one app's).
    public func serverKeyTaken(_ hash: String, except id: AppID) -> Bool {
        state.withLock { snapshot in
            snapshot.hashDefaultServerKey()
            return snapshot.byServerKey[hash].map { $0 != id } ?? false
        }
    }
}
