import COpenSSL
import Foundation
import PushTestSupport
import Testing

@testable import PushHTTP

@Suite struct ES256SignerTests {
    let signer = try! ES256Signer(pem: TestKeys.ecP256PKCS8)

    @Test func signatureIsRaw64BytesAndVerifiesWithOpenSSL() throws {
        let input = Array("header.payload".utf8)
        let signature = try signer.sign(input)
        #expect(signature.count == 64)
        let der = try #require(OpenSSLVerify.derFromRaw(signature))
        #expect(OpenSSLVerify.verify(publicKeyPEM: signer.publicKeyPEM(), message: input, signature: der))
        #expect(!OpenSSLVerify.verify(publicKeyPEM: signer.publicKeyPEM(), message: Array("header.payloaD".utf8), signature: der))
    }

    /// About 1 signature in 128 has an r or s below 2^248; BN_bn2bin would make it 63 bytes.
    @Test func shortRAndSStayPaddedAndValid() throws {
        let publicKey = signer.publicKeyPEM()
        var seenShort = 0
        for i in 0..<5000 where seenShort < 3 {
            let input = Array("input-\(i)".utf8)
            let signature = try signer.sign(input)
            #expect(signature.count == 64)
            if signature[0] == 0 || signature[32] == 0 {
                seenShort += 1
                let der = try #require(OpenSSLVerify.derFromRaw(signature))
                #expect(OpenSSLVerify.verify(publicKeyPEM: publicKey, message: input, signature: der))
            }
        }
        #expect(seenShort > 0, "5000 signatures without a leading zero byte: chance ~1e-17")
    }

    @Test func derToRawPadsShortIntegers() throws {
        // SEQUENCE { INTEGER (31 bytes, r = 0x01…), INTEGER (33 bytes: 0x00 sign byte + 0x80…) }
        let r = [UInt8](repeating: 0x01, count: 31)
        let s = [UInt8(0x80)] + [UInt8](repeating: 0x02, count: 31)
        let der: [UInt8] = [0x30, UInt8(2 + 31 + 2 + 33), 0x02, 31] + r + [0x02, 33, 0x00] + s
        let raw = try ES256Signer.rawSignature(fromDER: der)
        #expect(raw == [0] + r + s)
        #expect(throws: JWTSigningError.malformedECDSASignature) { try ES256Signer.rawSignature(fromDER: [0x30, 0x00, 0x01]) }
    }

    @Test func pythonSignedVectorVerifiesWithOurPublicKey() {
        #expect(OpenSSLVerify.verifyES256(token: JOSEVectors.es256AppleExample, publicKeyPEM: signer.publicKeyPEM()))
    }

    @Test func acceptsTheFormsOperatorsUse() throws {
        let oneLine = TestKeys.ecP256PKCS8.replacingOccurrences(of: "\n", with: "\\n")
        #expect(!oneLine.contains("\n"))
        let forms = [
            oneLine,                                                              // APNS_KEY_P8 with \n escapes
            "\"\(oneLine)\"",                                                     // env-file quotes kept
            TestKeys.ecP256PKCS8.replacingOccurrences(of: "\n", with: " "),       // line breaks lost
            "  \n" + TestKeys.ecP256PKCS8 + "\n\n",
            TestKeys.ecP256PKCS8.replacingOccurrences(of: "\n", with: "\r\n"),
            TestKeys.ecP256Traditional,                                           // SEC1 "EC PRIVATE KEY"
        ]
        let expected = signer.publicKeyPEM()
        for form in forms {
            let loaded = try ES256Signer(pem: form)
            #expect(loaded.publicKeyPEM() == expected)
        }
    }

    @Test func refusesWhatIsNotAP256PrivateKey() {
        func failure(_ pem: String) -> PushCredentialError? {
            do { _ = try ES256Signer(pem: pem, source: "APNS_KEY_P8"); return nil } catch { return error }
        }
        #expect(failure("hello") == .unreadableKey(variable: "APNS_KEY_P8", reason: "no -----BEGIN PRIVATE KEY----- block"))
        #expect(failure(TestKeys.ecP256Encrypted) == .unreadableKey(variable: "APNS_KEY_P8", reason: "the key is passphrase-protected"))
        #expect(failure(TestKeys.rsa2048) == .wrongKeyType(variable: "APNS_KEY_P8", expected: "an EC P-256 private key (PKCS#8 .p8)", found: "RSA 2048 bits"))
        #expect(failure(TestKeys.ecP384) == .wrongKeyType(variable: "APNS_KEY_P8", expected: "an EC P-256 private key (PKCS#8 .p8)", found: "EC secp384r1"))
        #expect(failure(TestKeys.ed25519) == .wrongKeyType(variable: "APNS_KEY_P8", expected: "an EC P-256 private key (PKCS#8 .p8)", found: "ED25519"))
        // A damaged body: OpenSSL's reason, never the key text.
        var lines = TestKeys.ecP256PKCS8.split(separator: "\n")
        lines.remove(at: 2)  // a body line lost: the DER is truncated
        let damaged = lines.joined(separator: "\n")
        guard case .unreadableKey(let variable, let reason)? = failure(damaged) else {
            Issue.record("damaged key accepted")
            return
        }
        #expect(variable == "APNS_KEY_P8")
        #expect(!reason.contains("MIG"))
        #expect(ERR_peek_error() == 0, "the OpenSSL error queue is drained")
    }

    @Test func descriptionHidesTheKey() {
        #expect(signer.description == "ES256Signer(EC P-256)")
        #expect(String(reflecting: signer) == "ES256Signer(EC P-256)")
    }
}

@Suite struct RS256SignerTests {
    @Test func refusesWeakOrWrongKeys() {
        func failure(_ pem: String) -> PushCredentialError? {
            do { _ = try RS256Signer(pem: pem, source: "FCM_SERVICE_ACCOUNT_JSON"); return nil } catch { return error }
        }
        #expect(failure(TestKeys.rsa1024) == .wrongKeyType(variable: "FCM_SERVICE_ACCOUNT_JSON", expected: "an RSA private key of at least 2048 bits", found: "RSA 1024 bits"))
        #expect(failure(TestKeys.ecP256PKCS8) == .wrongKeyType(variable: "FCM_SERVICE_ACCOUNT_JSON", expected: "an RSA private key of at least 2048 bits", found: "EC P-256"))
    }
}

@Suite struct JWTEncoderTests {
    @Test func structureIsHeaderPayloadSignatureWithoutPadding() throws {
        let signer = try ES256Signer(pem: TestKeys.ecP256PKCS8)
        let token = try JWTEncoder.encode(header: ["kid": .string("ABC123DEFG"), "alg": .string("none")],
                                          claims: ["iss": .string("DEF123GHIJ"), "iat": .int(1_437_179_036)], signer: signer)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(!token.contains("=") && !token.contains("+") && !token.contains("/"))
        // Fixed vector for the first two segments: Apple's example header and claims, sorted keys.
        #expect(parts[0] == "eyJhbGciOiJFUzI1NiIsImtpZCI6IkFCQzEyM0RFRkcifQ")
        #expect(parts[1] == "eyJpYXQiOjE0MzcxNzkwMzYsImlzcyI6IkRFRjEyM0dISUoifQ")
        let jwt = try #require(DecodedJWT(token))
        #expect(jwt.headerText == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)  // alg comes from the signer
        #expect(jwt.claimsText == #"{"iat":1437179036,"iss":"DEF123GHIJ"}"#)
        #expect(jwt.signature.count == 64)
        #expect(OpenSSLVerify.verifyES256(token: token, publicKeyPEM: signer.publicKeyPEM()))
        // The same first two segments as the Python-signed vector.
        let prefix = "\(parts[0]).\(parts[1])."
        #expect(JOSEVectors.es256AppleExample.hasPrefix(prefix))
    }

    @Test func base64URLHasNoPadding() {
        #expect(Base64URL.encode([]) == "")
        #expect(Base64URL.encode([0xFB]) == "-w")
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
    }
}
