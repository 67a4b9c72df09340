import Realtime

extension StreamRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let openStream = RouteSpec(
            .get, "/v1/stream", auth: .accessToken, operationID: "openStream",
            tags: ["client"], summary: "Open the SSE stream",
            description: "Always includes the caller's personal channel `user:{sub}`. Browsers' EventSource cannot set headers: pass the token as `?access_token=` (not with an `Authorization` header too: that is a 400 `invalid_request`).",
            parameters: [
                .shared("Channels"),
                .shared("State"),
                .shared("LastEventIDQuery"),
                .header("Last-Event-ID", "The last cursor the client received; resumes after it.", .json(#"{"type": "string"}"#), required: false),
            ],
            responses: [
                200: .content("The stream (WHATWG server-sent events): `retry:`, then `ready`, optionally `reset` and retained messages, replayed and live messages, heartbeats (`: heartbeat`), and finally `error` (`slow_consumer`, `token_expired` (also when the app's access-token settings changed), `session_ended`, `app_deleted`) or `shutdown`; a reader cut as too slow that does not read within the 5 s close grace sees only the end of the stream. See docs/protocol.md.", ["text/event-stream": .ref("StreamEvent")], headers: #"{"Cache-Control": {"schema": {"type": "string", "const": "no-cache"}}}"#),
                400: .invalidRequest,
                401: .invalidToken,
                403: .forbiddenChannel,
                429: .json("The user already holds `HERALD_MAX_STREAMS_PER_USER` streams (`too_many_streams`), or the caller's IP address holds `HERALD_MAX_CONNECTIONS_PER_IP` connections (`too_many_connections`).", .error(["too_many_streams", "too_many_connections"])),
                503: .json("The broker cannot take the subscription now (`broker_unavailable`), answered before any stream byte; reconnect later.",
                           .error(["broker_unavailable"])),
            ])
    }
}
