import Foundation
import HeraldCore
import PushHTTP

/// The ES256 key pair dev mode signs a stored demo app's tokens with (issue 14: the demo switches
/// between `default` and a second app). The app's `tokens.public_keys` holds the public half, so
/// it needs no sealed secret (no `HERALD_SECRET_KEY`); `POST /v1/dev/token` holds the private half.
///
/// The private key is derived from the dev issuer's HS256 secret and the app id rather than
/// generated: with the same `HERALD_JWT_SECRET`, a restart and every node of a dev cluster get the
/// same key, so a token minted before a restart or by another node still verifies, and nodes do not
/// overwrite each other's key in the shared apps table. Whoever holds the secret can mint the
/// default app's tokens already; the derived key gives them nothing more.
public enum DevAppKey {
    /// The P-256 group order n (SEC 2 §2.4.2), big-endian: a private scalar must be in [1, n-1].
    static let groupOrder: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// The signer of `app`'s dev tokens.
    ///
    /// - Parameters:
    ///   - secret: the dev issuer's HS256 secret (`HERALD_JWT_SECRET`), non-empty.
    ///   - app: the demo app; another app gets an unrelated key.
    /// - Returns: an ES256 signer; `publicKeyPEM()` is what the app's `tokens.public_keys` lists.
    /// - Throws: `PushCredentialError` if OpenSSL refuses the key it is given (it should not: the
    ///   scalar is checked to be in range).
    public static func signer(secret: [UInt8], app: AppID) throws(PushCredentialError) -> ES256Signer {
        try ES256Signer(pem: pem(scalar: scalar(secret: secret, app: app)), source: "dev key of app \(app.rawValue)")
    }

    /// HMAC-SHA256(secret, "herald dev app key v1/<app>/<counter>") for counter 0, 1, … until the
    /// digest is a valid scalar (a digest ≥ n or zero happens about once in 2^32).
    static func scalar(secret: [UInt8], app: AppID) -> [UInt8] {
        var counter = 0
        while true {
            let label = Array("herald dev app key v1/\(app.rawValue)/\(counter)".utf8)
            let digest = label.withUnsafeBytes { VerificationKey.hmacSHA256(key: secret, data: $0) }
            if isValidScalar(digest) { return digest }
            counter += 1
        }
    }

    /// Whether 32 big-endian bytes are in [1, n-1].
    static func isValidScalar(_ bytes: [UInt8]) -> Bool {
        bytes.count == 32 && bytes.contains { $0 != 0 } && bytes.lexicographicallyPrecedes(groupOrder)
    }

    /// The scalar as a SEC 1 `EC PRIVATE KEY` PEM (RFC 5915: version 1, the key, the curve
    /// prime256v1; no public key, which OpenSSL computes when it reads the key).
    static func pem(scalar: [UInt8]) -> String {
        precondition(scalar.count == 32, "a P-256 scalar is 32 bytes")
        // SEQUENCE(49) { INTEGER 1, OCTET STRING(32) scalar, [0] { OID 1.2.840.10045.3.1.7 } }
        let der: [UInt8] = [0x30, 0x31, 0x02, 0x01, 0x01, 0x04, 0x20] + scalar
            + [0xA0, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
        let body = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN EC PRIVATE KEY-----\n\(body)\n-----END EC PRIVATE KEY-----\n"
    }
}
