import Foundation
import PushHTTP

/// Why a JWKS document was refused (AP-1). `message` names the key by index or `kid`.
public struct JWKSError: Error, Equatable, Sendable {
    /// Which key is unusable and why (`key "k1": EC keys need 32-byte base64url x and y`).
    public var message: String
}

/// A JWKS document's verification keys by `kid` (RFC 7517 §5): RSA (`kty` RSA, `n`, `e`; RS256)
/// and EC P-256 (`kty` EC, `crv` P-256, `x`, `y`; ES256). Keys marked `use` other than `sig`, or
/// `alg` outside RS256/ES256, are refused rather than skipped, so a document's mistake shows
/// when it is set, not on the first token. Replacing the document rotates keys: a `kid` it no
/// longer lists is refused.
public struct JWKS: Sendable {
    /// Keys by `kid`; a key without `kid` is listed under "" (a document may have one such key).
    public let keys: [String: VerificationKey]

    /// - Parameter json: the document's JSON text.
    /// - Throws: `JWKSError` naming the first unusable key.
    public init(json: String) throws(JWKSError) {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any],
              let list = object["keys"] as? [[String: Any]] else {
            throw JWKSError(message: "a JWKS document is an object with a \"keys\" array of objects")
        }
        guard !list.isEmpty else { throw JWKSError(message: "the JWKS document has no keys") }
        var keys: [String: VerificationKey] = [:]
        for (index, jwk) in list.enumerated() {
            let kid = jwk["kid"] as? String ?? ""
            let name = kid.isEmpty ? "keys[\(index)]" : "key \"\(kid)\""
            if let use = jwk["use"] as? String, use != "sig" { throw JWKSError(message: "\(name): use \"\(use)\" is not sig") }
            guard keys[kid] == nil else { throw JWKSError(message: "\(name): kid listed twice") }
            let der: [UInt8]
            switch jwk["kty"] as? String {
            case "RSA":
                guard let n = (jwk["n"] as? String).flatMap(Base64URL.decode), let e = (jwk["e"] as? String).flatMap(Base64URL.decode),
                      !n.isEmpty, !e.isEmpty else { throw JWKSError(message: "\(name): RSA keys need base64url n and e") }
                der = DER.rsaSubjectPublicKeyInfo(modulus: n, exponent: e)
            case "EC":
                guard jwk["crv"] as? String == "P-256" else { throw JWKSError(message: "\(name): only EC keys on P-256 (ES256)") }
                guard let x = (jwk["x"] as? String).flatMap(Base64URL.decode), let y = (jwk["y"] as? String).flatMap(Base64URL.decode),
                      x.count == 32, y.count == 32 else { throw JWKSError(message: "\(name): EC keys need 32-byte base64url x and y") }
                der = DER.p256SubjectPublicKeyInfo(x: x, y: y)
            case let other:
                throw JWKSError(message: "\(name): kty \(other ?? "missing") is not RSA or EC")
            }
            let pem = "-----BEGIN PUBLIC KEY-----\n" + Data(der).base64EncodedString(options: .lineLength64Characters)
                + "\n-----END PUBLIC KEY-----\n"
            let key: VerificationKey
            do {
                key = try VerificationKey.publicKey(pem: pem)
            } catch {
                throw JWKSError(message: "\(name): \(error.message)")
            }
            if let alg = jwk["alg"] as? String, alg != key.algorithm.rawValue {
                throw JWKSError(message: "\(name): alg \(alg) does not fit the key (\(key.algorithm.rawValue))")
            }
            keys[kid] = key
        }
        self.keys = keys
    }
}

/// The few DER shapes a JWK becomes (X.690), so that OpenSSL reads it as a PEM public key.
enum DER {
    static func rsaSubjectPublicKeyInfo(modulus: [UInt8], exponent: [UInt8]) -> [UInt8] {
        let rsaEncryption: [UInt8] = [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01, 0x05, 0x00]
        let publicKey = sequence(integer(modulus) + integer(exponent))
        return sequence(sequence(rsaEncryption) + bitString(publicKey))
    }

    static func p256SubjectPublicKeyInfo(x: [UInt8], y: [UInt8]) -> [UInt8] {
        // id-ecPublicKey, prime256v1 (RFC 5480 §2.1.1).
        let algorithm: [UInt8] = [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
                                  0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        return sequence(sequence(algorithm) + bitString([0x04] + x + y))
    }

    private static func integer(_ bytes: [UInt8]) -> [UInt8] {
        var value = Array(bytes.drop { $0 == 0 })
        if value.isEmpty { value = [0] }
        if value[0] & 0x80 != 0 { value.insert(0, at: 0) }  // stays positive
        return tlv(0x02, value)
    }

    private static func bitString(_ bytes: [UInt8]) -> [UInt8] { tlv(0x03, [0] + bytes) }
    private static func sequence(_ bytes: [UInt8]) -> [UInt8] { tlv(0x30, bytes) }

    private static func tlv(_ tag: UInt8, _ value: [UInt8]) -> [UInt8] {
        var length: [UInt8]
        if value.count < 0x80 {
            length = [UInt8(value.count)]
        } else {
            var count = value.count
            length = []
            while count > 0 {
                length.insert(UInt8(count & 0xFF), at: 0)
                count >>= 8
            }
            length.insert(0x80 | UInt8(length.count), at: 0)
        }
        return [tag] + length + value
    }
}
