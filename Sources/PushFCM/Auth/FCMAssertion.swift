import Foundation
import HeraldCore
import PushHTTP

/// The OAuth 2.0 JWT-bearer grant that turns a service account into an FCM access token
/// (RFC 7523; Google "Using OAuth 2.0 for Server to Server Applications"; push-providers.md §2.4).
///
/// Assertion: header `{"alg":"RS256","kid":<private_key_id>,"typ":"JWT"}`, claims
/// `{"aud":<token_uri>,"exp":iat+lifetime,"iat":<unix s>,"iss":<client_email>,"scope":<firebase.messaging>}`.
/// Request: `POST <token_uri>`, `content-type: application/x-www-form-urlencoded`, body
/// `grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=<jwt>`.
public enum FCMAssertion {
    /// The OAuth scope for FCM HTTP v1 sends.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The RFC 7523 grant type.
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// Google refuses assertions that live longer than one hour.
    public static let maximumLifetime = 3600

    /// The signed assertion JWT.
    ///
    /// - Parameters:
    ///   - credentials: the service account (`client_email`, `token_uri`, key).
    ///   - now: UNIX seconds for `iat`.
    ///   - lifetime: seconds until `exp`; clamped to 1…3600.
    /// - Throws: `JWTSigningError`.
    public static func jwt(credentials: FCMCredentials, now: Int, lifetime: Int = maximumLifetime) throws(JWTSigningError) -> String {
        let lifetime = min(max(lifetime, 1), maximumLifetime)
        var header: [String: PushJSON] = ["typ": .string("JWT")]
        if let keyID = credentials.privateKeyID { header["kid"] = .string(keyID) }
        let claims: [String: PushJSON] = [
            "iss": .string(credentials.clientEmail),
            "scope": .string(scope),
            "aud": .string(credentials.tokenURI),
            "iat": .int(Int64(now)),
            "exp": .int(Int64(now + lifetime)),
        ]
        return try JWTEncoder.encode(header: header, claims: claims, signer: credentials.signer)
    }

    /// The urlencoded form body for `assertion`. The JWT needs no escaping: base64url and `.` are
    /// unreserved characters; the grant type's `:` are escaped as google-auth does.
    public static func formBody(assertion: String) -> [UInt8] {
        Array(("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion).utf8)
    }

    /// The token request: a fresh assertion posted to the account's `token_uri`.
    ///
    /// - Throws: `JWTSigningError`.
    public static func tokenRequest(credentials: FCMCredentials, now: Int) throws(JWTSigningError) -> PushHTTPRequest {
        PushHTTPRequest(url: credentials.tokenURI,
                        headers: [("content-type", "application/x-www-form-urlencoded"), ("accept", "application/json")],
                        body: formBody(assertion: try jwt(credentials: credentials, now: now)))
    }

    /// Reads the token endpoint's answer.
    ///
    /// - Returns: the access token and its lifetime (`expires_in`, seconds; Google says 3599).
    /// - Throws: `FCMTokenError`: `.rejected` for an OAuth error body (`invalid_grant` — clock skew
    ///   or a revoked key —, `invalid_client`, …), `.unavailable` for 5xx/429 or an unparsable answer.
    public static func parseTokenResponse(_ response: PushHTTPResponse) throws(FCMTokenError) -> FCMAccessTokenGrant {
        struct Success: Decodable { let access_token: String; let expires_in: Int? }
        struct Failure: Decodable { let error: String; let error_description: String? }
        let body = Data(response.body)
        if response.status == 200 {
            guard let success = try? JSONDecoder().decode(Success.self, from: body), !success.access_token.isEmpty else {
                throw .unavailable(status: 200, detail: "token response without access_token")
            }
            // Google always sends expires_in; if a double forgets, assume its usual hour minus a second.
            return FCMAccessTokenGrant(accessToken: success.access_token, expiresIn: success.expires_in ?? 3599)
        }
        if response.status >= 500 || response.status == 429 {
            throw .unavailable(status: response.status, detail: "token endpoint answered \(response.status)")
        }
        if let failure = try? JSONDecoder().decode(Failure.self, from: body) {
            throw .rejected(status: response.status, error: failure.error, description: failure.error_description ?? "")
        }
        throw .rejected(status: response.status, error: "http_\(response.status)", description: "")
    }
}

/// A fresh access token from Google's token endpoint.
public struct FCMAccessTokenGrant: Sendable, Equatable, CustomStringConvertible {
    /// The bearer token for `authorization: Bearer …` (opaque; `ya29.` is a convention, not a contract).
    public var accessToken: String
    /// Lifetime in seconds from when it was issued (`expires_in`).
    public var expiresIn: Int

    public init(accessToken: String, expiresIn: Int) {
        self.accessToken = accessToken
        self.expiresIn = expiresIn
    }

    /// Never shows the token itself.
    public var description: String { "FCMAccessTokenGrant(expires_in: \(expiresIn))" }
}

/// Why no FCM access token could be obtained.
public enum FCMTokenError: Error, Equatable, Sendable {
    /// Google refused the assertion (4xx with an RFC 6749 error body). Retrying with the same
    /// credentials will not help: a configuration problem (wrong key, clock skew, deleted account).
    case rejected(status: Int, error: String, description: String)
    /// The endpoint failed or answered something unreadable (5xx, 429, HTML): retry later.
    case unavailable(status: Int, detail: String)
    /// Building the request failed (signing); `detail` says what.
    case failed(detail: String)
    /// The token endpoint gave no answer: the transport failed (refused, unreachable, timed out,
    /// its certificate refused). `rejectedCertificate` is the verifier's text when the certificate
    /// was refused (`PushTransportFailure.rejectedCertificate`). Counts as an FCM request that went
    /// unanswered (`ProviderHealth`, ADR 0015): without a token no push can go.
    case unanswered(detail: String, rejectedCertificate: String?)
    /// A fetch failed (`unavailable`, `unanswered` or `failed`, described by `detail`) less than the cache's
    /// failure cool-down ago: no new fetch for `secondsLeft` more seconds (at least 1).
    case coolingDown(secondsLeft: Int, detail: String)
}
