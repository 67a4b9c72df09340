import Realtime

extension PresenceRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let setSessionState = RouteSpec(
            .put, "/v1/me/sessions/current/state", auth: .accessToken, operationID: "setSessionState",
            tags: ["client"], summary: "Report the app state of the caller's session",
            description: "Sets the state on every live connection of the token's `sid` and counts as app-level life for the foreground lease.",
            requestBody: .json(.ref("StateRequest")),
            responses: [
                200: .json("The state was set on every live connection of the session.", .ref("StateResult")),
                400: .invalidRequest,
                401: .invalidToken,
                403: .sessionRequired,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
            ])

        static let acknowledge = RouteSpec(
            .post, "/v1/me/acks", auth: .accessToken, operationID: "acknowledge",
            tags: ["client"], summary: "Acknowledge received events",
            description: "Answered once every `unless_acked` push still waiting for one of the ids (the session's devices) is cancelled in storage and recorded `suppressed_acked`, so an answered ack holds across a restart (ADR 0025).",
            requestBody: .json(.ref("AcksRequest")),
            responses: [
                200: .json("Recorded (the session keeps its most recent 256 acks in memory; waiting pushes are cancelled in storage).", .ref("AcksResult")),
                400: .invalidRequest,
                401: .invalidToken,
                403: .sessionRequired,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let channelPresence = RouteSpec(
            .get, "/v1/channels/{name}/presence", auth: .serverKey, operationID: "channelPresence",
            tags: ["server"], summary: "Who is connected to a channel",
            parameters: [
                .path("name", "The channel.", .ref("ChannelName")),
            ],
            responses: [
                200: .json("The channel's connections, by user and session.", .ref("ChannelPresence")),
                400: .invalidRequest,
                401: .unauthorized,
                404: .notFound,
                429: .tooManyConnections,
            ])

        static let liveSessions = RouteSpec(
            .get, "/v1/users/{id}/sessions/live", auth: .serverKey, operationID: "liveSessions",
            tags: ["server"], summary: "A user's sessions and live connections",
            parameters: [
                .path("id", "The user id (`sub`): 1-195 characters of `A-Z a-z 0-9 _ - : . @`, else 400.", .ref("UserID")),
            ],
            responses: [
                200: .json("The user's sessions (an unknown user has none).", .ref("LiveSessions")),
                400: .invalidRequest,
                401: .unauthorized,
                404: .notFound,
                429: .tooManyConnections,
            ])
    }
}
