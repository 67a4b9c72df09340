import COpenSSL

/// An owned OpenSSL private key (`EVP_PKEY*`) loaded from PEM text, shared by the JWT signers.
///
/// Immutable after `init` and safe to share between threads: OpenSSL 3 allows concurrent
/// read-only use of a fully built `EVP_PKEY`, and every signature makes its own `EVP_MD_CTX`.
/// The PEM text is not kept, so nothing secret can leak through `description` or `dump`.
final class PrivateKey: Sendable {
    /// The kind of key a signer needs.
    enum Kind: Sendable {
        /// EC on NIST P-256 (`prime256v1`), the only curve ES256 allows (RFC 7518 §3.4).
        case ecP256
        /// RSA of at least 2048 bits (RFC 7518 §3.3 requires ≥ 2048 for RS256).
        case rsa

        var expectation: String {
            switch self {
            case .ecP256: "an EC P-256 private key (PKCS#8 .p8)"
            case .rsa: "an RSA private key of at least 2048 bits"
            }
        }
    }

    /// `nonisolated(unsafe)` because `OpaquePointer` is not `Sendable`; sound because the pointer is
    /// set once in `init`, only read afterwards, and freed in `deinit`.
    nonisolated(unsafe) let pkey: OpaquePointer

    /// Parses the first private-key PEM block of `pem` and checks it is a `kind` key.
    ///
    /// - Parameters:
    ///   - pem: PEM text; one-line text with literal `\n` escapes is accepted (see `PEMText`).
    ///   - kind: what the caller needs; anything else is refused.
    ///   - source: the variable or path named in errors, e.g. `APNS_KEY_P8`.
    /// - Throws: `PushCredentialError.unreadableKey` or `.wrongKeyType`.
    init(pem: String, kind: Kind, source: String) throws(PushCredentialError) {
        let canonical: String
        do {
            canonical = try PEMText.normalize(pem)
        } catch .noPrivateKeyBlock {
            throw .unreadableKey(variable: source, reason: "no -----BEGIN PRIVATE KEY----- block")
        } catch {
            throw .unreadableKey(variable: source, reason: "the key is passphrase-protected")
        }
        OpenSSLErrorText.clear()
        let bytes = Array(canonical.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            // A callback that refuses, so OpenSSL never falls back to prompting on the terminal.
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let loaded else {
            throw .unreadableKey(variable: source, reason: OpenSSLErrorText.drain(fallback: "not a private key"))
        }
        let found = Self.describe(loaded)
        let acceptable: Bool
        switch kind {
        case .ecP256: acceptable = found == "EC P-256"
        case .rsa: acceptable = EVP_PKEY_get_base_id(loaded) == EVP_PKEY_RSA && EVP_PKEY_get_bits(loaded) >= 2048
        }
        guard acceptable else {
            EVP_PKEY_free(loaded)
            throw .wrongKeyType(variable: source, expected: kind.expectation, found: found)
        }
        pkey = loaded
    }

    deinit { EVP_PKEY_free(pkey) }

    /// A short, non-secret description such as "EC P-256", "EC secp384r1", "RSA 2048 bits", "ED25519".
    private static func describe(_ pkey: OpaquePointer) -> String {
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(pkey, &name, name.count, &length) == 1 else { return "EC (unknown curve)" }
            let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return curve == "prime256v1" || curve == "P-256" ? "EC P-256" : "EC \(curve)"
        case EVP_PKEY_RSA: return "RSA \(EVP_PKEY_get_bits(pkey)) bits"
        case EVP_PKEY_RSA_PSS: return "RSA-PSS"
        case EVP_PKEY_ED25519: return "ED25519"
        default: return "key type \(EVP_PKEY_get_base_id(pkey))"
        }
    }

    /// Signs `message` with SHA-256 (`EVP_DigestSign`): DER `ECDSA-Sig-Value` for EC keys,
    /// the raw RSASSA-PKCS1-v1_5 signature (modulus length) for RSA keys.
    func signSHA256(_ message: [UInt8]) throws(JWTSigningError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw .openSSL("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pkey) == 1 else {
            throw .openSSL(OpenSSLErrorText.drain(fallback: "EVP_DigestSignInit failed"))
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw .openSSL(OpenSSLErrorText.drain(fallback: "EVP_DigestSign (size) failed"))
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw .openSSL(OpenSSLErrorText.drain(fallback: "EVP_DigestSign failed"))
        }
        return Array(signature.prefix(length))
    }

    /// The public half as SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`), e.g. for a
    /// provider double that must verify our tokens. Not secret.
    func publicKeyPEM() -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PUBKEY(bio, pkey) == 1 else { return "" }
        // BIO_get_mem_data is a macro Swift cannot import; read what is pending instead.
        let pending = Int(BIO_ctrl_pending(bio))
        var buffer = [UInt8](repeating: 0, count: pending)
        let read = BIO_read(bio, &buffer, Int32(pending))
        return String(decoding: buffer.prefix(max(0, Int(read))), as: UTF8.self)
    }
}

/// Signing failed inside OpenSSL (out of memory, a broken provider). Rare, and never a reason to
/// drop a device: callers treat it like a transport failure.
public enum JWTSigningError: Error, Equatable, Sendable {
    /// OpenSSL's reason text.
    case openSSL(String)
    /// The DER signature from OpenSSL could not be converted to raw `r || s`.
    case malformedECDSASignature
}
