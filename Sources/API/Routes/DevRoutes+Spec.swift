import Realtime

extension DevRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let devToken = RouteSpec(
            .post, "/v1/dev/token", auth: .none, operationID: "devToken",
            tags: ["dev"], summary: "Mint a demo access token (dev mode only)",
            description: "Only when `HERALD_DEV=1`; otherwise 404. For the app `default` (the default), an HS256 token signed with "
                + "`HERALD_JWT_SECRET`; for the demo app dev mode sets up (`demo-b`, docs/operations.md), an ES256 token with "
                + "`\"app\": \"demo-b\"` that the app's public key verifies. The answer lists the apps tokens can be minted for.",
            requestBody: .json(.ref("DevTokenRequest")),
            responses: [
                200: .json("The token.", .ref("DevToken")),
                400: .invalidRequest,
                404: .shared("NotFound", description: "Not in dev mode: the route does not exist (`not_found`)."),
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
            ])

        /// Every route here: documented even when dev mode is off and they are not served.
        static let all = [devToken]
    }
}
