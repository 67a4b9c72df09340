import HeraldCore
import Realtime

/// Presence and app state (RT-7, RT-7a): the client reports state and acks; the app backend asks
/// who is connected.
struct PresenceRoutes {
    let authenticator: Authenticator
    let presence: any PresenceStore
    /// Where a planned `unless_acked` push waits: an ack cancels it there (ADR 0025).
    let storage: any Storage

    struct StateBody: JSONBody {
        let state: String

        static let members = BodyMembers.fields("state")
    }

    struct AcksBody: JSONBody {
        let ids: [String]

        static let members = BodyMembers.fields("ids")
    }

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.setSessionState) { context in try routes.setState(context) }
        table.on(Spec.acknowledge) { context in try routes.acknowledge(context) }
        table.on(Spec.channelPresence) { context in try routes.channelPresence(context) }
        table.on(Spec.liveSessions) { context in try routes.liveSessions(context) }
    }

    /// `PUT /v1/me/sessions/current/state {state}` → every live connection of the caller's session.
    func setState(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        guard let sessionID = claims.sessionID else {
            throw HTTPError(403, "session_required", "the access token has no sid, so it has no session")
        }
        let body = try RequestBody.decode(StateBody.self, from: context.request)
        guard let state = AppState(body.state) else { throw HTTPError.invalid("state", "state must be foreground or background") }
        let changed = presence.setState(userID: Presence.userKey(app: claims.app.rawValue, userID: claims.subject), sessionID: sessionID, state)
        return .response(.json(200, "{\"session_id\":\(JSONText.quote(sessionID)),\"state\":\"\(state)\",\"connections\":\(changed)}"))
    }

    /// `POST /v1/me/acks {ids:[…]}`: the session received these events (SSE clients' acks).
    func acknowledge(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        guard let sessionID = claims.sessionID else {
            throw HTTPError(403, "session_required", "the access token has no sid, so it has no session")
        }
        let body = try RequestBody.decode(AcksBody.self, from: context.request)
        guard !body.ids.isEmpty, body.ids.count <= 1000 else { throw HTTPError.invalid("ids", "ids must hold 1 to 1000 event ids") }
        for id in body.ids where id.isEmpty || id.utf8.count > 64 {
            throw HTTPError.invalid("ids", "each id is an event id of 1-64 characters")
        }
        presence.acknowledge(sessionID: sessionID, connectionID: nil,
                             userID: Presence.userKey(app: claims.app.rawValue, userID: claims.subject), ids: body.ids)
        let answer = HTTPResponse.json(200, "{\"acknowledged\":\(body.ids.count)}")
        let storage = self.storage, app = claims.app.rawValue, user = claims.subject, ids = body.ids
        // Answered only once a push waiting for these ids is cancelled in storage: the answer
        // promises the ack survives a restart (ADR 0025, SC-3).
        return .deferred { writer in
            AcknowledgedPushes.keep(in: storage, app: app, userID: user, sessionID: sessionID, eventIDs: ids) { kept in
                writer.complete(DatabaseResponder.response(kept.map { answer }))
            }
        }
    }

    /// `GET /v1/channels/{name}/presence` (server key).
    func channelPresence(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context)
        return try channelPresence(named: context.pathParameters["name"], app: app.rawValue)
    }

    /// Who is connected to channel `name`, for a caller already checked: the server key here, the
    /// demo user in `DemoRoutes`.
    ///
    /// - Parameter app: whose channel `name` is (ADR 0006: another app's same name is another channel).
    /// - Throws: `HTTPError` 400 when `name` is not a channel name.
    func channelPresence(named name: String?, app: String) throws -> RouteResult {
        guard let raw = name, let named = ChannelName(raw) else {
            throw HTTPError.invalid("name", "not a valid channel name")
        }
        let channel = ChannelName.scoped(named, app: app)
        let sessions = presence.sessions(channel: channel)
        let connections = sessions.reduce(0) { $0 + $1.connections.count }
        var users: [String: [Presence.SessionSummary]] = [:]
        for session in sessions { users[Presence.userID(fromKey: session.userID), default: []].append(session) }
        let usersJSON = users.keys.sorted().map { user in
            "{\"user_id\":\(JSONText.quote(user)),\"sessions\":[" + users[user]!.map(json).joined(separator: ",") + "]}"
        }
        return .response(.json(200, "{\"channel\":\(JSONText.quote(named.rawValue)),\"connections\":\(connections),\"users\":[" + usersJSON.joined(separator: ",") + "]}"))
    }

    /// `GET /v1/users/{id}/sessions/live` (server key).
    func liveSessions(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context)
        guard let userID = context.pathParameters["id"], ChannelName.personal(userID: userID) != nil else {
            throw HTTPError.invalid("id", "not a valid user id")
        }
        let sessions = presence.sessions(userID: Presence.userKey(app: app.rawValue, userID: userID))
        return .response(.json(200, "{\"user_id\":\(JSONText.quote(userID)),\"sessions\":[" + sessions.map(json).joined(separator: ",") + "]}"))
    }

    private func json(_ session: Presence.SessionSummary) -> String {
        let connections = session.connections.map { c in
            "{\"connection_id\":\(JSONText.quote(c.connectionID)),\"transport\":\"\(c.transport.rawValue)\",\"state\":\"\(c.state)\","
                + "\"lease_fresh\":\(c.leaseFresh),\"lease_age_ms\":\(c.leaseAgeMilliseconds),"
                + "\"channels\":\(JSONText.array(c.channels.map(\.clientName).sorted())),\"opened_at\":\(c.openedAt)}"
        }
        let state = session.connections.contains { $0.state == .foreground } ? "foreground" : "background"
        return "{\"session_id\":\(session.sessionID.map(JSONText.quote) ?? "null"),\"user_id\":\(JSONText.quote(Presence.userID(fromKey: session.userID))),"
            + "\"live\":\(!session.connections.isEmpty),\"state\":\"\(state)\",\"foreground\":\(session.foreground),"
            + "\"last_change_at\":\(session.lastChangeAt),\"lease_age_ms\":\(session.leaseAgeMilliseconds),"
            + "\"last_ack_id\":\(session.lastAck.map(JSONText.quote) ?? "null"),\"last_ack_at\":\(session.lastAckAt.map(String.init) ?? "null"),"
            + "\"connections\":[" + connections.joined(separator: ",") + "]}"
    }
}
