/// Signs JWTs with RS256 (RSASSA-PKCS1-v1_5 with SHA-256, RFC 7518 §3.3), as Google's OAuth2
/// JWT grant for service accounts requires (push-providers.md §2.4).
///
/// The key is the `private_key` of a Google service-account JSON: PKCS#8 PEM, RSA 2048.
/// The signature is OpenSSL's output as is (256 bytes for RSA-2048), no conversion needed.
/// PKCS#1 v1.5 is deterministic, so the same input always gives the same signature — which the
/// tests use as a fixed vector.
///
/// Immutable and thread-safe. `description` never shows key material.
public final class RS256Signer: JWTSigner, CustomStringConvertible, CustomDebugStringConvertible {
    public var algorithm: String { "RS256" }
    private let key: PrivateKey

    /// Loads an RSA private key (≥ 2048 bits).
    ///
    /// - Parameters:
    ///   - pem: PEM text (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY`); literal `\n` escapes accepted.
    ///   - source: what to name in errors, e.g. `FCM_SERVICE_ACCOUNT_JSON`.
    /// - Throws: `PushCredentialError.unreadableKey` or `.wrongKeyType` (EC key, RSA under 2048 bits).
    public init(pem: String, source: String = "key") throws(PushCredentialError) {
        key = try PrivateKey(pem: pem, kind: .rsa, source: source)
    }

    /// The RS256 signature of `signingInput` (modulus length, e.g. 256 bytes).
    public func sign(_ signingInput: [UInt8]) throws(JWTSigningError) -> [UInt8] {
        try key.signSHA256(signingInput)
    }

    /// The public key as `-----BEGIN PUBLIC KEY-----` PEM (not secret).
    public func publicKeyPEM() -> String { key.publicKeyPEM() }

    public var description: String { "RS256Signer(RSA)" }
    public var debugDescription: String { description }
}
