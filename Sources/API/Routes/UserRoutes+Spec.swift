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
            description: "A notification's push takes each text in the device's `locale` (the tag, then its language), else in this language, else in the catalog's `default_locale` (NO-5); a device registered without a `locale` goes straight to this one. `null` clears it.",
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
