import Foundation
import HeraldCore
import PushHTTP

/// A refused app setting (AP-1, AP-2): answered 400 `invalid_request` with `field` naming it.
public struct AppSettingError: Error, Equatable, Sendable {
    /// The request member, dotted (`push.apns.key_p8`, `tokens.jwks`).
    public var field: String
    /// What is wrong with it, for the 400's `message`; never contains key material.
    public var message: String

    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }
}

/// One app as requests see it (ADR 0006): its settings, and the verifiers built from them once.
public struct ResolvedApp: Sendable {
    /// The app's id.
    public let id: AppID
    /// The settings it was built from (default ones for `default`, whose keys come from the environment).
    public let settings: AppSettings
    /// HS256 secret and PEM keys, each bound to its algorithm.
    let verifiers: [AccessTokenVerifier]
    /// The JWKS document's keys, by `kid`.
    let jwks: [String: AccessTokenVerifier]
    /// Hex SHA-256 of each server key; empty for `default`, whose `HERALD_SERVER_KEY` the
    /// `AppDirectory` hashes at its first use (issue 17: hashing opens libcrypto).
    let serverKeyHashes: [String]
    /// Whether the app has a server key (for `default`: whether `HERALD_SERVER_KEY` is set).
    let hasServerKey: Bool
    /// What the choke point applies to the app's calls (catalog with its exclusions and default
    /// locale, payload options); nil for `default`, whose profile the environment gives the `Notifier`.
    public let profile: AppProfile?
    /// What the app's push providers are built from, as comparable text: the non-secret push
    /// settings and each push secret's fingerprint and time set. Equal before and after a change:
    /// the providers (their connections and provider tokens) are kept (APNs refuses a provider
    /// token renewed more often than every 20 minutes).
    let pushIdentity: String
    /// The HS256 secret's fingerprint and time set (nil without one): with `settings.tokens`,
    /// what decides whether a change may leave open streams with tokens that no longer verify.
    let jwtSecretStamp: String?
    /// The Web Push application server key (base64url), nil without VAPID credentials
    /// (`GET /v1/push/vapid-public-key`): `HERALD_VAPID_*`'s for `default`, else set by
    /// `AppService` from the app's key.
    public internal(set) var webPushPublicKey: String?

    /// The environment's app: the keys and server key `HERALD_*` configure, every other setting at
    /// its default.
    init(environment configuration: APIConfiguration) {
        id = .default
        settings = AppSettings()
        verifiers = configuration.verificationKeys.map { AccessTokenVerifier(key: $0, leewaySeconds: configuration.leewaySeconds) }
        jwks = [:]
        serverKeyHashes = []
        hasServerKey = configuration.serverKey != nil
        profile = nil
        pushIdentity = ""
        jwtSecretStamp = nil
        webPushPublicKey = configuration.vapidPublicKey
    }

    /// A stored app, its token settings checked.
    ///
    /// - Parameters:
    ///   - jwtSecret: the opened HS256 secret, if the app has one.
    ///   - leewaySeconds: clock skew allowed on `exp`/`nbf`.
    /// - Throws: `AppSettingError` naming the first unusable token setting (`tokens.public_keys[1]`,
    ///   `tokens.jwks`, `tokens.algorithms`, `tokens.user_claim`).
    public init(record: AppRecord, jwtSecret: [UInt8]?, leewaySeconds: Int64 = 60) throws(AppSettingError) {
        id = record.id
        settings = record.settings
        let tokens = record.settings.tokens
        var algorithms: Set<JWTAlgorithm> = []
        for name in tokens.algorithms {
            guard let algorithm = JWTAlgorithm(rawValue: name) else {
                throw AppSettingError(field: "tokens.algorithms", message: "\(name) is not one of HS256, RS256, ES256")
            }
            algorithms.insert(algorithm)
        }
        guard !tokens.userClaim.isEmpty, tokens.sessionClaim?.isEmpty != true else {
            throw AppSettingError(field: "tokens.user_claim", message: "claim names are non-empty")
        }
        let names = JWTPayload.ClaimNames(user: tokens.userClaim, session: tokens.sessionClaim)
        func verifier(_ key: VerificationKey) -> AccessTokenVerifier {
            var verifier = AccessTokenVerifier(key: key, leewaySeconds: leewaySeconds)
            verifier.claimNames = names
            return verifier
        }
        var keys: [VerificationKey] = []
        if let jwtSecret {
            do { keys.append(try VerificationKey.hmac(secret: jwtSecret)) } catch {
                throw AppSettingError(field: "tokens.hs256_secret", message: error.message)
            }
        }
        for (index, pem) in tokens.publicKeys.enumerated() {
            do { keys.append(try VerificationKey.publicKey(pem: pem)) } catch {
                throw AppSettingError(field: "tokens.public_keys[\(index)]", message: error.message)
            }
        }
        var byKid: [String: VerificationKey] = [:]
        if let document = tokens.jwks {
            do { byKid = try JWKS(json: document).keys } catch {
                throw AppSettingError(field: "tokens.jwks", message: error.message)
            }
        }
        let accepted: (VerificationKey) -> Bool = { algorithms.isEmpty || algorithms.contains($0.algorithm) }
        verifiers = keys.filter(accepted).map(verifier)
        jwks = byKid.filter { accepted($0.value) }.mapValues(verifier)
        if !keys.isEmpty || !byKid.isEmpty, verifiers.isEmpty, jwks.isEmpty {
            throw AppSettingError(field: "tokens.algorithms", message: "no configured key uses an accepted algorithm")
        }
        serverKeyHashes = record.serverKeys.map(\.hash)
        hasServerKey = !serverKeyHashes.isEmpty
        profile = try Self.profile(record)
        pushIdentity = Self.pushIdentity(record)
        jwtSecretStamp = record.secrets[.jwtSecret].map { "\($0.fingerprint)@\($0.setAt)" }
    }

    /// Whether tokens this app accepted may be refused by `other`, the same app changed: its
    /// token settings or HS256 secret differ (a key added counts too; telling which tokens a
    /// replaced key verified would need each stream's key).
    func tokensDiffer(from other: ResolvedApp) -> Bool {
        settings.tokens != other.settings.tokens || jwtSecretStamp != other.jwtSecretStamp
    }

    static func pushIdentity(_ record: AppRecord) -> String {
        let push = record.settings.push
        let settings = [push.apnsKeyID, push.apnsTeamID, push.apnsTopic, push.fcmProjectID, push.vapidSubject, push.vapidPublicKey,
                        push.expoWithoutToken.map { "expo:\($0)" }]
            .map { $0 ?? "-" }.joined(separator: "\n")
        let secrets = record.secrets.filter { $0.key != .jwtSecret }.sorted { $0.key.rawValue < $1.key.rawValue }
            .map { "\($0.key.rawValue)=\($0.value.fingerprint)@\($0.value.setAt)" }.joined(separator: "\n")
        return settings + "\n" + secrets
    }

    /// The app's catalog (none: an empty one) with the settings' default locale in place of the
    /// catalog's and its exclusions added to the catalog's, and its payload options.
    /// - Throws: `AppSettingError` for `catalog` (it does not parse, or a text has none for the
    ///   default locale), `default_locale` or `payload.root_key`.
    static func profile(_ record: AppRecord) throws(AppSettingError) -> AppProfile {
        let settings = record.settings
        var base = NotificationCatalog.empty
        if let text = settings.catalogJSON {
            do { base = try NotificationCatalog.parse(Array(text.utf8), defaultLocale: settings.defaultLocale) } catch {
                // Parsed once; only a refusal is parsed again, without the app's locale, to name
                // the field at fault: the catalog itself, or its texts for that locale.
                guard settings.defaultLocale != nil else { throw AppSettingError(field: "catalog", message: error.message) }
                do { _ = try NotificationCatalog.parse(Array(text.utf8)) } catch {
                    throw AppSettingError(field: "catalog", message: error.message)
                }
                throw AppSettingError(field: "default_locale", message: error.message)
            }
        } else if let locale = settings.defaultLocale {
            guard let tag = LocaleTag(locale) else { throw AppSettingError(field: "default_locale", message: "\(locale) is not a language tag") }
            base = NotificationCatalog(app: record.id.rawValue, defaultLocale: tag.rawValue, notificationIDKey: base.notificationIDKey,
                                       kindKey: base.kindKey, exclusions: base.exclusions, categories: base.categories, kinds: base.kinds)
        }
        let own = settings.exclusions
        var data = base.exclusions.data
        for (key, rules) in Dictionary(grouping: own.dataPrefixes, by: \.key).sorted(by: { $0.key < $1.key }) {
            data.append(ExclusionRules.DataPattern(key: key, prefixes: rules.map(\.prefix)))
        }
        let exclusions = ExclusionRules(audiences: base.exclusions.audiences.union(own.audiences),
                                        kinds: base.exclusions.kinds.union(own.kinds), data: data)
        let catalog = NotificationCatalog(app: record.id.rawValue, defaultLocale: base.defaultLocale, notificationIDKey: base.notificationIDKey,
                                          kindKey: base.kindKey, exclusions: exclusions, categories: base.categories, kinds: base.kinds)
        let payload: PayloadOptions
        do { payload = try PayloadOptions(rootKey: settings.payload.rootKey) } catch {
            throw AppSettingError(field: "payload.root_key", message: error.message)
        }
        return AppProfile(app: record.id.rawValue, catalog: catalog, payload: payload)
    }

    /// Whether the app accepts access tokens at all.
    var hasTokenKeys: Bool { !verifiers.isEmpty || !jwks.isEmpty }

    /// The verifiers to try for a token whose header names `kid`: the JWKS key of that `kid` when
    /// the app has a document (a `kid` it does not list gets none), then the static keys.
    func verifiers(kid: String?) -> [AccessTokenVerifier] {
        guard !jwks.isEmpty else { return verifiers }
        if let kid { return (jwks[kid].map { [$0] } ?? []) + verifiers }
        return (jwks[""].map { [$0] } ?? (jwks.count == 1 ? Array(jwks.values) : [])) + verifiers
    }
}
