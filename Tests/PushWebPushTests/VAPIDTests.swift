import Foundation
import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushWebPush

@Suite struct VAPIDTests {
    static let keys = try! GeneratedVAPIDKeys.generate()
    static let environment = ["HERALD_VAPID_PRIVATE_KEY": keys.privateKey, "HERALD_VAPID_SUBJECT": "mailto:ops@example.com"]

    @Test func offWhenNothingIsSet() throws {
        #expect(try VAPIDCredentials.load(environment: [:]) == nil)
        #expect(try VAPIDCredentials.load(environment: ["HERALD_VAPID_SUBJECT": " "]) == nil)
    }

    @Test func theScalarOrThePEMFileGiveTheSameKey() throws {
        let inline = try #require(try VAPIDCredentials.load(environment: Self.environment))
        #expect(inline.publicKeyBase64URL == Self.keys.publicKey)
        #expect(inline.subject == "mailto:ops@example.com")
        #expect(!inline.description.contains(Self.keys.privateKey))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("vapid-\(UUID().uuidString).pem").path
        try Self.keys.pem.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try #require(try VAPIDCredentials.load(environment: ["HERALD_VAPID_KEY_PATH": path, "HERALD_VAPID_SUBJECT": "https://example.com/contact",
                                                                        "HERALD_VAPID_PUBLIC_KEY": Self.keys.publicKey]))
        #expect(file.publicKey == inline.publicKey)
        #expect(file.keySource == "HERALD_VAPID_KEY_PATH=\(path)")
    }

    @Test func everyMistakeNamesItsVariable() {
        #expect(throws: PushCredentialError.missingVariables(["HERALD_VAPID_SUBJECT"])) {
            try VAPIDCredentials.load(environment: ["HERALD_VAPID_PRIVATE_KEY": Self.keys.privateKey])
        }
        #expect(throws: PushCredentialError.missingVariables(["HERALD_VAPID_PRIVATE_KEY (or HERALD_VAPID_KEY_PATH)"])) {
            try VAPIDCredentials.load(environment: ["HERALD_VAPID_SUBJECT": "mailto:a@b.c"])
        }
        #expect(throws: PushCredentialError.conflictingVariables("HERALD_VAPID_PRIVATE_KEY", "HERALD_VAPID_KEY_PATH")) {
            try VAPIDCredentials.load(environment: Self.environment.merging(["HERALD_VAPID_KEY_PATH": "/x.pem"]) { a, _ in a })
        }
        for subject in ["ops@example.com", "mailto:", "http://example.com", "https://"] {
            #expect(throws: PushCredentialError.invalidValue(variable: "HERALD_VAPID_SUBJECT", reason: "must be a mailto: address or an https: URL (RFC 8292 §2.1)")) {
                try VAPIDCredentials.load(environment: Self.environment.merging(["HERALD_VAPID_SUBJECT": subject]) { _, b in b })
            }
        }
        let other = try! GeneratedVAPIDKeys.generate()
        #expect(throws: PushCredentialError.invalidValue(variable: "HERALD_VAPID_PUBLIC_KEY",
                                                         reason: "does not match the private key (its public key is \(Self.keys.publicKey))")) {
            try VAPIDCredentials.load(environment: Self.environment.merging(["HERALD_VAPID_PUBLIC_KEY": other.publicKey]) { _, b in b })
        }
        for bad in ["not base64!", "AAAA"] {
            #expect {
                try VAPIDCredentials.load(environment: Self.environment.merging(["HERALD_VAPID_PRIVATE_KEY": bad]) { _, b in b })
            } throws: { error in
                guard case .unreadableKey(let variable, _) = error as? PushCredentialError else { return false }
                return variable == "HERALD_VAPID_PRIVATE_KEY"
            }
        }
        #expect(throws: PushCredentialError.unreadableFile(variable: "HERALD_VAPID_KEY_PATH", path: "/nonexistent/vapid.pem", reason: "No such file or directory")) {
            try VAPIDCredentials.load(environment: ["HERALD_VAPID_KEY_PATH": "/nonexistent/vapid.pem", "HERALD_VAPID_SUBJECT": "mailto:a@b.c"])
        }
    }

    @Test func oneSignedTokenPerOriginReusedUntilAnHourBeforeItExpires() throws {
        let credentials = try #require(try VAPIDCredentials.load(environment: Self.environment))
        let clock = FakeClock(1_754_563_200)
        let cache = VAPIDTokenCache(credentials: credentials, clock: clock.closure)
        let header = try cache.authorization(origin: "https://push.example.net")
        #expect(header.hasPrefix("vapid t="))
        #expect(header.hasSuffix(", k=\(Self.keys.publicKey)"))
        let token = try cache.token(origin: "https://push.example.net")
        #expect(header == "vapid t=\(token), k=\(Self.keys.publicKey)")
        let jwt = try #require(DecodedJWT(token))
        #expect(jwt.headerText == #"{"alg":"ES256","typ":"JWT"}"#)
        #expect(jwt.claimsText == #"{"aud":"https://push.example.net","exp":1754606400,"sub":"mailto:ops@example.com"}"#)
        #expect(OpenSSLVerify.verifyES256(token: token, publicKeyPEM: credentials.signer.publicKeyPEM()))
        // Another push service gets its own audience.
        #expect(try DecodedJWT(cache.token(origin: "https://fcm.googleapis.com"))?.claims["aud"] as? String == "https://fcm.googleapis.com")
        clock.advance(11 * 3600 - 1)
        #expect(try cache.token(origin: "https://push.example.net") == token)
        clock.advance(1)
        let renewed = try cache.token(origin: "https://push.example.net")
        #expect(renewed != token)
        #expect(DecodedJWT(renewed)?.claims["exp"] as? Int == 1_754_563_200 + 11 * 3600 + 12 * 3600)
    }
}
