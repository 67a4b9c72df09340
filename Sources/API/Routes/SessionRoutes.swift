import HeraldCore
import Realtime

/// Session lifecycle from the app backend (DV-4), server key only. Each route acts on the key's
/// app's session of that `sid` only (ADR 0019): another app's session of the same `sid` is
/// another session, which nothing here reads or changes.
struct SessionRoutes {
    let authenticator: Authenticator
    let responder: DatabaseResponder
    let registry: SessionRegistry
    let node: RealtimeNode

    /// `{"expires_at": <unix seconds> | null}`; the key is required, so `{}` cannot clear an
    /// expiry by accident.
    struct ExpiryBody: JSONBody {
        let expiresAt: Double?
        enum CodingKeys: String, CodingKey { case expires_at }
        static let members = BodyMembers.fields("expires_at")
        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.contains(.expires_at) else {
                throw HTTPError.invalid("expires_at", "expires_at is required: unix seconds, or null to clear the expiry")
            }
            expiresAt = try container.decodeIfPresent(Double.self, forKey: .expires_at)
        }
    }

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.endSession) { context in try routes.end(context) }
        table.on(Spec.setSessionExpiry) { context in try routes.setExpiry(context) }
    }

    /// `DELETE /v1/sessions/{sid}`: logout, password change, refresh-token reuse. Its devices are
    /// deleted, its tokens refused from now on, its live streams closed (the key's app's only). A
    /// `sid` the app never used is recorded ended, so tokens that carry it later are refused.
    func end(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context)
        let sid = try Self.sid(context)
        let registry = self.registry
        let node = self.node
        return responder.write { tx in
            let deleted = try tx.sessions.end(sid: sid, app: app.rawValue, now: unixMilliseconds())
            registry.markEnded(sid, app: app)
            node.endSession(sid, app: app.rawValue)
            return .json(200, "{\"session_id\":\(JSONText.quote(sid)),\"ended\":true,\"devices_deleted\":\(deleted)}")
        }
    }

    /// `PUT /v1/sessions/{sid} {expires_at}`: a session past its expiry keeps its rows but gets no pushes.
    func setExpiry(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        let sid = try Self.sid(context)
        let body = try RequestBody.decode(ExpiryBody.self, from: context.request)
        if let seconds = body.expiresAt, seconds < 0 || seconds > 253_402_300_799 || seconds.rounded() != seconds {
            throw HTTPError.invalid("expires_at", "expires_at is whole unix seconds (or null)")
        }
        let expiresAt = body.expiresAt.map { Int64($0) * 1000 }
        return responder.write { tx in
            guard try tx.sessions.setExpiry(sid: sid, app: app, expiresAt: expiresAt) else {
                throw HTTPError(404, "not_found", "no such session")
            }
            guard let session = try tx.sessions.find(sid: sid, app: app) else { throw HTTPError(404, "not_found", "no such session") }
            return .json(200, SessionJSON.encode(session, now: unixMilliseconds()))
        }
    }

    private static func sid(_ context: RequestContext) throws(HTTPError) -> String {
        guard let sid = context.pathParameters["sid"], AccessClaims.isUsableSessionID(sid) else {
            throw HTTPError.invalid("sid", "a session id of 1-\(AccessClaims.maxSessionIDLength) bytes of UTF-8 in NFC without NUL, not starting with ~, is required")
        }
        return sid
    }
}

/// The session object of the API.
enum SessionJSON {
    static func encode(_ session: SessionRecord, now: Int64) -> String {
        "{\"session_id\":\(JSONText.quote(session.sid)),\"user_id\":\(JSONText.quote(session.userID)),"
            + "\"created_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: session.createdAt))),"
            + "\"last_seen_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: session.lastSeenAt))),"
            + "\"expires_at\":\(session.expiresAt.map { JSONText.quote(Timestamp.iso8601(milliseconds: $0)) } ?? "null"),"
            + "\"ended_at\":\(session.endedAt.map { JSONText.quote(Timestamp.iso8601(milliseconds: $0)) } ?? "null"),"
            + "\"active\":\(session.isActive(at: now))}"
    }
}
