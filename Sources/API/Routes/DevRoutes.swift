import HeraldCore
import PushHTTP
import Realtime

/// `POST /v1/dev/token` (dev mode only): mints an access token for a demo user, of the `default`
/// app (HS256, `HERALD_JWT_SECRET`) or of a stored demo app dev mode set up (ES256 with an `app`
/// claim, ADR 0006), so the web demo can switch between two apps.
struct DevRoutes {
    let issuer: AccessTokenIssuer
    /// The demo apps' signers (`APIConfiguration.devAppSigners`).
    var appSigners: [AppID: ES256Signer] = [:]
    /// The apps served: a demo app is minted for only while it is installed.
    var apps: AppDirectory?

    struct TokenBody: JSONBody {
        let user_id: String
        let session_id: String?
        let channels: [String]?
        let ttl_seconds: Int64?
        let app: String?

        static let members = BodyMembers.object([("user_id", .any), ("session_id", .any), ("channels", .any),
                                                 ("ttl_seconds", .wholeNumber), ("app", .any)])
    }

    /// Longest lifetime a dev token may ask for: one day.
    static let maxTTLSeconds: Int64 = 86_400

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.devToken) { context in try routes.token(context) }
    }

    /// The apps a token can be minted for now: `default` first, then the installed demo apps by id.
    var mintableApps: [AppID] {
        [.default] + appSigners.keys.filter { apps?.app($0) != nil }.sorted()
    }

    func token(_ context: RequestContext) throws -> RouteResult {
        let body = try RequestBody.decode(TokenBody.self, from: context.request)
        guard !body.user_id.isEmpty, body.user_id.utf8.count <= AccessClaims.maxSubjectLength, ChannelName.personal(userID: body.user_id) != nil else {
            throw HTTPError.invalid("user_id", "user_id must be 1-\(AccessClaims.maxSubjectLength) characters of A-Z a-z 0-9 _ - : . @")
        }
        if let sid = body.session_id, !AccessClaims.isUsableSessionID(sid) {
            throw HTTPError.invalid("session_id", "session_id must be 1-\(AccessClaims.maxSessionIDLength) bytes of UTF-8 in NFC, not starting with ~")
        }
        for pattern in body.channels ?? [] where ChannelGrant(pattern) == nil {
            throw HTTPError.invalid("channels", "'\(pattern.prefix(64))' is neither a channel name nor a prefix:* pattern")
        }
        let ttl = body.ttl_seconds ?? 3600
        guard (1...Self.maxTTLSeconds).contains(ttl) else {
            throw HTTPError.invalid("ttl_seconds", "ttl_seconds must be between 1 and \(Self.maxTTLSeconds)")
        }
        let mintable = mintableApps
        let app = try body.app.map { (name) throws(HTTPError) -> AppID in
            guard let id = AppID(name), mintable.contains(id) else {
                throw HTTPError.invalid("app", "'\(name.prefix(64))' is not an app dev tokens are minted for here; they are: "
                                        + mintable.map(\.rawValue).joined(separator: ", "))
            }
            return id
        } ?? .default
        let now = unixSeconds()
        var claims = AccessClaims(subject: body.user_id, sessionID: body.session_id, expiresAt: now + ttl,
                                  notBefore: nil, issuedAt: now, channels: body.channels ?? [], sessionExpiresAt: nil)
        let token: String
        if let signer = appSigners[app] {
            claims.appClaim = app.rawValue
            do {
                token = try AccessTokenIssuer.issue(claims, signer: signer)
            } catch {
                throw HTTPError(500, "internal_error", "the dev token of app \(app.rawValue) could not be signed: \(error)")
            }
        } else {
            token = issuer.issue(claims)
        }
        let apps = mintable.map { JSONText.quote($0.rawValue) }.joined(separator: ",")
        return .response(.json(200, "{\"access_token\":\(JSONText.quote(token)),\"token_type\":\"Bearer\",\"expires_at\":\(now + ttl),"
                                   + "\"app\":\(JSONText.quote(app.rawValue)),\"apps\":[\(apps)]}"))
    }
}
