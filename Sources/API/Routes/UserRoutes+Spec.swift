import Realtime

extension UserRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let userParameter = OpenAPIParameter.path(
            "id", "The user id (`sub`).", .json(##"{"$ref": "#/components/schemas/UserID"}"##))

        static let getUser = RouteSpec(
            .get, "/v1/users/{id}", auth: .serverKey, operationID: "getUser",
            tags: ["server"], summary: "A user's profile (language)",
            description: "The language set with `PUT`; `locale` and `updated_at` are null for a user never set.",
            parameters: [userParameter],
            responses: [
                200: .json("The profile.", .ref("UserProfile")),
                400: .invalidRequest,
                401: .unauthorized,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let putUser = RouteSpec(
            .put, "/v1/users/{id}", auth: .serverKey, operationID: "putUser",
            tags: ["server"], summary: "Set a user's language",
            description: "A push to a device registered without a `locale` is written in this language, before the catalog's `default_locale` (NO-5). `null` clears it.",
            parameters: [userParameter],
            requestBody: .json(.ref("UserProfileUpdate")),
            responses: [
                200: .json("An existing profile, updated.", .ref("UserProfile")),
                201: .json("The user's first profile.", .ref("UserProfile")),
                400: .invalidRequest,
                401: .unauthorized,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])
    }
}
