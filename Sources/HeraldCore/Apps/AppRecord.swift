/// One app as stored (SPEC AP-1): its settings, its sealed secrets and the hashes of its server keys.
public struct AppRecord: Sendable, Equatable {
    /// The app's id (never `default`, which is not stored).
    public var id: AppID
    /// Its settings that are not secret.
    public var settings: AppSettings
    /// Sealed secrets by field (`AppSecretField`): never shown, never logged.
    public var secrets: [AppSecretField: SealedSecret]
    /// The app's server keys, as SHA-256 hashes (a key is shown once, when created).
    public var serverKeys: [ServerKeyEntry]
    /// Unix ms.
    public var createdAt: Int64
    /// Unix ms of the last change.
    public var updatedAt: Int64

    public init(id: AppID, settings: AppSettings, secrets: [AppSecretField: SealedSecret] = [:], serverKeys: [ServerKeyEntry] = [],
                createdAt: Int64, updatedAt: Int64) {
        self.id = id
        self.settings = settings
        self.secrets = secrets
        self.serverKeys = serverKeys
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A secret field of an app (AP-2): its name in requests and in the sealed value's bound data.
public enum AppSecretField: String, Sendable, CaseIterable, Codable, Hashable {
    /// The HS256 access-token secret.
    case jwtSecret = "jwt_secret"
    /// The APNs .p8 private key (PEM).
    case apnsKey = "apns_key_p8"
    /// The FCM service account JSON.
    case fcmServiceAccount = "fcm_service_account"
    /// The Expo access token.
    case expoAccessToken = "expo_access_token"
    /// The VAPID private key (PEM or base64url scalar).
    case vapidPrivateKey = "vapid_private_key"
}

/// A secret as stored: ciphertext (`SecretBox`'s envelope), what answers show instead of it, and
/// when it was set.
public struct SealedSecret: Codable, Sendable, Equatable {
    /// `v1.<key id>.<nonce>.<ciphertext+tag>` (base64url parts), AES-256-GCM.
    public var sealed: String
    /// The first 16 hex digits of the plaintext's SHA-256.
    public var fingerprint: String
    /// Unix ms.
    public var setAt: Int64

    public init(sealed: String, fingerprint: String, setAt: Int64) {
        self.sealed = sealed
        self.fingerprint = fingerprint
        self.setAt = setAt
    }

    enum CodingKeys: String, CodingKey { case sealed, fingerprint, setAt = "set_at" }
}

/// One server key of an app, by hash (ADR 0006: the key names the app).
public struct ServerKeyEntry: Codable, Sendable, Equatable {
    /// Lower-case hex SHA-256 of the key.
    public var hash: String
    /// The first 16 hex digits of `hash`, to tell keys apart in answers.
    public var fingerprint: String { String(hash.prefix(16)) }
    /// Unix ms.
    public var createdAt: Int64

    public init(hash: String, createdAt: Int64) {
        self.hash = hash
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey { case hash, createdAt = "created_at" }
}
