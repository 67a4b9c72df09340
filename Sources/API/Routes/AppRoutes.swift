import COpenSSL
import Foundation
import HeraldCore
import PushHTTP
import Realtime

/// The admin API of apps (AP-1, AP-2, ADR 0006): `POST|GET|PATCH|DELETE /v1/apps[/{app}]`
/// behind `HERALD_ADMIN_KEY`. Secrets are sealed before they are stored and never answered
/// (answers show a fingerprint and when each was set); a change is checked whole (keys parse,
/// providers build) before it is stored, and takes effect when committed, without a restart.
struct AppRoutes {
    let adminKey: [UInt8]?
    let service: AppService

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.createApp) { context in try routes.create(context) }
        table.on(Spec.listApps) { context in try routes.list(context) }
        table.on(Spec.getApp) { context in try routes.get(context) }
        table.on(Spec.updateApp) { context in try routes.update(context) }
        table.on(Spec.deleteApp) { context in try routes.delete(context) }
    }

    /// Checks `Authorization: Bearer <HERALD_ADMIN_KEY>` in constant time.
    /// - Throws: `HTTPError` 401 `unauthorized`; 400 `invalid_request` for `Authorization` given twice.
    func admin(_ context: RequestContext) throws(HTTPError) {
        guard let adminKey else { throw HTTPError(401, "unauthorized", "the admin API is disabled: HERALD_ADMIN_KEY is not set") }
        let header = try Authenticator.authorization(context) ?? ""
        let given = header.isEmpty ? [] : try Authenticator.bearer(header, code: "unauthorized", expected: "Bearer <admin key>").map { Array($0.utf8) } ?? []
        guard given.count == adminKey.count,
              given.withUnsafeBytes({ a in adminKey.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) } }) == 0
        else { throw HTTPError(401, "unauthorized", "the admin key is missing or wrong") }
    }

    private func appID(_ context: RequestContext) throws(HTTPError) -> AppID {
        guard let raw = context.pathParameters["app"], let id = AppID(raw) else {
            throw HTTPError.invalid("app", "an app id is 1-63 characters of a-z 0-9 -")
        }
        return id
    }

    private func body(_ context: RequestContext) throws(HTTPError) -> [String: Any] {
        try RequestBody.check(context.request)
        guard let object = (try? JSONSerialization.jsonObject(with: Data(context.request.body))) as? [String: Any] else {
            throw HTTPError(400, "invalid_request", "the body is a JSON object")
        }
        return object
    }

    /// `POST /v1/apps` → 201 with the app and, when no `server_keys` were given, the one generated
    /// (`server_key`, shown this once).
    func create(_ context: RequestContext) throws -> RouteResult {
        try admin(context)
        let object = try body(context)
        guard let raw = object["id"] as? String else { throw HTTPError.invalid("id", "id is required: 1-63 characters of a-z 0-9 -") }
        // A new id is a DNS label (RFC 1123): no `-` at either end. `AppID` itself still takes a
        // trailing `-`, so apps created before this rule keep loading and answering.
        guard let id = AppID(raw), raw.utf8.last != UInt8(ascii: "-") else {
            throw HTTPError.invalid("id", "an app id is 1-63 characters of a-z 0-9 -, starting and ending with a letter or digit")
        }
        guard !id.isDefault else { throw HTTPError(409, "app_exists", "default is the environment's app") }
        var settings = AppSettings()
        let change = try AppChange.read(object, into: &settings)
        let now = unixMilliseconds()
        var generated: String?
        var keys = change.serverKeys ?? []
        if keys.isEmpty {
            var bytes = [UInt8](repeating: 0, count: 32)
            guard RAND_bytes(&bytes, 32) == 1 else { throw HTTPError(500, "internal_error", "no random bytes") }
            generated = "hk_" + Base64URL.encode(bytes)
            keys = [generated!]
        }
        var record = AppRecord(id: id, settings: settings, serverKeys: try serverKeys(keys, app: id, now: now, existing: []),
                               createdAt: now, updatedAt: now)
        let opened = try seal(change, into: &record, opened: [:], now: now)
        let prepared = try prepare(record, opened: opened)
        let service = self.service
        let shownKey = generated
        return .deferred { writer in
            service.storage.write({ tx in try tx.apps.create(prepared.record) }) { result in
                if case .failure(let error as StorageError) = result, error.isUniqueViolation {
                    return writer.complete(.error(409, code: "app_exists", message: "app \(id) exists, or one of its server keys is another app's"))
                }
                if case .failure(let error) = result { return writer.complete(DatabaseResponder.response(.failure(error))) }
                service.install(prepared) { propagation in
                    writer.complete(Self.answer(201, prepared.record, serverKey: shownKey, propagation: propagation))
                }
            }
        }
    }

    /// `GET /v1/apps` → `{apps: [...]}`, `default` first.
    func list(_ context: RequestContext) throws -> RouteResult {
        try admin(context)
        let service = self.service
        return DatabaseResponder(database: service.storage).read { tx in
            let stored = try tx.apps.list()
            return .json(200, "{\"apps\":[" + ([Self.defaultJSON(service)] + stored.map { Self.json($0, loaded: Self.loaded($0.id, service)) })
                .joined(separator: ",") + "]}")
        }
    }

    /// `GET /v1/apps/{app}` → the app, or 404.
    func get(_ context: RequestContext) throws -> RouteResult {
        try admin(context)
        let id = try appID(context)
        if id.isDefault { return .response(.json(200, Self.defaultJSON(service))) }
        return DatabaseResponder(database: service.storage).read { tx in
            guard let record = try tx.apps.find(id) else { throw HTTPError(404, "not_found", "no app \(id)") }
            return .json(200, Self.json(record, loaded: Self.loaded(id, service)))
        }
    }

    /// `PATCH /v1/apps/{app}`: the members given replace theirs; 200 with the app.
    func update(_ context: RequestContext) throws -> RouteResult {
        try admin(context)
        let id = try appID(context)
        guard !id.isDefault else {
            throw HTTPError(409, "app_from_environment", "the default app is configured by the environment (HERALD_*, APNS_*, FCM_*)")
        }
        if try body(context)["id"] != nil { throw HTTPError.invalid("id", "an app's id cannot change") }
        let bytes = context.request.body
        let routes = self, service = self.service
        return .deferred { writer in
            // Read, change, check and store in one write transaction, so two changes to one app
            // never lose each other; what it needs is installed once it is committed.
            service.storage.write({ tx -> AppService.Prepared in
                guard var record = try tx.apps.find(id) else { throw HTTPError(404, "not_found", "no app \(id)") }
                let now = unixMilliseconds()
                // Checked as an object before; parsed again here, where it is used.
                let object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
                let change = try AppChange.read(object, into: &record.settings)
                // Secrets the change replaces or removes need not open: sending them again repairs
                // an app whose stored ones were sealed under a key this server no longer has.
                let opened = try routes.openSecrets(record, except: Set(change.secrets.keys))
                if let keys = change.serverKeys {
                    record.serverKeys = try routes.serverKeys(keys, app: id, now: now, existing: record.serverKeys)
                }
                record.updatedAt = now
                let allOpened = try routes.seal(change, into: &record, opened: opened, now: now)
                let prepared = try routes.prepare(record, opened: allOpened)
                guard try tx.apps.update(prepared.record) else { throw HTTPError(404, "not_found", "no app \(id)") }
                return prepared
            }) { result in
                switch result {
                case .success(let prepared):
                    service.install(prepared) { propagation in
                        writer.complete(Self.answer(200, prepared.record, propagation: propagation))
                    }
                case .failure(let error as StorageError) where error.isUniqueViolation:
                    writer.complete(.error(409, code: "server_key_taken", message: "a server key belongs to another app"))
                case .failure(let error):
                    writer.complete(DatabaseResponder.response(.failure(error)))
                }
            }
        }
    }

    /// `DELETE /v1/apps/{app}` → 204: its rows in every table go, its streams close, its
    /// providers stop (AP-3).
    func delete(_ context: RequestContext) throws -> RouteResult {
        try admin(context)
        let id = try appID(context)
        guard !id.isDefault else {
            throw HTTPError(409, "app_from_environment", "the default app is configured by the environment and cannot be deleted")
        }
        let service = self.service
        return .deferred { writer in
            service.storage.write({ tx in try tx.apps.delete(id) }) { result in
                switch result {
                case .success(true):
                    service.uninstall(id) { propagation in writer.complete(Self.deleted(id, propagation: propagation)) }
                case .success(false):
                    writer.complete(.error(404, code: "not_found", message: "no app \(id)"))
                case .failure(let error):
                    writer.complete(DatabaseResponder.response(.failure(error)))
                }
            }
        }
    }

    // MARK: - Helpers

    /// The stored form of `keys` (hashes), keeping the creation time of keys the app had.
    /// - Throws: 409 `server_key_taken` when another app holds one; 400 for a key given twice.
    private func serverKeys(_ keys: [String], app: AppID, now: Int64, existing: [ServerKeyEntry]) throws(HTTPError) -> [ServerKeyEntry] {
        var entries: [ServerKeyEntry] = []
        for key in keys {
            let hash = SecretBox.sha256Hex(Array(key.utf8))
            guard !entries.contains(where: { $0.hash == hash }) else { throw HTTPError.invalid("server_keys", "a server key is listed twice") }
            // The admin key must never also open an app's data routes.
            if let adminKey, Array(key.utf8) == adminKey { throw HTTPError.invalid("server_keys", "a server key must not be the admin key") }
            if service.directory.serverKeyTaken(hash, except: app) {
                throw HTTPError(409, "server_key_taken", "a server key belongs to another app")
            }
            entries.append(existing.first { $0.hash == hash } ?? ServerKeyEntry(hash: hash, createdAt: now))
        }
        return entries
    }

    /// Opens the stored secrets of `record` but those in `skipped` (the change replaces them).
    /// - Throws: 409 `secret_unreadable` naming the secrets that do not open with this server's
    ///   keys (sealed under another `HERALD_SECRET_KEY`: the app is not loaded, `/readyz`) and the
    ///   ways out; 503 `secret_key_missing` when the app has sealed secrets and no key is set.
    private func openSecrets(_ record: AppRecord, except skipped: Set<AppSecretField>) throws(HTTPError) -> [AppSecretField: [UInt8]] {
        var kept = record
        for field in skipped { kept.secrets[field] = nil }
        do { return try service.openSecrets(kept) } catch {
            guard let box = service.secretBox else {
                throw HTTPError(503, "secret_key_missing", "app \(record.id) has sealed secrets and HERALD_SECRET_KEY is not set: "
                    + "set it (or HERALD_SECRET_KEY_FILE) to the key they were sealed with, or send null or new values for them")
            }
            let unreadable = AppSecretField.allCases.filter { field in
                guard let sealed = kept.secrets[field] else { return false }
                return (try? box.open(sealed.sealed, context: AppService.context(record.id, field))) == nil
            }
            let names = unreadable.map(\.apiName)
            Log.error("app secrets do not open", ["app": record.id.rawValue, "fields": names.joined(separator: ","), "error": error.message])
            throw HTTPError(409, "secret_unreadable",
                            "app \(record.id)'s stored \(names.joined(separator: ", ")) do not open with this server's HERALD_SECRET_KEY "
                                + "(\(error.message)): restart with the key they were sealed with in HERALD_SECRET_KEY_PREVIOUS, "
                                + "or send new values (or null) for them in this PATCH, or delete the app",
                            field: names.first)
        }
    }

    /// Seals the change's secrets into `record`.
    /// - Returns: every secret of the app, opened (the old ones with the new ones applied).
    /// - Throws: 503 `secret_key_missing` when a secret is set and no `HERALD_SECRET_KEY` is configured.
    private func seal(_ change: AppChange, into record: inout AppRecord, opened: [AppSecretField: [UInt8]], now: Int64) throws(HTTPError)
        -> [AppSecretField: [UInt8]] {
        var all = opened
        for (field, value) in change.secrets {
            guard let value else {
                record.secrets[field] = nil
                all[field] = nil
                continue
            }
            guard let box = service.secretBox else {
                throw HTTPError(503, "secret_key_missing", "secrets cannot be stored: set HERALD_SECRET_KEY or HERALD_SECRET_KEY_FILE")
            }
            do {
                let sealed = try box.seal(value, context: AppService.context(record.id, field))
                record.secrets[field] = SealedSecret(sealed: sealed, fingerprint: SecretBox.fingerprint(value), setAt: now)
            } catch {
                throw HTTPError(500, "internal_error", "sealing failed: \(error.message)")
            }
            all[field] = value
        }
        return all
    }

    /// - Throws: 409 `issuer_taken` when another app routes tokens by the same `tokens.issuer`
    ///   (ADR 0006: an `iss` routes to exactly one app); 400 for a setting `AppService` refuses.
    private func prepare(_ record: AppRecord, opened: [AppSecretField: [UInt8]]) throws(HTTPError) -> AppService.Prepared {
        if let issuer = record.settings.tokens.issuer, let holder = service.directory.app(issuer: issuer), holder != record.id {
            throw HTTPError(409, "issuer_taken", "app \(holder) already routes tokens by this issuer", field: "tokens.issuer")
        }
        do { return try service.prepare(record, opened: opened) } catch {
            throw HTTPError.invalid(error.field, error.message)
        }
    }

    // MARK: - Answers

    /// Set to `failed` on the answer to a change the other nodes were not told of (the control
    /// bus failed: Redis unreachable), to `unconfirmed` when some node told did not confirm it in
    /// time; POST and PATCH answers also carry a `warning`, a DELETE's is a 200 with one.
    static let propagationHeader = "Herald-Propagation"

    /// The answer to a committed create or change: the app, and what the other nodes do not know.
    static func answer(_ status: Int, _ record: AppRecord, serverKey: String? = nil, propagation: AppPropagation) -> HTTPResponse {
        let warning: String
        switch propagation {
        case .propagated:
            return .json(status, json(record, serverKey: serverKey))
        case .notPropagated(let reason):
            warning = "stored, and served by this node, but the other nodes were not told (the control bus failed: \(reason)): "
                + "they serve app \(record.id) as it was until Redis is back, when this node tells them again and each "
                + "reads every app again"
        case .unconfirmed(let nodes, let confirmed):
            warning = unconfirmedWarning("stored, and served by this node", record.id, nodes: nodes, confirmed: confirmed)
        }
        var response = HTTPResponse.json(status, json(record, serverKey: serverKey, warning: warning))
        response.headers.add(name: propagationHeader, value: header(propagation))
        return response
    }

    /// The warning of a change some nodes did not confirm: which ones to look at, and why they may not serve it.
    private static func unconfirmedWarning(_ done: String, _ id: AppID, nodes: Int, confirmed: Int) -> String {
        "\(done), but only \(confirmed) of the \(nodes) nodes told confirmed in time that they applied it: "
            + "a node that cannot (another HERALD_SECRET_KEY, a setting it refuses) lists app \(id) under apps_not_loaded "
            + "on its /readyz; a slow one applies it when its reload ends"
    }

    /// `Herald-Propagation`'s value for a change not served everywhere (never `.propagated`).
    private static func header(_ propagation: AppPropagation) -> String {
        if case .unconfirmed = propagation { "unconfirmed" } else { "failed" }
    }

    /// The answer to a committed delete: 204, or, when the other nodes were not told, 200 with a
    /// `warning` (a 204 has no body to carry one) and `Herald-Propagation: failed`.
    static func deleted(_ id: AppID, propagation: AppPropagation) -> HTTPResponse {
        let warning: String
        switch propagation {
        case .propagated:
            return .empty(204)
        case .notPropagated(let reason):
            warning = "deleted, and no longer served by this node, but the other nodes were not told (the control bus failed: \(reason)): "
                + "they serve app \(id) (its tokens, server keys, streams and pushes) until Redis is back, when this node tells "
                + "them again and each reads every app again"
        case .unconfirmed(let nodes, let confirmed):
            warning = unconfirmedWarning("deleted, and no longer served by this node", id, nodes: nodes, confirmed: confirmed)
        }
        var response = HTTPResponse.json(200, "{\"id\":\(JSONText.quote(id.rawValue)),\"deleted\":true,\"warning\":\(JSONText.quote(warning))}")
        response.headers.add(name: propagationHeader, value: header(propagation))
        return response
    }

    /// Whether this node serves stored app `id` now, and if not why (`AppService.notLoaded`: its
    /// secrets do not open, its settings no longer check), for `GET /v1/apps`.
    static func loaded(_ id: AppID, _ service: AppService) -> (loaded: Bool, reason: String?) {
        if service.directory.app(id) != nil { return (true, nil) }
        return (false, service.notLoaded[id])
    }

    private static func time(_ milliseconds: Int64) -> String { JSONText.quote(Timestamp.iso8601(milliseconds: milliseconds)) }

    private static func secret(_ record: AppRecord, _ field: AppSecretField) -> String {
        guard let sealed = record.secrets[field] else { return "null" }
        return "{\"fingerprint\":\(JSONText.quote(sealed.fingerprint)),\"set_at\":\(time(sealed.setAt))}"
    }

    private static func optional(_ text: String?) -> String { text.map(JSONText.quote) ?? "null" }

    /// The app as answered: settings, fingerprints of secrets and server keys, never a secret.
    /// - Parameter loaded: whether this node serves it (`loaded`, `not_loaded_reason`); nil: not said.
    static func json(_ record: AppRecord, serverKey: String? = nil, warning: String? = nil,
                     loaded: (loaded: Bool, reason: String?)? = nil) -> String {
        let s = record.settings, t = s.tokens, p = s.push
        var fields: [String] = [
            "\"id\":\(JSONText.quote(record.id.rawValue))",
            "\"source\":\"api\"",
            "\"tokens\":{\"hs256_secret\":\(secret(record, .jwtSecret)),\"public_keys\":\(JSONText.array(t.publicKeys)),"
                + "\"jwks\":\(t.jwks ?? "null"),\"algorithms\":\(JSONText.array(t.algorithms)),\"user_claim\":\(JSONText.quote(t.userClaim)),"
                + "\"session_claim\":\(optional(t.sessionClaim)),\"issuer\":\(optional(t.issuer)),\"audience\":\(optional(t.audience))}",
            "\"server_keys\":[" + record.serverKeys.map { "{\"fingerprint\":\(JSONText.quote($0.fingerprint)),\"created_at\":\(time($0.createdAt))}" }
                .joined(separator: ",") + "]",
            "\"cors_origins\":\(JSONText.array(s.corsOrigins))",
            "\"catalog\":\(s.catalogJSON ?? "null")",
            "\"payload\":{\"root_key\":\(optional(s.payload.rootKey))}",
            "\"exclusions\":{\"audiences\":\(JSONText.array(s.exclusions.audiences)),\"kinds\":\(JSONText.array(s.exclusions.kinds)),"
                + "\"data_prefixes\":[" + s.exclusions.dataPrefixes.map { "{\"key\":\(JSONText.quote($0.key)),\"prefix\":\(JSONText.quote($0.prefix))}" }
                .joined(separator: ",") + "]}",
            "\"default_locale\":\(optional(s.defaultLocale))",
            "\"push\":{"
                + "\"apns\":" + (record.secrets[.apnsKey] == nil ? "null" : "{\"key_p8\":\(secret(record, .apnsKey)),\"key_id\":\(optional(p.apnsKeyID)),"
                    + "\"team_id\":\(optional(p.apnsTeamID)),\"topic\":\(optional(p.apnsTopic))}")
                + ",\"fcm\":" + (record.secrets[.fcmServiceAccount] == nil ? "null"
                    : "{\"service_account\":\(secret(record, .fcmServiceAccount)),\"project_id\":\(optional(p.fcmProjectID))}")
                + ",\"expo\":" + (p.expoEnabled(hasAccessToken: record.secrets[.expoAccessToken] != nil)
                    ? "{\"access_token\":\(secret(record, .expoAccessToken))}" : "null")
                + ",\"webpush\":" + (record.secrets[.vapidPrivateKey] == nil ? "null"
                    : "{\"vapid_private_key\":\(secret(record, .vapidPrivateKey)),\"subject\":\(optional(p.vapidSubject)),"
                    + "\"public_key\":\(optional(p.vapidPublicKey))}")
                + "}",
            "\"created_at\":\(time(record.createdAt))",
            "\"updated_at\":\(time(record.updatedAt))",
        ]
        if let serverKey { fields.append("\"server_key\":\(JSONText.quote(serverKey))") }
        if let warning { fields.append("\"warning\":\(JSONText.quote(warning))") }
        if let loaded {
            fields.append("\"loaded\":\(loaded.loaded)")
            if !loaded.loaded, let reason = loaded.reason { fields.append("\"not_loaded_reason\":\(JSONText.quote(reason))") }
        }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// The environment's app: what can be said without its secrets.
    static func defaultJSON(_ service: AppService) -> String {
        let providers = service.providers?.configuredIDs(app: "default").map(\.rawValue) ?? []
        let hasKey = service.directory.app(.default)?.hasServerKey ?? false
        return "{\"id\":\"default\",\"source\":\"environment\",\"loaded\":true,\"server_key_set\":\(hasKey),"
            + "\"push_providers\":\(JSONText.array(providers))}"
    }
}
