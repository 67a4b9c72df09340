import HeraldCore
import PushHTTP

/// The application server's VAPID identity (RFC 8292): a P-256 key pair whose public half
/// browsers subscribe with (`applicationServerKey`) and whose private half signs every push's
/// JWT, plus the contact (`sub`) push services may use to reach the operator.
///
/// | variable | meaning |
/// |---|---|
/// | `HERALD_VAPID_PRIVATE_KEY` | the 32-byte private scalar, base64url (what `herald vapid generate` and web-push libraries print) |
/// | `HERALD_VAPID_KEY_PATH` | alternative: a PEM file with the EC P-256 private key (`PRIVATE KEY` or `EC PRIVATE KEY`) |
/// | `HERALD_VAPID_PUBLIC_KEY` | optional: the 65-byte public key, base64url; checked against the private key |
/// | `HERALD_VAPID_SUBJECT` | `mailto:ops@example.com` or an `https:` URL |
///
/// `description` shows the public key and subject, never the private key.
public struct VAPIDCredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// Signs the VAPID JWTs (ES256).
    public let signer: ES256Signer
    /// The public key, 65 bytes uncompressed.
    public let publicKey: [UInt8]
    /// The `sub` claim.
    public let subject: String
    /// Where the key came from, for logs.
    public let keySource: String

    /// The public key as browsers take it (`applicationServerKey`) and as `k=` carries it: base64url.
    public var publicKeyBase64URL: String { Base64URL.encode(publicKey) }

    init(keyPair: P256KeyPair, subject: String, keySource: String) throws(PushCredentialError) {
        let pem: String
        do {
            pem = try keyPair.pem()
        } catch {
            throw .unreadableKey(variable: keySource, reason: error.description)
        }
        signer = try ES256Signer(pem: pem, source: keySource)
        publicKey = keyPair.publicKey
        self.subject = subject
        self.keySource = keySource
    }

    /// Reads the VAPID settings from `environment`.
    ///
    /// - Returns: nil when none of the variables is set (Web Push is off).
    /// - Throws: `PushCredentialError` naming the variable: `.missingVariables`,
    ///   `.conflictingVariables` (both key variables), `.unreadableFile`, `.unreadableKey`,
    ///   `.invalidValue` (subject, public key mismatch).
    public static func load(environment: [String: String]) throws(PushCredentialError) -> VAPIDCredentials? {
        let inline = EnvironmentReading.value("HERALD_VAPID_PRIVATE_KEY", in: environment)
        let path = EnvironmentReading.value("HERALD_VAPID_KEY_PATH", in: environment)
        let publicText = EnvironmentReading.value("HERALD_VAPID_PUBLIC_KEY", in: environment)
        let subject = EnvironmentReading.value("HERALD_VAPID_SUBJECT", in: environment)
        if inline == nil, path == nil, publicText == nil, subject == nil { return nil }
        if inline != nil, path != nil { throw .conflictingVariables("HERALD_VAPID_PRIVATE_KEY", "HERALD_VAPID_KEY_PATH") }
        var missing: [String] = []
        if inline == nil, path == nil { missing.append("HERALD_VAPID_PRIVATE_KEY (or HERALD_VAPID_KEY_PATH)") }
        if subject == nil { missing.append("HERALD_VAPID_SUBJECT") }
        guard missing.isEmpty, let subject else { throw .missingVariables(missing) }
        try checkSubject(subject)

        let keyPair: P256KeyPair
        let source: String
        do {
            if let inline {
                source = "HERALD_VAPID_PRIVATE_KEY"
                guard let scalar = Base64URL.decode(inline) else {
                    throw PushCredentialError.unreadableKey(variable: source, reason: "not base64url")
                }
                keyPair = try P256KeyPair(privateScalar: scalar)
            } else {
                source = "HERALD_VAPID_KEY_PATH"
                keyPair = try P256KeyPair(pem: EnvironmentReading.readFile(path!, variable: source))
            }
        } catch let error as PushCredentialError {
            throw error
        } catch let error as WebPushCryptoError {
            throw .unreadableKey(variable: inline != nil ? "HERALD_VAPID_PRIVATE_KEY" : "HERALD_VAPID_KEY_PATH", reason: error.description)
        } catch {
            throw .unreadableKey(variable: "HERALD_VAPID_PRIVATE_KEY", reason: "\(error)")
        }
        if let publicText, Base64URL.decode(publicText) != keyPair.publicKey {
            throw .invalidValue(variable: "HERALD_VAPID_PUBLIC_KEY",
                                reason: "does not match the private key (its public key is \(Base64URL.encode(keyPair.publicKey)))")
        }
        return try VAPIDCredentials(keyPair: keyPair, subject: subject, keySource: source == "HERALD_VAPID_KEY_PATH" ? "HERALD_VAPID_KEY_PATH=\(path!)" : source)
    }

    /// RFC 8292 §2.1: a `mailto:` address or an `https:` URL.
    static func checkSubject(_ subject: String) throws(PushCredentialError) {
        let lower = subject.lowercased()
        let ok = (lower.hasPrefix("mailto:") && subject.count > 7 && subject.contains("@"))
            || (lower.hasPrefix("https://") && subject.count > 8)
        guard ok, subject.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .invalidValue(variable: "HERALD_VAPID_SUBJECT", reason: "must be a mailto: address or an https: URL (RFC 8292 §2.1)")
        }
    }

    public var description: String { "VAPIDCredentials(public_key: \(publicKeyBase64URL), subject: \(subject), key: \(keySource))" }
    public var debugDescription: String { description }
}

/// A new VAPID key pair, as `herald vapid generate` prints it.
public struct GeneratedVAPIDKeys: Sendable {
    /// `HERALD_VAPID_PUBLIC_KEY`: 65 bytes uncompressed, base64url.
    public let publicKey: String
    /// `HERALD_VAPID_PRIVATE_KEY`: the 32-byte scalar, base64url (secret).
    public let privateKey: String
    /// The same private key as PKCS#8 PEM, for `HERALD_VAPID_KEY_PATH` (secret).
    public let pem: String

    /// - Throws: `WebPushCryptoError.openSSL` when OpenSSL cannot make a key.
    public static func generate() throws(WebPushCryptoError) -> GeneratedVAPIDKeys {
        let pair = try P256KeyPair.generate()
        return GeneratedVAPIDKeys(publicKey: Base64URL.encode(pair.publicKey), privateKey: Base64URL.encode(try pair.privateScalar()), pem: try pair.pem())
    }
}
