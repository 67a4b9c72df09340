import HeraldCore

/// Message encryption for Web Push: the `aes128gcm` content coding (RFC 8188 §2) with the key
/// derivation of RFC 8291 §3, in one record.
///
/// ```
/// ecdh_secret = ECDH(as_private, ua_public)
/// PRK_key     = HMAC-SHA-256(auth_secret, ecdh_secret)
/// IKM         = HMAC-SHA-256(PRK_key, "WebPush: info" 0x00 ua_public as_public 0x01)
/// PRK         = HMAC-SHA-256(salt, IKM)
/// CEK         = HMAC-SHA-256(PRK, "Content-Encoding: aes128gcm" 0x00 0x01)[0..<16]
/// NONCE       = HMAC-SHA-256(PRK, "Content-Encoding: nonce" 0x00 0x01)[0..<12]
/// body        = salt(16) rs(4, big-endian) idlen(1) = 65 as_public(65) AES-128-GCM(CEK, NONCE, plaintext 0x02)
/// ```
public enum WebPushEncryption {
    /// The record size written in the header (RFC 8188 §2.1); one record holds the whole message.
    public static let recordSize: UInt32 = 4096
    /// Bytes before the ciphertext: salt, rs, idlen, the 65-byte key id (RFC 8291 §4).
    public static let headerBytes = 86
    /// Largest body sent: push services must accept 4096 bytes (RFC 8030 §7.2, RFC 8291 §4).
    public static let maxBodyBytes = 4096
    /// Largest plaintext that fits `maxBodyBytes`: 4096 − 86 header − 1 delimiter − 16 tag.
    public static let maxPlaintextBytes = maxBodyBytes - headerBytes - 1 - 16

    /// Encrypts `plaintext` to `subscription`.
    ///
    /// - Parameters:
    ///   - plaintext: at most `maxPlaintextBytes` (the caller checks, to dead-letter with a reason).
    ///   - subscription: the user agent's public key and auth secret.
    ///   - ephemeral: the message's key pair; fresh when nil (tests pass RFC 8291 Appendix A's).
    ///   - salt: 16 bytes; random when nil.
    /// - Returns: the request body.
    /// - Throws: `.invalidPublicKey` when `p256dh` is not on the curve; `.openSSL` when OpenSSL fails.
    static func encrypt(_ plaintext: [UInt8], to subscription: WebPushSubscription,
                        ephemeral: P256KeyPair? = nil, salt givenSalt: [UInt8]? = nil) throws(WebPushCryptoError) -> [UInt8] {
        let userAgent = try P256PublicKey(uncompressed: subscription.p256dh)
        let server: P256KeyPair
        if let ephemeral { server = ephemeral } else { server = try P256KeyPair.generate() }
        let salt: [UInt8]
        if let givenSalt { salt = givenSalt } else { salt = try WebPushPrimitives.randomBytes(16) }
        precondition(salt.count == 16, "RFC 8188: the salt is 16 bytes")
        let ecdhSecret = try server.sharedSecret(with: userAgent)
        let prkKey = try WebPushPrimitives.hmacSHA256(key: subscription.auth, ecdhSecret)
        let keyInfo = Array("WebPush: info".utf8) + [0x00] + subscription.p256dh + server.publicKey
        let ikm = try WebPushPrimitives.hmacSHA256(key: prkKey, keyInfo + [0x01])
        let prk = try WebPushPrimitives.hmacSHA256(key: salt, ikm)
        let cek = try Array(WebPushPrimitives.hmacSHA256(key: prk, Array("Content-Encoding: aes128gcm".utf8) + [0x00, 0x01]).prefix(16))
        let nonce = try Array(WebPushPrimitives.hmacSHA256(key: prk, Array("Content-Encoding: nonce".utf8) + [0x00, 0x01]).prefix(12))
        // 0x02 marks the last (here the only) record; no further padding (RFC 8188 §2).
        let sealed = try WebPushPrimitives.aes128GCMSeal(key: cek, nonce: nonce, plaintext + [0x02])
        let rs = recordSize
        let header = salt + [UInt8(rs >> 24 & 0xFF), UInt8(rs >> 16 & 0xFF), UInt8(rs >> 8 & 0xFF), UInt8(rs & 0xFF)]
            + [UInt8(server.publicKey.count)] + server.publicKey
        return header + sealed
    }

    /// Decrypts a one-record `aes128gcm` body with the user agent's private key: what a browser
    /// does. Only tests use it (round trips; the provider double does the same in Python).
    ///
    /// - Returns: the plaintext, or nil when the body is malformed or does not decrypt.
    static func decrypt(_ body: [UInt8], userAgent: P256KeyPair, auth: [UInt8]) -> [UInt8]? {
        guard body.count > headerBytes + 16, body[20] == 65 else { return nil }
        let salt = Array(body[0..<16])
        guard let server = try? P256PublicKey(uncompressed: Array(body[21..<86])),
              let ecdhSecret = try? userAgent.sharedSecret(with: server),
              let prkKey = try? WebPushPrimitives.hmacSHA256(key: auth, ecdhSecret),
              let ikm = try? WebPushPrimitives.hmacSHA256(key: prkKey, Array("WebPush: info".utf8) + [0x00] + userAgent.publicKey + server.bytes + [0x01]),
              let prk = try? WebPushPrimitives.hmacSHA256(key: salt, ikm),
              let cek = try? WebPushPrimitives.hmacSHA256(key: prk, Array("Content-Encoding: aes128gcm".utf8) + [0x00, 0x01]),
              let nonce = try? WebPushPrimitives.hmacSHA256(key: prk, Array("Content-Encoding: nonce".utf8) + [0x00, 0x01]),
              var padded = WebPushPrimitives.aes128GCMOpen(key: Array(cek.prefix(16)), nonce: Array(nonce.prefix(12)), Array(body[86...])) else {
            return nil
        }
        while padded.last == 0x00 { padded.removeLast() }
        guard padded.last == 0x02 else { return nil }
        padded.removeLast()
        return padded
    }
}
