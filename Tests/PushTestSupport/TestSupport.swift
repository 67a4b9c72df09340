import COpenSSL
import Foundation
import Synchronization

import PushHTTP

/// A clock the test moves by hand.
package final class FakeClock: Sendable {
    private let seconds: Mutex<Int>
    package init(_ start: Int) { seconds = Mutex(start) }
    package var now: Int { seconds.withLock { $0 } }
    package func advance(_ delta: Int) { seconds.withLock { $0 += delta } }
    package var closure: UnixClock { { [self] in now } }
}

package enum TestBase64URL {
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64).map { Array($0) }
    }
}

/// A decoded compact JWS: header and claims as Foundation objects, raw signature.
package struct DecodedJWT {
    package let signingInput: [UInt8]
    package let headerText: String
    package let claimsText: String
    package let header: [String: Any]
    package let claims: [String: Any]
    package let signature: [UInt8]

    package init?(_ token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, !token.contains("="),
              let header = TestBase64URL.decode(parts[0]), let claims = TestBase64URL.decode(parts[1]),
              let signature = TestBase64URL.decode(parts[2]),
              let headerObject = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any],
              let claimsObject = try? JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any] else { return nil }
        signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        headerText = String(decoding: header, as: UTF8.self)
        claimsText = String(decoding: claims, as: UTF8.self)
        self.header = headerObject
        self.claims = claimsObject
        self.signature = signature
    }
}

/// Independent verification with OpenSSL's EVP_DigestVerify against a public-key PEM.
package enum OpenSSLVerify {
    package static func publicKey(_ pem: String) -> OpaquePointer? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
    }

    /// Raw 64-byte r||s → DER ECDSA-Sig-Value, the form EVP_DigestVerify wants for EC keys.
    package static func derFromRaw(_ raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else { return nil }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        der.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_ECDSA_SIG(signature, &cursor)
        }
        return der
    }

    package static func verify(publicKeyPEM: String, message: [UInt8], signature: [UInt8]) -> Bool {
        guard let key = publicKey(publicKeyPEM), let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_PKEY_free(key); EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        let ok = EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
        ERR_clear_error()
        return ok
    }

    /// Verifies a compact ES256 JWS (raw r||s converted to DER first).
    package static func verifyES256(token: String, publicKeyPEM: String) -> Bool {
        guard let jwt = DecodedJWT(token), jwt.signature.count == 64, let der = derFromRaw(jwt.signature) else { return false }
        return verify(publicKeyPEM: publicKeyPEM, message: jwt.signingInput, signature: der)
    }

    package static func verifyRS256(token: String, publicKeyPEM: String) -> Bool {
        guard let jwt = DecodedJWT(token) else { return false }
        return verify(publicKeyPEM: publicKeyPEM, message: jwt.signingInput, signature: jwt.signature)
    }
}

extension PushHTTPRequest {
    package var bodyText: String { String(decoding: body, as: UTF8.self) }
    /// Header pairs as "name: value" lines, for exact comparisons.
    package var headerLines: [String] { headers.map { "\($0.0): \($0.1)" } }
}

package func response(_ status: Int, _ body: String = "", headers: [(String, String)] = []) -> PushHTTPResponse {
    PushHTTPResponse(status: status, headers: headers, body: Array(body.utf8))
}

/// Minimal service-account JSON around `TestKeys.rsa2048` (JSON-escaped newlines, as Google writes it).
package func serviceAccountJSON(projectID: String? = "herald-test", tokenURI: String? = "https://oauth2.googleapis.com/token",
                        privateKey: String = TestKeys.rsa2048, keyID: String? = "test-key-1",
                        clientEmail: String? = "pushbridge-test@herald-test.iam.gserviceaccount.com") -> String {
    var object: [String: String] = ["type": "service_account", "private_key": privateKey]
    if let projectID { object["project_id"] = projectID }
    if let tokenURI { object["token_uri"] = tokenURI }
    if let keyID { object["private_key_id"] = keyID }
    if let clientEmail { object["client_email"] = clientEmail }
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    return String(decoding: data, as: UTF8.self)
}
