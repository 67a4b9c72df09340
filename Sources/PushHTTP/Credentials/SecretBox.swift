import COpenSSL
import Digests
import Foundation
import HeraldCore

/// Why a secret could not be sealed or opened.
public enum SecretBoxError: Error, Equatable, Sendable {
    /// The key is not 32 bytes (base64 of 32 bytes in `HERALD_SECRET_KEY`).
    case badKey(String)
    /// The sealed text is not a `v1` envelope.
    case malformed
    /// No key this process has made the envelope (its key id is named).
    case unknownKey(String)
    /// The tag did not verify: wrong key, another app's or field's value, or tampering.
    case authenticationFailed
    /// OpenSSL failed internally.
    case crypto(String)

    /// For logs and startup errors; never contains key or plaintext bytes.
    public var message: String {
        switch self {
        case .badKey(let why): "secret key unusable: \(why)"
        case .malformed: "sealed secret is not a v1 envelope"
        case .unknownKey(let id): "sealed secret was made with key \(id), which is neither HERALD_SECRET_KEY nor HERALD_SECRET_KEY_PREVIOUS"
        case .authenticationFailed: "sealed secret does not open: wrong key, or moved from another app or field"
        case .crypto(let what): "OpenSSL failed: \(what)"
        }
    }
}

/// Seals secrets at rest with AES-256-GCM (NIST SP 800-38D; SPEC AP-2, ADR 0006).
///
/// An envelope is `v1.<key id>.<nonce>.<ciphertext‖tag>`, base64url parts: the key id (the first 8
/// hex digits of SHA-256 of the key) says which key sealed it, so a rotated-out key
/// (`HERALD_SECRET_KEY_PREVIOUS`) still opens old values; the nonce is 12 random bytes per seal;
/// `context` (app id and field) is the additional authenticated data, so a value copied to another
/// app or field does not open. Immutable; safe from any thread.
public struct SecretBox: Sendable {
    private struct Key: Sendable {
        let id: String
        let bytes: [UInt8]
    }

    private let current: Key
    private let previous: [Key]

    /// - Parameters:
    ///   - key: 32 bytes that seal and open.
    ///   - previous: older keys that only open (rotation).
    /// - Throws: `SecretBoxError.badKey` when a key is not 32 bytes.
    public init(key: [UInt8], previous: [[UInt8]] = []) throws(SecretBoxError) {
        guard key.count == 32 else { throw .badKey("\(key.count) bytes; AES-256 needs 32") }
        for old in previous where old.count != 32 { throw .badKey("a previous key has \(old.count) bytes; AES-256 needs 32") }
        current = Key(id: Self.keyID(key), bytes: key)
        self.previous = previous.map { Key(id: Self.keyID($0), bytes: $0) }
    }

    /// A key from its text form: standard base64 or base64url of 32 bytes, surrounding white space
    /// ignored (a key file may end with a newline).
    /// - Throws: `SecretBoxError.badKey`.
    public static func key(fromText text: String) throws(SecretBoxError) -> [UInt8] {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let standard = trimmed.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let padded = standard + String(repeating: "=", count: (4 - standard.count % 4) % 4)
        guard let data = Data(base64Encoded: padded) else {
            throw .badKey("it is not base64 (a character outside A-Z a-z 0-9 + / - _ =, or misplaced padding); "
                + "expected base64 of 32 random bytes (make one: openssl rand -base64 32)")
        }
        guard data.count == 32 else {
            throw .badKey("it decodes to \(data.count) bytes; expected base64 of 32 random bytes, AES-256's key (make one: openssl rand -base64 32)")
        }
        return Array(data)
    }

    /// The id of the key that seals (for logs: which key is in use).
    public var keyID: String { current.id }

    /// Whether `sealed` was made with an older key and should be sealed again (rotation).
    public func needsReseal(_ sealed: String) -> Bool {
        sealed.split(separator: ".").dropFirst().first.map { String($0) != current.id } ?? false
    }

    /// Seals `plaintext` bound to `context`.
    /// - Throws: `SecretBoxError.crypto` when OpenSSL fails.
    public func seal(_ plaintext: [UInt8], context: String) throws(SecretBoxError) -> String {
        var nonce = [UInt8](repeating: 0, count: 12)
        guard RAND_bytes(&nonce, 12) == 1 else { throw .crypto("RAND_bytes") }
        let sealed = try Self.gcm(encrypt: true, key: current.bytes, nonce: nonce, aad: Array(context.utf8), input: plaintext)
        return ["v1", current.id, Base64URL.encode(nonce), Base64URL.encode(sealed)].joined(separator: ".")
    }

    /// Opens an envelope made by `seal` with the same `context`.
    /// - Throws: `SecretBoxError` `.malformed`, `.unknownKey`, `.authenticationFailed`.
    public func open(_ sealed: String, context: String) throws(SecretBoxError) -> [UInt8] {
        let parts = sealed.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "v1", let nonce = Base64URL.decode(parts[2]), nonce.count == 12,
              let body = Base64URL.decode(parts[3]), body.count >= 16 else { throw .malformed }
        guard let key = ([current] + previous).first(where: { $0.id == parts[1] }) else { throw .unknownKey(String(parts[1])) }
        return try Self.gcm(encrypt: false, key: key.bytes, nonce: nonce, aad: Array(context.utf8), input: body)
    }

    /// The first 16 hex digits of SHA-256 of `bytes`: what answers show instead of a secret.
    public static func fingerprint(_ bytes: [UInt8]) -> String { String(sha256Hex(bytes).prefix(16)) }

    /// Lower-case hex SHA-256 (64 characters), with OpenSSL's low-level digest (`Digests.SHA256`,
    /// no provider initialisation): the server key is hashed on every server API call
    /// (`Authenticator.server`).
    public static func sha256Hex(_ bytes: [UInt8]) -> String { Digests.SHA256.hexDigest(bytes) }

    private static func keyID(_ key: [UInt8]) -> String { String(sha256Hex(key).prefix(8)) }

    /// AES-256-GCM one-shot; `input` is plaintext (encrypt) or ciphertext‖16-byte tag (decrypt).
    private static func gcm(encrypt: Bool, key: [UInt8], nonce: [UInt8], aad: [UInt8], input: [UInt8]) throws(SecretBoxError) -> [UInt8] {
        defer { ERR_clear_error() }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw .crypto("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        let dataCount = encrypt ? input.count : input.count - 16
        var out = [UInt8](repeating: 0, count: dataCount + 16)
        var length: Int32 = 0
        let initialized = encrypt
            ? EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce)
            : EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce)
        guard initialized == 1 else { throw .crypto("cipher init") }
        if !aad.isEmpty {
            let ok = encrypt ? EVP_EncryptUpdate(ctx, nil, &length, aad, Int32(aad.count))
                             : EVP_DecryptUpdate(ctx, nil, &length, aad, Int32(aad.count))
            guard ok == 1 else { throw .crypto("aad") }
        }
        var written: Int32 = 0
        if dataCount > 0 {
            let ok = out.withUnsafeMutableBufferPointer { o in
                encrypt ? EVP_EncryptUpdate(ctx, o.baseAddress, &length, input, Int32(dataCount))
                        : EVP_DecryptUpdate(ctx, o.baseAddress, &length, input, Int32(dataCount))
            }
            guard ok == 1 else { throw .crypto("update") }
            written = length
        }
        if encrypt {
            let ok = out.withUnsafeMutableBufferPointer { o in EVP_EncryptFinal_ex(ctx, o.baseAddress! + Int(written), &length) }
            guard ok == 1 else { throw .crypto("final") }
            var tag = [UInt8](repeating: 0, count: 16)
            guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1 else { throw .crypto("tag") }
            return Array(out.prefix(dataCount)) + tag
        }
        var tag = Array(input.suffix(16))
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1 else { throw .crypto("tag") }
        let ok = out.withUnsafeMutableBufferPointer { o in EVP_DecryptFinal_ex(ctx, o.baseAddress! + Int(written), &length) }
        guard ok == 1 else { throw .authenticationFailed }
        return Array(out.prefix(dataCount))
    }
}
