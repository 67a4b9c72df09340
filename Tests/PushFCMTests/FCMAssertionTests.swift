import Foundation
import HeraldCore
import PushHTTP
import PushTestSupport
import Testing

@testable import PushFCM

@Suite struct FCMAssertionTests {
    let credentials = try! FCMCredentials.load(environment: ["FCM_SERVICE_ACCOUNT_JSON": serviceAccountJSON(tokenURI: "https://127.0.0.1:8443/token")])!

    @Test func assertionClaims() throws {
        let token = try FCMAssertion.jwt(credentials: credentials, now: 1_754_563_200)
        let jwt = try #require(DecodedJWT(token))
        #expect(jwt.headerText == #"{"alg":"RS256","kid":"test-key-1","typ":"JWT"}"#)
        #expect(jwt.claimsText == #"{"aud":"https://127.0.0.1:8443/token","exp":1754566800,"iat":1754563200,"iss":"pushbridge-test@herald-test.iam.gserviceaccount.com","scope":"https://www.googleapis.com/auth/firebase.messaging"}"#)
        #expect(OpenSSLVerify.verifyRS256(token: token, publicKeyPEM: credentials.signer.publicKeyPEM()))
        // exp never beyond iat + 3600, whatever is asked.
        let long = try #require(DecodedJWT(try FCMAssertion.jwt(credentials: credentials, now: 100, lifetime: 99_999)))
        #expect(long.claims["exp"] as? Int == 3700)
    }

    @Test func tokenRequestIsAFormPost() throws {
        let request = try FCMAssertion.tokenRequest(credentials: credentials, now: 1_754_563_200)
        #expect(request.url == "https://127.0.0.1:8443/token")
        #expect(request.headerLines == ["content-type: application/x-www-form-urlencoded", "accept: application/json"])
        let assertion = try FCMAssertion.jwt(credentials: credentials, now: 1_754_563_200)  // RS256 is deterministic
        #expect(request.bodyText == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion)
    }

    @Test func parsesTokenAnswers() throws {
        #expect(try FCMAssertion.parseTokenResponse(response(200, #"{"access_token":"ya29.abc","expires_in":3599,"token_type":"Bearer"}"#))
                == FCMAccessTokenGrant(accessToken: "ya29.abc", expiresIn: 3599))
        #expect(throws: FCMTokenError.rejected(status: 400, error: "invalid_grant", description: "Invalid JWT Signature.")) {
            try FCMAssertion.parseTokenResponse(response(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#))
        }
        #expect(throws: FCMTokenError.unavailable(status: 503, detail: "token endpoint answered 503")) {
            try FCMAssertion.parseTokenResponse(response(503, "<html>"))
        }
        #expect(throws: FCMTokenError.unavailable(status: 200, detail: "token response without access_token")) {
            try FCMAssertion.parseTokenResponse(response(200, "{}"))
        }
        #expect(throws: FCMTokenError.rejected(status: 401, error: "http_401", description: "")) {
            try FCMAssertion.parseTokenResponse(response(401, "nope"))
        }
        #expect(FCMAccessTokenGrant(accessToken: "ya29.secret", expiresIn: 3599).description == "FCMAccessTokenGrant(expires_in: 3599)")
    }
}

@Suite struct RS256AssertionVectorTests {
    @Test func matchesThePythonVectorExactly() throws {
        let credentials = FCMCredentials(projectID: "herald-test", clientEmail: "pushbridge-test@herald-test.iam.gserviceaccount.com",
                                         tokenURI: "https://oauth2.googleapis.com/token", privateKeyID: "test-key-1",
                                         signer: try RS256Signer(pem: TestKeys.rsa2048))
        let token = try FCMAssertion.jwt(credentials: credentials, now: 1_754_563_200)
        #expect(token == JOSEVectors.rs256Assertion)
        #expect(OpenSSLVerify.verifyRS256(token: token, publicKeyPEM: credentials.signer.publicKeyPEM()))
    }

    /// Writes tokens for the PyJWT cross-check when PUSHBRIDGE_JWT_OUT names a directory:
    /// see the report for the `python3 -c 'import jwt…'` line that verifies them.
    @Test func writesTokensForPyJWTWhenAsked() throws {
        guard let directory = ProcessInfo.processInfo.environment["PUSHBRIDGE_JWT_OUT"] else { return }
        let rs = try RS256Signer(pem: TestKeys.rsa2048)
        let fcm = FCMCredentials(projectID: "herald-test", clientEmail: "pushbridge-test@herald-test.iam.gserviceaccount.com",
                                 tokenURI: "https://oauth2.googleapis.com/token", privateKeyID: "test-key-1", signer: rs)
        let files: [(String, String)] = [
            ("rs256.pub.pem", rs.publicKeyPEM()), ("fcm.jwt", try FCMAssertion.jwt(credentials: fcm, now: systemUnixClock())),
        ]
        for (name, text) in files {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
    }
}
