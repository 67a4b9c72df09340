import Foundation
import HeraldCore
import PushHTTP
import Realtime

/// One `POST` or `PATCH /v1/apps` body, read member by member so every refusal names its field
/// (`push.apns.topic`). A member present replaces that part of the app; `null` clears it (a list
/// becomes empty, an optional value absent, a secret or push provider removed), except where the
/// app cannot be without it: `server_keys` (1-10), `tokens.user_claim`, and `tokens` and `push`
/// as wholes (their members are cleared one by one), which refuse `null` saying why.
struct AppChange {

    /// Secrets to set (`.some(value)`) or clear (`.some(nil)`), by field; a field absent is kept.
    /// Written with `setSecret(_:_:)`: assigning an optional to this dictionary's subscript can
    /// remove the entry instead of recording a clear, and a "cleared" secret then stays.
    private(set) var secrets: [AppSecretField: [UInt8]?] = [:]
    /// The server keys, replacing the app's set when present (rotation: old and new, then new).
    var serverKeys: [String]?

    /// Records that `field` is set to `value`, or cleared when `value` is nil.
    mutating func setSecret(_ field: AppSecretField, _ value: [UInt8]?) {
        secrets.updateValue(value, forKey: field)
    }

    static let members = ["id", "tokens", "server_keys", "cors_origins", "catalog", "payload", "exclusions", "default_locale", "push"]

    /// Applies the body to `settings`.
    /// - Throws: `HTTPError` 400 naming the field.
    static func read(_ object: [String: Any], into settings: inout AppSettings) throws(HTTPError) -> AppChange {
        var change = AppChange()
        if let unknown = object.keys.sorted().first(where: { !members.contains($0) }) {
            throw HTTPError.invalid(unknown, "unknown member \"\(unknown)\": the members are \(members.joined(separator: ", "))")
        }
        if let tokens = try group(object, "tokens", hint: #"{"tokens": {"hs256_secret": null}} removes the HS256 secret"#) {
            try readTokens(tokens, into: &settings.tokens, change: &change)
        }
        if object.keys.contains("server_keys") {
            if object["server_keys"] is NSNull {
                throw HTTPError.invalid("server_keys", "server_keys cannot be cleared: an app has 1 to 10 server keys; "
                    + "to retire one, send the keys that stay (rotation: old and new, then only new)")
            }
            let keys = try strings(object["server_keys"], "server_keys", "a list of 1 to 10 server keys", nullClears: false)
            guard (1...10).contains(keys.count) else { throw HTTPError.invalid("server_keys", "give 1 to 10 server keys") }
            // Printable ASCII only: a key is sent in an Authorization header, where anything else
            // cannot travel (a newline) or is read differently by different clients.
            for key in keys where key.utf8.count < 16 || key.utf8.count > 256 || !key.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) {
                throw HTTPError.invalid("server_keys", "a server key is 16-256 printable ASCII characters without spaces")
            }
            change.serverKeys = keys
        }
        if object.keys.contains("cors_origins") {
            let origins = try strings(object["cors_origins"], "cors_origins", "a list of at most 100 origins, or null for none")
            do { try CORSOrigin.checkAllowed(origins) } catch { throw HTTPError.invalid("cors_origins", error.message) }
            settings.corsOrigins = origins
        }
        if object.keys.contains("catalog") {
            if object["catalog"] is NSNull {
                settings.catalogJSON = nil
            } else {
                guard let catalog = object["catalog"] as? [String: Any], let text = json(catalog) else {
                    throw HTTPError.invalid("catalog", "catalog is an object, as in a HERALD_CATALOG_PATH file")
                }
                do { _ = try NotificationCatalog.parse(Array(text.utf8)) } catch { throw HTTPError.invalid("catalog", error.message) }
                settings.catalogJSON = text
            }
        }
        if object["payload"] is NSNull {
            settings.payload = AppPayloadSettings()
        } else if let payload = try optionalObject(object, "payload", "payload") {
            try only(payload, ["root_key"], "payload")
            if payload.keys.contains("root_key") {
                let root = try optionalString(payload["root_key"], "payload.root_key")
                if let root, root.isEmpty || root.utf8.count > 64 { throw HTTPError.invalid("payload.root_key", "1-64 characters") }
                settings.payload.rootKey = root
            }
        }
        if object["exclusions"] is NSNull {
            settings.exclusions = AppExclusions()
        } else if let exclusions = try optionalObject(object, "exclusions", "exclusions") {
            try only(exclusions, ["audiences", "kinds", "data_prefixes"], "exclusions")
            if exclusions.keys.contains("audiences") {
                settings.exclusions.audiences = try strings(exclusions["audiences"], "exclusions.audiences", "a list of at most 100 audiences, or null for none")
            }
            if exclusions.keys.contains("kinds") {
                settings.exclusions.kinds = try strings(exclusions["kinds"], "exclusions.kinds", "a list of at most 100 kinds, or null for none")
            }
            if exclusions["data_prefixes"] is NSNull {
                settings.exclusions.dataPrefixes = []
            } else if exclusions.keys.contains("data_prefixes") {
                // Every notification of the app is checked against each: a short list.
                guard let list = exclusions["data_prefixes"] as? [[String: Any]], list.count <= 100 else {
                    throw HTTPError.invalid("exclusions.data_prefixes", "a list of at most 100 {key, prefix}, or null for none")
                }
                settings.exclusions.dataPrefixes = try list.enumerated().map { (index, item) throws(HTTPError) in
                    guard let key = item["key"] as? String, let prefix = item["prefix"] as? String, !key.isEmpty, !prefix.isEmpty, item.count == 2 else {
                        throw HTTPError.invalid("exclusions.data_prefixes[\(index)]", "each is {key, prefix}, both non-empty strings")
                    }
                    return AppDataPrefix(key: key, prefix: prefix)
                }
            }
        }
        if object.keys.contains("default_locale") {
            let locale = try optionalString(object["default_locale"], "default_locale")
            // The rule devices' and users' locales follow, so that a tag one accepts the other does.
            if let locale {
                guard let tag = LocaleTag(locale) else { throw HTTPError.invalid("default_locale", "a BCP 47 tag such as pt-BR") }
                settings.defaultLocale = tag.rawValue
            } else {
                settings.defaultLocale = nil
            }
        }
        if let push = try group(object, "push", hint: #"{"push": {"apns": null}} removes the APNs credentials"#) {
            try readPush(push, into: &settings.push, change: &change)
        }
        return change
    }

    private static func readTokens(_ tokens: [String: Any], into settings: inout AppTokenSettings, change: inout AppChange) throws(HTTPError) {
        try only(tokens, ["hs256_secret", "public_keys", "jwks", "algorithms", "user_claim", "session_claim", "issuer", "audience"], "tokens")
        if tokens.keys.contains("hs256_secret") {
            let secret = try optionalString(tokens["hs256_secret"], "tokens.hs256_secret")
            if let secret, secret.utf8.count < 16 { throw HTTPError.invalid("tokens.hs256_secret", "at least 16 bytes (RFC 7518 §3.2 asks for 32)") }
            change.setSecret(.jwtSecret, secret.map { Array($0.utf8) })
        }
        if tokens.keys.contains("public_keys") {
            settings.publicKeys = try strings(tokens["public_keys"], "tokens.public_keys", "a list of at most 100 PEM public keys, or null for none")
        }
        if tokens.keys.contains("jwks") {
            if tokens["jwks"] is NSNull {
                settings.jwks = nil
            } else {
                guard let document = tokens["jwks"] as? [String: Any], let text = json(document) else {
                    throw HTTPError.invalid("tokens.jwks", "a JWKS document: {\"keys\": [...]}")
                }
                settings.jwks = text
            }
        }
        if tokens.keys.contains("algorithms") {
            settings.algorithms = try strings(tokens["algorithms"], "tokens.algorithms",
                                              "a list of HS256, RS256, ES256, or null (or []) for those of the keys")
        }
        if tokens.keys.contains("user_claim") {
            if tokens["user_claim"] is NSNull {
                throw HTTPError.invalid("tokens.user_claim", "tokens.user_claim cannot be cleared: a token names its user by a claim; give one (the default is sub)")
            }
            guard let claim = tokens["user_claim"] as? String, !claim.isEmpty else { throw HTTPError.invalid("tokens.user_claim", "a claim name") }
            settings.userClaim = claim
        }
        if tokens.keys.contains("session_claim") {
            let claim = try optionalString(tokens["session_claim"], "tokens.session_claim")
            if claim?.isEmpty == true { throw HTTPError.invalid("tokens.session_claim", "a claim name, or null: tokens carry no session (AP-5)") }
            settings.sessionClaim = claim
        }
        if tokens.keys.contains("issuer") {
            let issuer = try optionalString(tokens["issuer"], "tokens.issuer")
            // NUL: a PostgreSQL text value cannot hold it; refused on every storage alike. The
            // length in Unicode scalars, as the OpenAPI's `maxLength` counts it: no provider limit.
            if let issuer, issuer.isEmpty || issuer.unicodeScalars.count > 1024 || issuer.utf8.contains(0) {
                throw HTTPError.invalid("tokens.issuer", "1-1024 characters without NUL (U+0000), or null")
            }
            settings.issuer = issuer
        }
        if tokens.keys.contains("audience") {
            // An empty audience would match no token's `aud`: every token of the app refused.
            let audience = try optionalString(tokens["audience"], "tokens.audience")
            if let audience, audience.isEmpty || audience.unicodeScalars.count > 1024 || audience.utf8.contains(0) {
                throw HTTPError.invalid("tokens.audience", "1-1024 characters without NUL (U+0000), or null")
            }
            settings.audience = audience
        }
    }

    private static func readPush(_ push: [String: Any], into settings: inout AppPushSettings, change: inout AppChange) throws(HTTPError) {
        try only(push, ["apns", "fcm", "expo", "webpush"], "push")
        if push.keys.contains("apns") {
            if push["apns"] is NSNull {
                settings.apnsKeyID = nil; settings.apnsTeamID = nil; settings.apnsTopic = nil
                change.setSecret(.apnsKey, nil)
            } else {
                guard let apns = push["apns"] as? [String: Any] else { throw HTTPError.invalid("push.apns", "an object, or null to remove") }
                try only(apns, ["key_p8", "key_id", "team_id", "topic"], "push.apns")
                let key = try required(apns, "key_p8", "push.apns")
                settings.apnsKeyID = try required(apns, "key_id", "push.apns")
                settings.apnsTeamID = try required(apns, "team_id", "push.apns")
                settings.apnsTopic = try required(apns, "topic", "push.apns")
                change.setSecret(.apnsKey, Array(key.replacingOccurrences(of: "\\n", with: "\n").utf8))
            }
        }
        if push.keys.contains("fcm") {
            if push["fcm"] is NSNull {
                settings.fcmProjectID = nil
                change.setSecret(.fcmServiceAccount, nil)
            } else {
                guard let fcm = push["fcm"] as? [String: Any] else { throw HTTPError.invalid("push.fcm", "an object, or null to remove") }
                try only(fcm, ["service_account", "project_id"], "push.fcm")
                let account: String
                if let object = fcm["service_account"] as? [String: Any], let text = json(object) {
                    account = text
                } else if let text = fcm["service_account"] as? String, !text.isEmpty {
                    account = text
                } else {
                    throw HTTPError.invalid("push.fcm.service_account", "the service account JSON, as an object or a string")
                }
                settings.fcmProjectID = try optionalString(fcm["project_id"], "push.fcm.project_id")
                change.setSecret(.fcmServiceAccount, Array(account.utf8))
            }
        }
        if push.keys.contains("expo") {
            if push["expo"] is NSNull {
                settings.expoWithoutToken = nil
                change.setSecret(.expoAccessToken, nil)
            } else {
                guard let expo = push["expo"] as? [String: Any] else { throw HTTPError.invalid("push.expo", "an object, or null to remove") }
                try only(expo, ["access_token"], "push.expo")
                // Expo needs no credential unless the project asks for an access token: `{}` or
                // `{"access_token": null}` turns Expo on without one.
                if let token = try optionalString(expo["access_token"], "push.expo.access_token") {
                    guard !token.isEmpty else { throw HTTPError.invalid("push.expo.access_token", "a non-empty string, or null for none") }
                    settings.expoWithoutToken = nil
                    change.setSecret(.expoAccessToken, Array(token.utf8))
                } else {
                    settings.expoWithoutToken = true
                    change.setSecret(.expoAccessToken, nil)
                }
            }
        }
        if push.keys.contains("webpush") {
            if push["webpush"] is NSNull {
                settings.vapidSubject = nil; settings.vapidPublicKey = nil
                change.setSecret(.vapidPrivateKey, nil)
            } else {
                guard let webpush = push["webpush"] as? [String: Any] else { throw HTTPError.invalid("push.webpush", "an object, or null to remove") }
                try only(webpush, ["vapid_private_key", "subject", "public_key"], "push.webpush")
                change.setSecret(.vapidPrivateKey, Array(try required(webpush, "vapid_private_key", "push.webpush").utf8))
                settings.vapidSubject = try required(webpush, "subject", "push.webpush")
                settings.vapidPublicKey = try optionalString(webpush["public_key"], "push.webpush.public_key")
            }
        }
    }

    // MARK: - Member readers

    private static func only(_ object: [String: Any], _ known: [String], _ path: String) throws(HTTPError) {
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw HTTPError.invalid("\(path).\(unknown)", "unknown member; \(path) has \(known.joined(separator: ", "))")
        }
    }

    private static func optionalObject(_ object: [String: Any], _ key: String, _ field: String) throws(HTTPError) -> [String: Any]? {
        guard let value = object[key] else { return nil }
        guard let nested = value as? [String: Any] else { throw HTTPError.invalid(field, "\(field) is an object") }
        return nested
    }

    /// `tokens` or `push`: an object whose members change one by one; `null` for the whole is
    /// refused (clearing every token key or every provider at once is never what a typo should do).
    private static func group(_ object: [String: Any], _ key: String, hint: String) throws(HTTPError) -> [String: Any]? {
        if object[key] is NSNull {
            throw HTTPError.invalid(key, "\(key) cannot be null: clear its members one by one (\(hint))")
        }
        return try optionalObject(object, key, key)
    }

    private static func required(_ object: [String: Any], _ key: String, _ path: String) throws(HTTPError) -> String {
        guard let value = object[key] as? String, !value.isEmpty else { throw HTTPError.invalid("\(path).\(key)", "a non-empty string is required") }
        return value
    }

    private static func optionalString(_ value: Any?, _ field: String) throws(HTTPError) -> String? {
        guard let value, !(value is NSNull) else { return nil }
        guard let text = value as? String else { throw HTTPError.invalid(field, "a string or null") }
        return text
    }

    /// A list member: `null` is an empty list when `nullClears`.
    /// - Parameter rule: what the member takes, for the refusal's message.
    private static func strings(_ value: Any?, _ field: String, _ rule: String, nullClears: Bool = true) throws(HTTPError) -> [String] {
        if nullClears, value is NSNull { return [] }
        guard let list = value as? [Any], list.count <= 100 else { throw HTTPError.invalid(field, rule) }
        return try list.map { (item) throws(HTTPError) -> String in
            guard let text = item as? String, !text.isEmpty else { throw HTTPError.invalid(field, "a list of non-empty strings") }
            return text
        }
    }

    static func json(_ object: [String: Any]) -> String? {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

extension AppSecretField {
    /// The member of the app's JSON (`POST|PATCH /v1/apps`) that sets this secret.
    var apiName: String {
        switch self {
        case .jwtSecret: "tokens.hs256_secret"
        case .apnsKey: "push.apns.key_p8"
        case .fcmServiceAccount: "push.fcm.service_account"
        case .expoAccessToken: "push.expo.access_token"
        case .vapidPrivateKey: "push.webpush.vapid_private_key"
        }
    }
}
