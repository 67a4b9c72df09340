import Realtime

extension SessionRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let endSession = RouteSpec(
            .delete, "/v1/sessions/{sid}", auth: .serverKey, operationID: "endSession",
            tags: ["server"], summary: "End a session",
            description: "Logout, password change, refresh-token reuse: ends the server key's app's session `sid`, and only it (another app's session of the same `sid` is another session, left as it is). A `sid` the app never used is recorded as ended, so tokens that carry it are refused.",
            parameters: [
                .path("sid", "The session id (the tokens' `sid`): 1-200 bytes of UTF-8 in Unicode Normalization Form C, without NUL (U+0000), not starting with `~`; compared byte for byte.", .json(#"{"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[^~]"}"#)),
            ],
            responses: [
                200: .json("Ended: its devices are deleted, its tokens refused from now on (401 `session_ended`), its live streams closed.", .ref("SessionEnded"), links: #"""
                    {
                      "SetSessionExpiry": {
                        "operationId": "setSessionExpiry",
                        "parameters": {"sid": "$response.body#/session_id"},
                        "description": "An ended session is known, so its expiry can be set."
                      }
                    }
                    """#),
                400: .invalidRequest,
                401: .unauthorized,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let setSessionExpiry = RouteSpec(
            .put, "/v1/sessions/{sid}", auth: .serverKey, operationID: "setSessionExpiry",
            tags: ["server"], summary: "Set a session's expiry",
            description: "Sets the expiry of the server key's app's session `sid` (another app's session of the same `sid` is not touched). Past its expiry the session keeps its devices but they get no pushes (`active: false`).",
            parameters: [
                .path("sid", "The session id (the tokens' `sid`): 1-200 bytes of UTF-8 in Unicode Normalization Form C, without NUL (U+0000), not starting with `~`; compared byte for byte.", .json(#"{"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[^~]"}"#)),
            ],
            requestBody: .json(.ref("SessionExpiry")),
            responses: [
                200: .json("The session.", .ref("Session")),
                400: .invalidRequest,
                401: .unauthorized,
                404: .shared("NotFound", description: "The server key's app has no session `sid` (`not_found`)."),
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])
    }
}
