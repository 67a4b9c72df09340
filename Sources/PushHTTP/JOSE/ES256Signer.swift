import COpenSSL

/// Signs JWTs with ES256 (ECDSA on P-256 with SHA-256, RFC 7518 §3.4) — the only algorithm
/// APNs token auth accepts (push-providers.md §1.5).
///
/// The key is the `.p8` Apple hands out: PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`), EC P-256.
/// Signatures are the raw 64-byte `r || s`, each half big-endian and left-padded to 32 bytes
/// (RFC 7518 §3.4, erratum 6612) — not the DER that OpenSSL produces. About one signature in 128
/// has an `r` or `s` shorter than 32 bytes; `BN_bn2binpad` keeps those valid where `BN_bn2bin`
/// would not (the bug of APNSwift #36).
///
/// Immutable and thread-safe. `description` never shows key material.
public final class ES256Signer: JWTSigner, CustomStringConvertible, CustomDebugStringConvertible {
    public var algorithm: String { "ES256" }
    private let key: PrivateKey

    /// Loads an EC P-256 private key.
    ///
    /// - Parameters:
    ///   - pem: the `.p8` text. A one-line value with literal `\n` escapes (as `APNS_KEY_P8` allows),
    ///     surrounding quotes and a traditional `EC PRIVATE KEY` block are accepted too.
    ///   - source: what to name in errors (the env var or file path), e.g. `APNS_KEY_P8`.
    /// - Throws: `PushCredentialError.unreadableKey` when no PEM private key parses (or it is
    ///   passphrase-protected), `.wrongKeyType` for RSA, other curves, Ed25519…
    public init(pem: String, source: String = "key") throws(PushCredentialError) {
        key = try PrivateKey(pem: pem, kind: .ecP256, source: source)
    }

    /// The raw 64-byte `r || s` ES256 signature of `signingInput`. ECDSA is randomized: two calls
    /// give different, equally valid signatures.
    public func sign(_ signingInput: [UInt8]) throws(JWTSigningError) -> [UInt8] {
        try Self.rawSignature(fromDER: key.signSHA256(signingInput))
    }

    /// The public key as `-----BEGIN PUBLIC KEY-----` PEM (not secret), for verifiers and doubles.
    public func publicKeyPEM() -> String { key.publicKeyPEM() }

    public var description: String { "ES256Signer(EC P-256)" }
    public var debugDescription: String { description }

    /// Converts a DER `ECDSA-Sig-Value` (`SEQUENCE { r INTEGER, s INTEGER }`) to JWS's raw form.
    ///
    /// - Returns: 64 bytes: `r` then `s`, each left-padded with zeros to 32 bytes.
    /// - Throws: `.malformedECDSASignature` if the DER does not parse or a value exceeds 32 bytes.
    static func rawSignature(fromDER der: [UInt8]) throws(JWTSigningError) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature = parsed else {
            OpenSSLErrorText.clear()
            throw .malformedECDSASignature
        }
        defer { ECDSA_SIG_free(signature) }
        var r: OpaquePointer?
        var s: OpaquePointer?
        ECDSA_SIG_get0(signature, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        // BN_bn2binpad returns -1 when the number does not fit in 32 bytes.
        let written = raw.withUnsafeMutableBufferPointer { out -> (Int32, Int32) in
            (BN_bn2binpad(r, out.baseAddress!, 32), BN_bn2binpad(s, out.baseAddress! + 32, 32))
        }
        guard written == (32, 32) else { throw .malformedECDSASignature }
        return raw
    }
}
