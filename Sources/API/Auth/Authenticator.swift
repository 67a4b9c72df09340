import Foundation
import HeraldCore
import PushHTTP
import Realtime

/// Decides who is calling: a client with an access token (RT-3) or the app backend with the
/// server key. Every refusal is an `HTTPError` 401 with the one JSON error shape.
public struct Authenticator: Sendable {
    /// The apps whose keys are tried (ADR 0006); `default` is the configuration's.
    public let apps: AppDirectory
    private let leewaySeconds: Int64
    private let sessions: SessionRegistry?

    public init(configuration: APIConfiguration, sessions: SessionRegistry? = nil) {
        self.sessions = sessions
        apps = configuration.apps ?? AppDirectory(configuration: configuration)
        leewaySeconds = configuration.leewaySeconds
    }

    /// Verifies the request's access token (`Authorization: Bearer` or `?access_token=`, one of them).
    ///
    /// - Parameter now: unix seconds.
    /// - Returns: the token's claims.
    /// - Throws: `HTTPError` 401 `invalid_token` when the token is missing, malformed, signed with
    ///   another algorithm or key, expired or not yet valid.
    ///   400 `invalid_request` when `Authorization` is given twice, or together with `?access_token=`
    ///   (`oneTokenMethod(_:)`).
    public func client(_ context: RequestContext, now: Int64) throws(HTTPError) -> AccessClaims {
        let token: String?
        let (header, query) = try Self.oneTokenMethod(context)
        if let header {
            token = try Self.bearer(header, code: "invalid_token", expected: "Bearer <access token>").map(String.init)
        } else {
            token = query
        }
        guard let token, !token.isEmpty else {
            throw HTTPError(401, "invalid_token", "an access token is required (Authorization: Bearer or ?access_token=)")
        }
        return try verify(token: token, now: now)
    }

    /// The request's one `Authorization` value, if it has one.
    /// - Throws: 400 `invalid_request` when it has several: which one counts would be a guess
    ///   (RFC 9110 §5.3: a field that is not a list appears once).
    static func authorization(_ context: RequestContext) throws(HTTPError) -> String? {
        // Counted without making the list of values (one allocation a request).
        let (value, count) = context.request.headers.first("Authorization")
        guard count <= 1 else {
            throw HTTPError(400, "invalid_request", "Authorization is given \(count) times; send it once", field: "Authorization")
        }
        return value
    }

    /// The request's `Authorization` value and its `?access_token=`, at most one of them given.
    /// - Throws: 400 `invalid_request` (`field: "access_token"`) when both are, equal or not: RFC 6750
    ///   §2 forbids a client more than one way of sending the token, and §3.1 answers it with
    ///   `invalid_request`; reading one and ignoring the other would let a request that names two
    ///   users be served as either. 400 also for `Authorization` or `access_token` given twice.
    static func oneTokenMethod(_ context: RequestContext) throws(HTTPError) -> (header: String?, query: String?) {
        let header = try authorization(context)
        let query = try context.request.queryValue("access_token")
        if header != nil, query != nil {
            throw HTTPError(400, "invalid_request",
                            "the access token is sent both in Authorization and as ?access_token=; send it one way (RFC 6750 §2)",
                            field: "access_token")
        }
        return (header, query)
    }

    /// The credentials of an `Authorization` value that must use the `Bearer` scheme.
    /// - Returns: nil for `Bearer` with nothing after it.
    /// - Throws: 401 `code` naming the scheme given (`Basic` …) and the form `expected`.
    static func bearer(_ header: String, code: String, expected: String) throws(HTTPError) -> Substring? {
        if let credentials = RequestContext.bearerCredentials(in: header) { return credentials }
        let scheme = header.prefix { $0 != " " && $0 != "\t" }
        if scheme.lowercased() == "bearer" { return nil }
        let shown = scheme.utf8.count <= 20 && scheme.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
            ? "the \(scheme) scheme" : "another scheme"
        throw HTTPError(401, code, "Authorization uses \(shown): Herald expects Authorization: \(expected)")
    }

    /// Verifies one access token (from a header, a query or a WebSocket `auth` frame) with the keys
    /// of its app (ADR 0006: the `app` claim, else an `iss` some app is configured with, else
    /// `default`), then that app's issuer and audience checks.
    /// - Returns: the claims, `app` set to the app they were verified for.
    /// - Throws: `HTTPError` 401 `invalid_token` (also for an `app` claim naming no app), or
    ///   `session_ended`.
    public func verify(token: String, now: Int64) throws(HTTPError) -> AccessClaims {
        let snapshot = apps.snapshot
        // With `default` alone there is nothing to route: the payload is read once, by the verifier.
        let peek = snapshot.hasStoredApps ? TokenPeek(token) : TokenPeek()
        let app: ResolvedApp
        if let name = peek.app {
            guard let id = AppID(name), let named = snapshot.apps[id] else {
                throw HTTPError(401, "invalid_token", "the token's app claim names no app on this server")
            }
            app = named
        } else if let issuer = peek.issuer, let id = snapshot.byIssuer[issuer], let issued = snapshot.apps[id] {
            app = issued
        } else {
            app = snapshot.defaultApp
        }
        guard app.hasTokenKeys else {
            throw HTTPError(401, "invalid_token", app.id.isDefault
                ? "access tokens are not configured on this server (HERALD_JWT_SECRET or HERALD_JWT_PUBLIC_KEY)"
                : "app \(app.id) has no access-token keys")
        }
        let verifiers = app.verifiers(kid: peek.kid)
        guard !verifiers.isEmpty else { throw HTTPError(401, "invalid_token", "the token's kid is not in the app's JWKS") }
        var firstError: AccessTokenError?
        for verifier in verifiers {
            var claims: AccessClaims
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
            let tokens = app.settings.tokens
            if !app.id.isDefault {
                if let issuer = tokens.issuer, claims.issuer != issuer {
                    throw HTTPError(401, "invalid_token", "the token's iss is not the app's issuer")
                }
                if let audience = tokens.audience, !claims.audience.contains(audience) {
                    throw HTTPError(401, "invalid_token", "the token's aud does not include the app's audience")
                }
            }
            // The claim routed the token when the peek ran; without stored apps it did not, and
            // one naming any app but `default` still names no app here.
            if let named = claims.appClaim, named != app.id.rawValue {
                throw HTTPError(401, "invalid_token", "the token's app claim names no app on this server")
            }
            claims.app = app.id
            // DV-4: an ended session's tokens are refused at once, before they expire (each app
            // ends its own sessions: the registry is keyed by app and sid).
            if let sid = claims.sessionID, sessions?.isEnded(sid, app: claims.app) == true {
                throw HTTPError(401, "session_ended", "the session has ended; sign in again")
            }
            return claims
        }
        throw HTTPError(401, "invalid_token", firstError?.message ?? "the access token was refused")
    }

    /// The stream identity of a verified token: user, session, grants and the moment the stream
    /// must end (`exp` plus leeway, RT-8c).
    public func identity(_ claims: AccessClaims) -> StreamIdentity {
        var identity = StreamIdentity(userID: claims.subject, sessionID: claims.sessionID,
                                      grants: claims.channels.compactMap(ChannelGrant.init), expiresAt: claims.expiresAt.addingSaturating(leewaySeconds))
        identity.app = claims.app.rawValue
        return identity
    }

    /// Checks the server key (`Authorization: Bearer <key>`) and names its app (ADR 0006): keys
    /// are looked up by SHA-256, and the last key found is compared in constant time
    /// (`AppDirectory.app(serverKey:)`), so no comparison's time depends on the key's bytes.
    ///
    /// - Returns: the app the key belongs to (`HERALD_SERVER_KEY`: `default`).
    /// - Throws: `HTTPError` 401 `unauthorized` when it is missing, wrong, not `Bearer`, or no key
    ///   is configured; 400 `invalid_request` when `Authorization` is given twice.
    @discardableResult
    public func server(_ context: RequestContext) throws(HTTPError) -> AppID {
        guard apps.hasServerKeys else {
            throw HTTPError(401, "unauthorized", "the server API is disabled: HERALD_SERVER_KEY is not set")
        }
        guard let header = try Self.authorization(context) else {
            throw HTTPError(401, "unauthorized", "the server key is required (Authorization: Bearer <server key>)")
        }
        // Copied from the header's contiguous bytes (Array(_:) of a Substring's UTF-8 view copies byte by byte).
        let given = try Self.bearer(header, code: "unauthorized", expected: "Bearer <server key>")
            .map { credentials in credentials.utf8.withContiguousStorageIfAvailable(Array.init) ?? Array(credentials.utf8) } ?? []
        guard !given.isEmpty, let app = apps.app(serverKey: given) else {
            throw HTTPError(401, "unauthorized", "the server key is wrong")
        }
        return app
    }
}

/// What routing reads from a token before it is verified (ADR 0006): the header's `kid` and the
/// payload's `app` and `iss`, each only if it is a string. Nothing here is trusted: it picks the
/// keys the signature must then satisfy.
struct TokenPeek {
    var kid: String?
    var app: String?
    var issuer: String?

    init() {}

    init(_ token: String) {
        guard token.utf8.count <= AccessTokenVerifier.maxTokenBytes else { return }
        let parts = token.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3 else { return }
        struct Header: Decodable { var kid: String? }
        if let bytes = Base64URL.decode(parts[0]), let header = try? JSONDecoder().decode(Header.self, from: Data(bytes)) {
            kid = header.kid
        }
        // Each claim on its own: one of another type (`"app": 5`) is ignored without losing the other.
        if let bytes = Base64URL.decode(parts[1]),
           let payload = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] {
            app = payload["app"] as? String
            issuer = payload["iss"] as? String
        }
    }
}
