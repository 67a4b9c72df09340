import COpenSSL

/// Why a Web Push key or encryption step failed inside OpenSSL, or a key was not usable.
public enum WebPushCryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes are not an uncompressed point on P-256 (65 bytes, `0x04 || X || Y`).
    case invalidPublicKey
    /// The bytes are not a P-256 private key (a 32-byte scalar, or a PEM EC P-256 key).
    case invalidPrivateKey(String)
    /// OpenSSL failed (out of memory, a broken provider); the reason is OpenSSL's.
    case openSSL(String)

    public var description: String {
        switch self {
        case .invalidPublicKey: "not an uncompressed P-256 public key"
        case .invalidPrivateKey(let reason): "not a P-256 private key: \(reason)"
        case .openSSL(let reason): "OpenSSL: \(reason)"
        }
    }
}

/// The DER prefix of a P-256 SubjectPublicKeyInfo (RFC 5480): `SEQUENCE { SEQUENCE { id-ecPublicKey,
/// prime256v1 }, BIT STRING (0 unused bits) }`; the 65-byte point follows. Building SPKI DER lets
/// `d2i_PUBKEY` check the point is on the curve, without OpenSSL 3's parameter builders.
private let spkiPrefix: [UInt8] = [0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
                                   0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00]

/// An owned P-256 public key (`EVP_PKEY*`) from its uncompressed point.
///
/// Immutable after `init`; OpenSSL 3 allows concurrent read-only use of a built key.
final class P256PublicKey: Sendable {
    nonisolated(unsafe) let pkey: OpaquePointer
    /// The 65-byte uncompressed point it was made from.
    let bytes: [UInt8]

    /// - Throws: `.invalidPublicKey` unless `uncompressed` is 65 bytes starting with 0x04 and on the curve.
    init(uncompressed: [UInt8]) throws(WebPushCryptoError) {
        guard uncompressed.count == 65, uncompressed[0] == 0x04 else { throw .invalidPublicKey }
        let der = spkiPrefix + uncompressed
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let parsed else {
            ERR_clear_error()
            throw .invalidPublicKey
        }
        pkey = parsed
        bytes = uncompressed
    }

    deinit { EVP_PKEY_free(pkey) }
}

/// An owned P-256 key pair (`EVP_PKEY*`): the VAPID application server key, or the ephemeral key
/// of one Web Push message (RFC 8291 §3.1).
///
/// Immutable after `init` and safe to share: every operation makes its own OpenSSL context.
final class P256KeyPair: Sendable {
    nonisolated(unsafe) let pkey: OpaquePointer
    /// The public half, 65 bytes uncompressed.
    let publicKey: [UInt8]

    private init(owning pkey: OpaquePointer) throws(WebPushCryptoError) {
        self.pkey = pkey
        var out: UnsafeMutablePointer<UInt8>?
        let length = i2d_PUBKEY(pkey, &out)
        defer { if let out { CRYPTO_free(out, #fileID, #line) } }
        guard length == 91, let out else {
            EVP_PKEY_free(pkey)
            throw .openSSL(Self.drain("i2d_PUBKEY failed"))
        }
        let spki = Array(UnsafeBufferPointer(start: out, count: Int(length)))
        guard Array(spki.prefix(26)) == spkiPrefix else {
            EVP_PKEY_free(pkey)
            throw .invalidPrivateKey("not on P-256")
        }
        publicKey = Array(spki.suffix(65))
    }

    deinit { EVP_PKEY_free(pkey) }

    /// A fresh random key pair.
    static func generate() throws(WebPushCryptoError) -> P256KeyPair {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw .openSSL(drain("EVP_PKEY_CTX_new_id failed")) }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1,
              EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw .openSSL(drain("EC key generation failed"))
        }
        return try P256KeyPair(owning: key)
    }

    /// The key whose private scalar is `scalar` (32 bytes, big-endian), as web-push libraries and
    /// `herald vapid generate` print it; the public half is computed.
    ///
    /// - Throws: `.invalidPrivateKey` for a wrong length, zero, or a value not below the group order.
    convenience init(privateScalar scalar: [UInt8]) throws(WebPushCryptoError) {
        guard scalar.count == 32 else { throw .invalidPrivateKey("the scalar must be 32 bytes, found \(scalar.count)") }
        // RFC 5915 ECPrivateKey { version 1, privateKey OCTET STRING, [0] prime256v1 }.
        let der: [UInt8] = [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20] + scalar
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PrivateKey(EVP_PKEY_EC, nil, &cursor, buffer.count)
        }
        guard let parsed else { throw .invalidPrivateKey(Self.drain("out of range")) }
        try self.init(owning: parsed)
        guard Self.isValidPrivateKey(self) else { throw .invalidPrivateKey("out of range") }
    }

    /// The key of a PEM block (`PRIVATE KEY` PKCS#8 or `EC PRIVATE KEY`), which must be EC P-256.
    convenience init(pem: String) throws(WebPushCryptoError) {
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, { _, _, _, _ in 0 }, nil)
        }
        guard let loaded else { throw .invalidPrivateKey(Self.drain("no readable PEM private key")) }
        guard EVP_PKEY_get_base_id(loaded) == EVP_PKEY_EC else {
            EVP_PKEY_free(loaded)
            throw .invalidPrivateKey("not an EC key")
        }
        try self.init(owning: loaded)
    }

    /// The 32-byte big-endian private scalar (secret: never log it).
    func privateScalar() throws(WebPushCryptoError) -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pkey, "priv", &number) == 1, let number else { throw .openSSL(Self.drain("no private scalar")) }
        defer { BN_clear_free(number) }
        var out = [UInt8](repeating: 0, count: 32)
        guard BN_bn2binpad(number, &out, 32) == 32 else { throw .openSSL("scalar over 32 bytes") }
        return out
    }

    /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`; secret).
    func pem() throws(WebPushCryptoError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw .openSSL("BIO_new failed") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, pkey, nil, nil, 0, nil, nil) == 1 else { throw .openSSL(Self.drain("PEM_write_bio_PrivateKey failed")) }
        let pending = Int(BIO_ctrl_pending(bio))
        var buffer = [UInt8](repeating: 0, count: pending)
        let read = BIO_read(bio, &buffer, Int32(pending))
        return String(decoding: buffer.prefix(max(0, Int(read))), as: UTF8.self)
    }

    /// ECDH: the 32-byte x coordinate of `self.private × peer` (RFC 8291 §3.1 `ecdh_secret`).
    func sharedSecret(with peer: P256PublicKey) throws(WebPushCryptoError) -> [UInt8] {
        guard let context = EVP_PKEY_CTX_new(pkey, nil) else { throw .openSSL(Self.drain("EVP_PKEY_CTX_new failed")) }
        defer { EVP_PKEY_CTX_free(context) }
        var length = 0
        guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_derive_set_peer(context, peer.pkey) == 1,
              EVP_PKEY_derive(context, nil, &length) == 1 else {
            throw .openSSL(Self.drain("ECDH setup failed"))
        }
        var secret = [UInt8](repeating: 0, count: length)
        guard EVP_PKEY_derive(context, &secret, &length) == 1, length == 32 else { throw .openSSL(Self.drain("ECDH failed")) }
        return Array(secret.prefix(length))
    }

    private static func isValidPrivateKey(_ key: P256KeyPair) -> Bool {
        guard let context = EVP_PKEY_CTX_new(key.pkey, nil) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        let ok = EVP_PKEY_private_check(context) == 1
        if !ok { ERR_clear_error() }
        return ok
    }

    /// OpenSSL's queued reasons in one line (the queue is emptied: a leftover entry would be
    /// blamed on the next, unrelated OpenSSL call on this thread).
    static func drain(_ fallback: String) -> String {
        var reasons: [String] = []
        while case let code = ERR_get_error(), code != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? fallback : reasons.joined(separator: "; ")
    }
}

/// HMAC-SHA-256, SHA-256, AES-128-GCM and random bytes, the primitives of RFC 8291.
enum WebPushPrimitives {
    static func hmacSHA256(key: [UInt8], _ data: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard HMAC(EVP_sha256(), key, Int32(key.count), data, data.count, &out, &length) != nil, length == 32 else {
            throw .openSSL(P256KeyPair.drain("HMAC failed"))
        }
        return out
    }

    static func sha256(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        // SHA-256 of a buffer cannot fail short of memory corruption.
        _ = EVP_Digest(data, data.count, &out, &length, EVP_sha256(), nil)
        return out
    }

    static func randomBytes(_ count: Int) throws(WebPushCryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&out, Int32(count)) == 1 else { throw .openSSL(P256KeyPair.drain("RAND_bytes failed")) }
        return out
    }

    /// AES-128-GCM with a 12-byte nonce: the ciphertext followed by the 16-byte tag.
    static func aes128GCMSeal(key: [UInt8], nonce: [UInt8], _ plaintext: [UInt8]) throws(WebPushCryptoError) -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { throw .openSSL("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        guard key.count == 16, nonce.count == 12, EVP_EncryptInit_ex(context, EVP_aes_128_gcm(), nil, key, nonce) == 1 else {
            throw .openSSL(P256KeyPair.drain("EVP_EncryptInit_ex failed"))
        }
        var out = [UInt8](repeating: 0, count: plaintext.count + 16)
        var written: Int32 = 0
        guard EVP_EncryptUpdate(context, &out, &written, plaintext, Int32(plaintext.count)) == 1 else {
            throw .openSSL(P256KeyPair.drain("EVP_EncryptUpdate failed"))
        }
        var total = Int(written)
        let finished = out.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress! + total, &written)
        }
        guard finished == 1 else { throw .openSSL(P256KeyPair.drain("EVP_EncryptFinal_ex failed")) }
        total += Int(written)
        var tag = [UInt8](repeating: 0, count: 16)
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1 else { throw .openSSL(P256KeyPair.drain("GCM tag failed")) }
        return Array(out.prefix(total)) + tag
    }

    /// Opens what `aes128GCMSeal` made; nil when the tag does not verify.
    static func aes128GCMOpen(key: [UInt8], nonce: [UInt8], _ sealed: [UInt8]) -> [UInt8]? {
        guard sealed.count >= 16, key.count == 16, nonce.count == 12, let context = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(context) }
        let ciphertext = Array(sealed.dropLast(16))
        var tag = Array(sealed.suffix(16))
        guard EVP_DecryptInit_ex(context, EVP_aes_128_gcm(), nil, key, nonce) == 1 else { return nil }
        var out = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var written: Int32 = 0
        guard EVP_DecryptUpdate(context, &out, &written, ciphertext, Int32(ciphertext.count)) == 1,
              EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1 else { return nil }
        let total = Int(written)
        let finished = out.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + total, &written)
        }
        guard finished == 1 else {
            ERR_clear_error()
            return nil
        }
        return Array(out.prefix(total + Int(written)))
    }
}
