import Realtime

extension WebSocketRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let openWebSocket = RouteSpec(
            .get, "/v1/ws", auth: .accessTokenOrFirstMessage, operationID: "openWebSocket",
            tags: ["client"], summary: "Open the WebSocket",
            description: "An RFC 6455 opening handshake (`Upgrade: websocket`, `Connection: Upgrade`, version 13; no extensions or subprotocols). The access token comes on the upgrade (`Authorization: Bearer` or `?access_token=`, not both: both is a 400 `invalid_request`; a bad token is a 401 and an ungranted channel a 403 before the upgrade) or, with no token on the upgrade, as the first message `{\"type\":\"auth\",\"access_token\":…}` within 5 s. An `ack` message takes the way of `POST /v1/me/acks` and is answered `{\"type\":\"acked\",\"ids\":[…]}` once a push waiting for it is cancelled in storage, or an `error` message naming its `ids` (ADR 0026).",
            parameters: [
                .shared("Channels"),
                .shared("State"),
                .shared("LastEventIDQuery"),
                .header("Sec-WebSocket-Key", "The base64 of 16 random bytes.", .json(#"{"type": "string", "pattern": "^[A-Za-z0-9+/]{22}==$"}"#), required: true),
                .header("Sec-WebSocket-Version", nil, .json(#"{"type": "string", "const": "13"}"#), required: true),
            ],
            responses: [
                101: .content("Switching Protocols: the connection is now a WebSocket carrying the JSON messages of docs/protocol.md.", headers: #"""
                    {
                      "Upgrade": {"schema": {"type": "string", "const": "websocket"}},
                      "Connection": {"schema": {"type": "string"}},
                      "Sec-WebSocket-Accept": {"description": "base64(SHA-1(key + GUID)), RFC 6455.", "schema": {"type": "string"}}
                    }
                    """#),
                400: .json("Not a WebSocket upgrade (`upgrade_required`: no `Upgrade: websocket` / `Connection: Upgrade`, not HTTP/1.1, or a bad `Sec-WebSocket-Key`), or a malformed `state` or channel name, or the access token sent both in `Authorization` and as `?access_token=` (`invalid_request`).", .error(["upgrade_required", "invalid_request"])),
                401: .invalidToken,
                403: .forbiddenChannel,
                426: .json("A `Sec-WebSocket-Version` other than 13 (`unsupported_websocket_version`).", .error(["unsupported_websocket_version"]), headers: #"{"Sec-WebSocket-Version": {"schema": {"type": "string", "const": "13"}}}"#),
                429: .json("With a token on the upgrade: the user already holds `HERALD_MAX_STREAMS_PER_USER` streams (`too_many_streams`), answered before upgrading; or the caller's IP address holds `HERALD_MAX_CONNECTIONS_PER_IP` connections (`too_many_connections`).", .error(["too_many_streams", "too_many_connections"])),
            ])
    }
}
