/// An app's settings that are not secret (SPEC AP-1), as stored in `apps.settings_json` and shown
/// by `GET /v1/apps/{app}`. Secrets (the HS256 secret, push credentials) are `SealedSecret`s in
/// the `AppRecord`, server keys are stored as hashes.
public struct AppSettings: Codable, Sendable, Equatable {
    /// How the app's access tokens are verified and read.
    public var tokens: AppTokenSettings
    /// Origins allowed to call Herald from a browser for this app (`Origin` compared exactly).
    public var corsOrigins: [String]
    /// The app's kind catalog, as the JSON text of a `HERALD_CATALOG` file; nil: no catalog.
    public var catalogJSON: String?
    /// Push payload options (AP-4).
    public var payload: AppPayloadSettings
    /// Audience and destination exclusions (AP-6).
    public var exclusions: AppExclusions
    /// The locale texts fall back to when a device and user have none (BCP 47); nil: the server's.
    public var defaultLocale: String?
    /// Topic, project and environment facts of the app's push providers that are not secret
    /// (the APNs topic, FCM project id, …), shown in answers beside the credentials' fingerprints.
    public var push: AppPushSettings

    public init(tokens: AppTokenSettings = AppTokenSettings(), corsOrigins: [String] = [], catalogJSON: String? = nil,
                payload: AppPayloadSettings = AppPayloadSettings(), exclusions: AppExclusions = AppExclusions(),
                defaultLocale: String? = nil, push: AppPushSettings = AppPushSettings()) {
        self.tokens = tokens
        self.corsOrigins = corsOrigins
        self.catalogJSON = catalogJSON
        self.payload = payload
        self.exclusions = exclusions
        self.defaultLocale = defaultLocale
        self.push = push
    }

    enum CodingKeys: String, CodingKey {
        case tokens, corsOrigins = "cors_origins", catalogJSON = "catalog_json", payload, exclusions
        case defaultLocale = "default_locale", push
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        tokens = try c.decodeIfPresent(AppTokenSettings.self, forKey: .tokens) ?? AppTokenSettings()
        corsOrigins = try c.decodeIfPresent([String].self, forKey: .corsOrigins) ?? []
        catalogJSON = try c.decodeIfPresent(String.self, forKey: .catalogJSON)
        payload = try c.decodeIfPresent(AppPayloadSettings.self, forKey: .payload) ?? AppPayloadSettings()
        exclusions = try c.decodeIfPresent(AppExclusions.self, forKey: .exclusions) ?? AppExclusions()
        defaultLocale = try c.decodeIfPresent(String.self, forKey: .defaultLocale)
        push = try c.decodeIfPresent(AppPushSettings.self, forKey: .push) ?? AppPushSettings()
    }
}

/// Access-token verification and claim names of one app (SPEC RT-3, AP-1, AP-5; ADR 0006).
public struct AppTokenSettings: Codable, Sendable, Equatable {
    /// PEM public keys (RSA ≥ 2048 bits → RS256, EC P-256 → ES256).
    public var publicKeys: [String]
    /// A JWKS document (RFC 7517 §5) as JSON text; its keys are chosen by the token's `kid`.
    /// Replacing it rotates keys.
    public var jwks: String?
    /// The `alg` values accepted (`HS256`, `RS256`, `ES256`); empty: every algorithm of a configured key.
    public var algorithms: [String]
    /// The claim holding the user id (default `sub`).
    public var userClaim: String
    /// The claim holding the session id (default `sid`); nil: the app's tokens have no session,
    /// devices bind to the user alone (AP-5).
    public var sessionClaim: String?
    /// When set, a token's `iss` must equal it; also routes tokens without an `app` claim here.
    public var issuer: String?
    /// When set, a token's `aud` (string or array) must contain it.
    public var audience: String?

    public init(publicKeys: [String] = [], jwks: String? = nil, algorithms: [String] = [], userClaim: String = "sub",
                sessionClaim: String? = "sid", issuer: String? = nil, audience: String? = nil) {
        self.publicKeys = publicKeys
        self.jwks = jwks
        self.algorithms = algorithms
        self.userClaim = userClaim
        self.sessionClaim = sessionClaim
        self.issuer = issuer
        self.audience = audience
    }

    enum CodingKeys: String, CodingKey {
        case publicKeys = "public_keys", jwks, algorithms, userClaim = "user_claim", sessionClaim = "session_claim", issuer, audience
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        publicKeys = try c.decodeIfPresent([String].self, forKey: .publicKeys) ?? []
        jwks = try c.decodeIfPresent(String.self, forKey: .jwks)
        algorithms = try c.decodeIfPresent([String].self, forKey: .algorithms) ?? []
        userClaim = try c.decodeIfPresent(String.self, forKey: .userClaim) ?? "sub"
        // Present as null means "no session claim"; absent means the default.
        sessionClaim = c.contains(.sessionClaim) ? try c.decodeIfPresent(String.self, forKey: .sessionClaim) : "sid"
        issuer = try c.decodeIfPresent(String.self, forKey: .issuer)
        audience = try c.decodeIfPresent(String.self, forKey: .audience)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(publicKeys, forKey: .publicKeys)
        try c.encodeIfPresent(jwks, forKey: .jwks)
        try c.encode(algorithms, forKey: .algorithms)
        try c.encode(userClaim, forKey: .userClaim)
        try c.encode(sessionClaim, forKey: .sessionClaim)  // null is meaningful (AP-5)
        try c.encodeIfPresent(issuer, forKey: .issuer)
        try c.encodeIfPresent(audience, forKey: .audience)
    }
}

/// Payload options of one app (AP-4). Read from the app record; applied by the payload builders.
public struct AppPayloadSettings: Codable, Sendable, Equatable {
    /// The key the app's data go under (seed 004: `respondo`); nil: data keys at the top level.
    public var rootKey: String?

    public init(rootKey: String? = nil) { self.rootKey = rootKey }

    enum CodingKeys: String, CodingKey { case rootKey = "root_key" }
}

/// Exclusions of one app (AP-6): notifications matching one are not pushed.
public struct AppExclusions: Codable, Sendable, Equatable {
    /// Audiences excluded from push, compared without regard to case.
    public var audiences: [String]
    /// Kinds excluded from push.
    public var kinds: [String]
    /// Data key prefixes excluded: a notification whose `data[key]` starts with `prefix`.
    public var dataPrefixes: [AppDataPrefix]

    public init(audiences: [String] = [], kinds: [String] = [], dataPrefixes: [AppDataPrefix] = []) {
        self.audiences = audiences
        self.kinds = kinds
        self.dataPrefixes = dataPrefixes
    }

    enum CodingKeys: String, CodingKey { case audiences, kinds, dataPrefixes = "data_prefixes" }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        audiences = try c.decodeIfPresent([String].self, forKey: .audiences) ?? []
        kinds = try c.decodeIfPresent([String].self, forKey: .kinds) ?? []
        dataPrefixes = try c.decodeIfPresent([AppDataPrefix].self, forKey: .dataPrefixes) ?? []
    }
}

/// One destination exclusion: `data[key]` starting with `prefix` (seed 002's staff-only `actionUrl`s).
public struct AppDataPrefix: Codable, Sendable, Equatable {
    /// The data key looked at (`actionUrl`).
    public var key: String
    /// The value prefix that excludes (`/staff/`), compared exactly.
    public var prefix: String

    public init(key: String, prefix: String) {
        self.key = key
        self.prefix = prefix
    }
}

/// The non-secret half of an app's push credentials, set with them (AP-2).
public struct AppPushSettings: Codable, Sendable, Equatable {
    /// APNs: the .p8 key's id (10 characters, Apple's).
    public var apnsKeyID: String?
    /// APNs: the team id the key belongs to.
    public var apnsTeamID: String?
    /// APNs: the topic (the app's bundle id).
    public var apnsTopic: String?
    /// FCM: the project id (default: the service account's `project_id`).
    public var fcmProjectID: String?
    /// Web Push: the VAPID subject (`mailto:` or `https:`).
    public var vapidSubject: String?
    /// Web Push: the VAPID public key (base64url, 65 bytes), checked against the private key when given.
    public var vapidPublicKey: String?
    /// Expo without an access token (`"push": {"expo": {}}`): Expo needs none unless the project
    /// turned on "enhanced push security". nil for an app with a token (the secret says Expo is
    /// on) or without Expo; absent from apps stored before it, which read as nil.
    public var expoWithoutToken: Bool?

    public init() {}

    /// Whether the app sends to Expo: an access token, or `expoWithoutToken`.
    public func expoEnabled(hasAccessToken: Bool) -> Bool { hasAccessToken || expoWithoutToken == true }

    enum CodingKeys: String, CodingKey {
        case apnsKeyID = "apns_key_id", apnsTeamID = "apns_team_id", apnsTopic = "apns_topic", fcmProjectID = "fcm_project_id"
        case vapidSubject = "vapid_subject", vapidPublicKey = "vapid_public_key", expoWithoutToken = "expo_without_token"
    }
}
