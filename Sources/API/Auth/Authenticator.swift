import COpenSSL
import HeraldCore
import Realtime

/// Decides who is calling: a client with an access token (RT-3) or the app backend with the
/// server key. Every refusal is an `HTTPError` 401 with the one JSON error shape.
public struct Authenticator: Sendable {
    private let verifiers: [AccessTokenVerifier]
    private let serverKey: [UInt8]?
    private let leewaySeconds: Int64
    private let sessions: SessionRegistry?

    public init(configuration: APIConfiguration, sessions: SessionRegistry? = nil) {
        self.sessions = sessions
        verifiers = configuration.verificationKeys.map { AccessTokenVerifier(key: $0, leewaySeconds: configuration.leewaySeconds) }
        serverKey = configuration.serverKey.map { Array($0.utf8) }
        leewaySeconds = configuration.leewaySeconds
    }

    /// Verifies the request's access token (`Authorization: Bearer` or `?access_token=`).
    ///
    /// - Parameter now: unix seconds.
    /// - Returns: the token's claims.
    /// - Throws: `HTTPError` 401 `invalid_token` when the token is missing, malformed, signed with
    ///   another algorithm or key, expired or not yet valid.
    public func client(_ context: RequestContext, now: Int64) throws(HTTPError) -> AccessClaims {
        guard let token = context.bearerToken, !token.isEmpty else {
            throw HTTPError(401, "invalid_token", "an access token is required (Authorization: Bearer or ?access_token=)")
        }
        return try verify(token: token, now: now)
    }

    /// Verifies one access token (from a header, a query or a WebSocket `auth` frame).
    /// - Throws: `HTTPError` 401 `invalid_token`.
    public func verify(token: String, now: Int64) throws(HTTPError) -> AccessClaims {
        guard !verifiers.isEmpty else {
            throw HTTPError(401, "invalid_token", "access tokens are not configured on this server (HERALD_JWT_SECRET or HERALD_JWT_PUBLIC_KEY)")
        }
        var firstError: AccessTokenError?
        for verifier in verifiers {
            let claims: AccessClaims
            do {
                claims = try verifier.verify(token, now: now)
            } catch {
                // With two keys configured, a token signed for the other one is not a failure yet.
                if case .algorithmMismatch = error {
                    if firstError == nil { firstError = error }
                    continue
                }
                throw HTTPError(401, "invalid_token", error.message)
            }
            // DV-4: an ended session's tokens are refused at once, before they expire.
            if let sid = claims.sessionID, sessions?.isEnded(sid) == true {
                throw HTTPError(401, "session_ended", "the session has ended; sign in again")
            }
            return claims
        }
        throw HTTPError(401, "invalid_token", firstError?.message ?? "the access token was refused")
    }

    /// The stream identity of a verified token: user, session, grants and the moment the stream
    /// must end (`exp` plus leeway, RT-8c).
    public func identity(_ claims: AccessClaims) -> StreamIdentity {
        StreamIdentity(userID: claims.subject, sessionID: claims.sessionID,
                       grants: claims.channels.compactMap(ChannelGrant.init), expiresAt: claims.expiresAt.addingSaturating(leewaySeconds))
    }

    /// Checks the server key (`Authorization: Bearer <HERALD_SERVER_KEY>`) in constant time.
    ///
    /// - Throws: `HTTPError` 401 `unauthorized` when it is missing, wrong, or no key is configured.
    public func server(_ context: RequestContext) throws(HTTPError) {
        guard let serverKey else {
            throw HTTPError(401, "unauthorized", "the server API is disabled: HERALD_SERVER_KEY is not set")
        }
        guard let header = context.request.headers["Authorization"] else {
            throw HTTPError(401, "unauthorized", "the server key is required (Authorization: Bearer <server key>)")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        let given = parts.count == 2 && parts[0].lowercased() == "bearer" ? Array(parts[1].utf8) : []
        guard given.count == serverKey.count,
              given.withUnsafeBytes({ a in serverKey.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) } }) == 0
        else {
            throw HTTPError(401, "unauthorized", "the server key is wrong")
        }
    }
}
