import COpenSSL
import Digests
import HeraldCore
import Synchronization

/// The JWS algorithms Herald accepts (RFC 7518 §3.1). Raw values are the exact, case-sensitive
/// `alg` header strings.
public enum JWTAlgorithm: String, Sendable {
    /// HMAC with SHA-256 (RFC 7518 §3.2). Shared secret; used for dev mode and simple deployments.
    case hs256 = "HS256"
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3).
    case rs256 = "RS256"
    /// ECDSA on P-256 with SHA-256 (RFC 7518 §3.4); signatures are raw 64-byte `r || s`.
    case es256 = "ES256"
}

/// Why a verification key could not be created.
public enum VerificationKeyError: Error, Equatable, Sendable {
    /// An HMAC secret was empty: every party could forge tokens.
    case emptySecret
    /// The text holds no readable public-key PEM block (SubjectPublicKeyInfo, or PKCS#1 for RSA).
    /// The string carries OpenSSL's reason, when it gave one.
    case unreadablePEM(String)
    /// The key parsed but cannot be used for RS256/ES256 (e.g. a P-384 or Ed25519 key, an RSA-PSS key,
    /// or an RSA modulus under 2048 bits). The string names what was found.
    case unsupportedKeyType(String)

    /// Human-readable description for logs and startup errors.
    public var message: String {
        switch self {
        case .emptySecret: "HMAC secret is empty"
        case .unreadablePEM(let reason): "cannot read PEM public key: \(reason)"
        case .unsupportedKeyType(let what): "unsupported verification key: \(what)"
        }
    }
}

/// A key that verifies access-token signatures, bound to exactly one algorithm.
///
/// Binding the algorithm to the key, not to the token, is what defeats algorithm-substitution attacks:
/// the verifier only ever asks "is this the key's algorithm?", never "which key fits this header?".
///
/// Safe to share between threads: the `EVP_PKEY` is only read during verification, each
/// verification creates its own `EVP_MD_CTX`, and the HS256 pads are computed once under a lock.
public final class VerificationKey: Sendable {
    /// The only `alg` this key accepts.
    public let algorithm: JWTAlgorithm

    /// The HS256 secret, and its absorbed pads once the first token is checked (`.none` for
    /// RS256/ES256). Not at creation: hashing opens libcrypto, which a process that checks no
    /// token never maps (issue 17, the embedded default's start).
    private let hmac: Mutex<HMACKey>

    private enum HMACKey {
        case none
        case secret([UInt8])
        case ready(HMACSHA256)
    }
    /// Owned `EVP_PKEY*` for RS256/ES256, `nil` for HS256.
    /// `nonisolated(unsafe)` because OpaquePointer is not Sendable; this is sound since the pointer
    /// never changes, and OpenSSL 3 permits concurrent read-only use of a fully constructed EVP_PKEY.
    private nonisolated(unsafe) let pkey: OpaquePointer?

    private init(algorithm: JWTAlgorithm, hmacSecret: [UInt8]?, pkey: OpaquePointer?) {
        self.algorithm = algorithm
        self.hmac = Mutex(hmacSecret.map(HMACKey.secret) ?? .none)
        self.pkey = pkey
    }

    deinit {
        if let pkey { EVP_PKEY_free(pkey) }
    }

    /// An HS256 key (RFC 7518 §3.2).
    ///
    /// RFC 7518 §3.2 requires a secret of at least 256 bits; shorter secrets are accepted here so that
    /// dev configurations work, but production secrets should be 32+ random bytes.
    ///
    /// - Parameter secret: the raw shared secret bytes (not base64).
    /// - Throws: `VerificationKeyError.emptySecret` if `secret` is empty.
    public static func hmac(secret: [UInt8]) throws(VerificationKeyError) -> VerificationKey {
        guard !secret.isEmpty else { throw .emptySecret }
        return VerificationKey(algorithm: .hs256, hmacSecret: secret, pkey: nil)
    }

    /// A public key from PEM text: RSA (→ RS256) or EC on P-256/prime256v1 (→ ES256).
    ///
    /// - Parameter pem: text containing a `-----BEGIN PUBLIC KEY-----` SubjectPublicKeyInfo block
    ///   (RFC 7468 §13); text around the block is ignored. OpenSSL 3 also reads a PKCS#1
    ///   `-----BEGIN RSA PUBLIC KEY-----` block, which is harmless (same key, same RS256 rules).
    ///   Certificates and private keys are refused as unreadable.
    /// - Throws: `VerificationKeyError.unreadablePEM` if no public key can be parsed;
    ///   `.unsupportedKeyType` for other key types or curves, and for RSA keys under 2048 bits
    ///   (RFC 7518 §3.3 forbids them for RS256).
    public static func publicKey(pem: String) throws(VerificationKeyError) -> VerificationKey {
        // The OpenSSL error queue is per thread; leaving entries behind would confuse the next
        // ERR_get_error caller on this thread (e.g. TLS code), so every exit path clears it.
        defer { ERR_clear_error() }

        let bytes = Array(pem.utf8)
        guard !bytes.isEmpty else { throw .unreadablePEM("empty input") }
        guard bytes.count <= Int(Int32.max) else { throw .unreadablePEM("input too large") }
        let parsed: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let pkey = parsed else { throw .unreadablePEM(openSSLReason() ?? "no PUBLIC KEY block found") }

        // From here on the key is freed unless ownership passes to the returned object.
        var owned = true
        defer { if owned { EVP_PKEY_free(pkey) } }

        let algorithm: JWTAlgorithm
        switch EVP_PKEY_get_base_id(pkey) {
        case EVP_PKEY_RSA:
            let bits = EVP_PKEY_get_bits(pkey)
            guard bits >= 2048 else { throw .unsupportedKeyType("RSA key of \(bits) bits; RS256 needs at least 2048") }
            algorithm = .rs256
        case EVP_PKEY_EC:
            let curve = groupName(pkey) ?? "unknown curve"
            guard OBJ_sn2nid(curve) == NID_X9_62_prime256v1 else {
                throw .unsupportedKeyType("EC key on \(curve); ES256 needs prime256v1 (P-256)")
            }
            algorithm = .es256
        case let id:
            let name = OBJ_nid2sn(id).map { String(cString: $0) } ?? "type \(id)"
            throw .unsupportedKeyType("\(name) key; expected RSA or EC P-256")
        }
        owned = false
        return VerificationKey(algorithm: algorithm, hmacSecret: nil, pkey: pkey)
    }

    /// Checks `signature` over `signingInput` (the ASCII `header.payload` bytes, RFC 7515 §5.2 step 8)
    /// with this key's algorithm. Any failure — wrong length, undecodable, mismatch — is just `false`.
    func verify(signature: [UInt8], signingInput: UnsafeRawBufferPointer) -> Bool {
        switch algorithm {
        case .hs256:
            guard signature.count == 32, let hmac = hmacKey() else { return false }
            // Constant time, so response timing cannot be used to guess the MAC byte by byte.
            return HMACSHA256.constantTimeEqual(hmac.authenticationCode(for: signingInput), signature)
        case .rs256:
            guard let pkey, signature.count == Int(EVP_PKEY_get_size(pkey)) else { return false }
            return digestVerify(pkey: pkey, signature: signature, signingInput: signingInput)
        case .es256:
            // JWS carries r || s (RFC 7518 §3.4); OpenSSL verifies only DER ECDSA-Sig-Value.
            guard let pkey, signature.count == 64, let der = Self.derSignature(rawES256: signature) else { return false }
            return digestVerify(pkey: pkey, signature: der, signingInput: signingInput)
        }
    }

    /// The HS256 key's pads, absorbed at the first call (nil for RS256/ES256).
    private func hmacKey() -> HMACSHA256? {
        hmac.withLock { key in
            switch key {
            case .none: return nil
            case .ready(let ready): return ready
            case .secret(let secret):
                let ready = HMACSHA256(key: secret)
                key = .ready(ready)
                return ready
            }
        }
    }

    private func digestVerify(pkey: OpaquePointer, signature: [UInt8], signingInput: UnsafeRawBufferPointer) -> Bool {
        defer { ERR_clear_error() }  // a failed verify queues errors; see publicKey(pem:)
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
        let result = signature.withUnsafeBufferPointer { sig in
            EVP_DigestVerify(
                ctx, sig.baseAddress, sig.count,
                signingInput.baseAddress?.assumingMemoryBound(to: UInt8.self), signingInput.count)
        }
        return result == 1  // 0 is "bad signature", negative is an internal error: both refuse
    }

    /// Converts a 64-byte JWS ES256 signature to DER; `nil` if OpenSSL refuses the integers.
    static func derSignature(rawES256 raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let sig = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(sig) }
        let (r, s) = raw.withUnsafeBufferPointer { b in
            (BN_bin2bn(b.baseAddress, 32, nil), BN_bin2bn(b.baseAddress! + 32, 32, nil))
        }
        guard let r, let s, ECDSA_SIG_set0(sig, r, s) == 1 else {
            // set0 takes ownership only on success.
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(sig, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { b -> Int32 in
            var cursor = b.baseAddress
            return i2d_ECDSA_SIG(sig, &cursor)
        }
        return written == length ? der : nil
    }

    private static func groupName(_ pkey: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(pkey, &buffer, buffer.count, &length) == 1 else { return nil }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func openSSLReason() -> String? {
        let code = ERR_peek_last_error()
        guard code != 0, let reason = ERR_reason_error_string(code) else { return nil }
        return String(cString: reason)
    }

    /// HMAC-SHA256 of `data` under `key` (RFC 2104): see `Digests.HMACSHA256`.
    static func hmacSHA256(key: [UInt8], data: UnsafeRawBufferPointer) -> [UInt8] {
        HMACSHA256(key: key).authenticationCode(for: data)
    }
}
