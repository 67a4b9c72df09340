import HeraldCore
import Realtime

/// `GET /v1/ws` (RT-2): the WebSocket twin of `/v1/stream`, and the conformance echo endpoint.
struct WebSocketRoutes {
    let authenticator: Authenticator
    let streams: StreamRoutes
    let echoEnabled: Bool
    /// Where a planned `unless_acked` push waits: an `ack` message cancels it there (ADR 0026).
    let storage: any Storage

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.openWebSocket) { context in try routes.open(context) }
        if echoEnabled {
            table.undocumented(.get, "/v1/ws/echo") { context in
                let key = try WebSocketUpgrade.validate(context.request)
                return .webSocket(WebSocketRequest(mode: .echo, key: key, identity: nil) { _ in
                    .failure(HTTPError(401, "invalid_token", "the echo endpoint has no authentication"))
                })
            }
        }
    }

    func open(_ context: RequestContext) throws -> RouteResult {
        let key = try WebSocketUpgrade.validate(context.request)
        let request = context.request
        guard let appState = AppState(try request.queryValue("state") ?? "foreground") else {
            throw HTTPError.invalid("state", "state must be foreground or background")
        }
        let lastEventID = try request.queryValue("last_event_id")
        let resume: ResumePoint = lastEventID.map { $0.isEmpty ? .fresh : (StreamCursor($0).map(ResumePoint.cursor) ?? .invalid) } ?? .fresh
        let authenticator = self.authenticator
        let verifyToken: StreamTokenVerifier = { token in
            Result { () throws(HTTPError) in authenticator.identity(try authenticator.verify(token: token, now: unixSeconds())) }
        }
        var identity: StreamIdentity?
        var channels: [ChannelName] = []
        // Both ways at once is refused before the upgrade, as on every route (RFC 6750 §2), even
        // when the header's scheme is not Bearer: it would otherwise fall to the first message.
        let (header, query) = try Authenticator.oneTokenMethod(context)
        if header.flatMap(RequestContext.bearerCredentials(in:)) != nil || query != nil {
            // Token on the upgrade: refuse bad tokens and ungranted channels before upgrading, as SSE does.
            let claims = try authenticator.client(context, now: unixSeconds())
            guard let personal = ChannelName.personal(userID: claims.subject) else {
                throw HTTPError(401, "invalid_token", "the token's sub cannot name a channel")
            }
            identity = authenticator.identity(claims)
            streams.sessions.touch(claims)
            channels = try streams.requestedChannels(request, claims: claims, personal: personal)
        } else {
            // Authentication comes in the first frame; grants are checked then.
            channels = try StreamRoutes.channelNames(request, personal: nil, max: streams.configuration.maxChannelsPerStream)
        }
        return .webSocket(WebSocketRequest(mode: .herald, key: key, identity: identity, channels: channels,
                                           resume: resume, appState: appState, checkMessage: RequestBody.webSocketMessageCheck,
                                           keepAcks: Self.ackKeeper(storage), verifyToken: verifyToken))
    }

    /// The `ack` message's way into storage (ADR 0026): the one `POST /v1/me/acks` takes
    /// (`AcknowledgedPushes.keep`), its failure told with that route's code and message. A
    /// token without `sid` has no session a push could wait for: kept at once, in memory only.
    static func ackKeeper(_ storage: any Storage) -> WebSocketAckKeeper {
        { identity, ids, done in
            guard let sessionID = identity.sessionID else { return done(nil) }
            AcknowledgedPushes.keep(in: storage, app: identity.app, userID: identity.userID, sessionID: sessionID, eventIDs: ids) { kept in
                if case .failure(let error) = kept { done(DatabaseResponder.error(error)) } else { done(nil) }
            }
        }
    }
}
