import HeraldCore
import Realtime

/// `POST /v1/dev/token` (dev mode only): mints an HS256 access token for a demo user.
struct DevRoutes {
    let issuer: AccessTokenIssuer

    struct TokenBody: Decodable {
        let user_id: String
        let session_id: String?
        let channels: [String]?
        let ttl_seconds: Int64?
    }

    /// Longest lifetime a dev token may ask for: one day.
    static let maxTTLSeconds: Int64 = 86_400

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.devToken) { context in try routes.token(context) }
    }

    func token(_ context: RequestContext) throws -> RouteResult {
        let body = try RequestBody.decode(TokenBody.self, from: context.request)
        guard !body.user_id.isEmpty, body.user_id.utf8.count <= 190, ChannelName.personal(userID: body.user_id) != nil else {
            throw HTTPError.invalid("user_id", "user_id must be 1-190 characters of A-Z a-z 0-9 _ - : . @")
        }
        if let sid = body.session_id, sid.isEmpty || sid.utf8.count > 200 {
            throw HTTPError.invalid("session_id", "session_id must be 1-200 characters")
        }
        for pattern in body.channels ?? [] where ChannelGrant(pattern) == nil {
            throw HTTPError.invalid("channels", "'\(pattern.prefix(64))' is neither a channel name nor a prefix:* pattern")
        }
        let ttl = body.ttl_seconds ?? 3600
        guard (1...Self.maxTTLSeconds).contains(ttl) else {
            throw HTTPError.invalid("ttl_seconds", "ttl_seconds must be between 1 and \(Self.maxTTLSeconds)")
        }
        let now = unixSeconds()
        let claims = AccessClaims(subject: body.user_id, sessionID: body.session_id, expiresAt: now + ttl,
                                  notBefore: nil, issuedAt: now, channels: body.channels ?? [], sessionExpiresAt: nil)
        let token = issuer.issue(claims)
        return .response(.json(200, "{\"access_token\":\(JSONText.quote(token)),\"token_type\":\"Bearer\",\"expires_at\":\(now + ttl)}"))
    }
}
