import HeraldCore
import PushHTTP
import Synchronization

/// VAPID JWTs (RFC 8292 §2), one per push service origin, reused while they have time left.
///
/// A token is `{"typ":"JWT","alg":"ES256"}.{"aud":<origin>,"exp":now+12h,"sub":<subject>}`, signed
/// with the application server key. RFC 8292 allows `exp` up to 24 h ahead; 12 h leaves room for
/// a push service whose clock is ahead of ours, and a token is replaced an hour before it expires.
/// Signing is cheap but not free: reuse keeps it to one signature per origin per 11 hours.
final class VAPIDTokenCache: Sendable {
    /// Seconds a token is valid.
    static let lifetime = 12 * 3600
    /// Seconds before `exp` a token is replaced.
    static let renewBefore = 3600
    /// Origins kept; more (subscriptions at many push services) starts over, so memory stays bounded.
    static let maxOrigins = 256

    private let credentials: VAPIDCredentials
    private let clock: UnixClock
    private let tokens = Mutex<[String: (jwt: String, expiresAt: Int)]>([:])

    init(credentials: VAPIDCredentials, clock: @escaping UnixClock) {
        self.credentials = credentials
        self.clock = clock
    }

    /// The `Authorization` header value for a push to `origin`: `vapid t=<jwt>, k=<public key>`
    /// (RFC 8292 §3).
    ///
    /// - Throws: `JWTSigningError` when OpenSSL cannot sign.
    func authorization(origin: String) throws(JWTSigningError) -> String {
        "vapid t=" + (try token(origin: origin)) + ", k=" + credentials.publicKeyBase64URL
    }

    func token(origin: String) throws(JWTSigningError) -> String {
        let now = clock()
        if let cached = tokens.withLock({ $0[origin] }), cached.expiresAt - now > Self.renewBefore { return cached.jwt }
        let expiresAt = now + Self.lifetime
        let jwt = try JWTEncoder.encode(header: ["typ": .string("JWT")],
                                        claims: ["aud": .string(origin), "exp": .int(Int64(expiresAt)), "sub": .string(credentials.subject)],
                                        signer: credentials.signer)
        tokens.withLock { tokens in
            if tokens.count >= Self.maxOrigins { tokens.removeAll() }
            tokens[origin] = (jwt, expiresAt)
        }
        return jwt
    }
}
