import Realtime

extension PreferenceRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        /// The answers of reading a scope's preferences, by scope or by the store alias.
        static let scopedGetResponses: [Int: OpenAPIResponse] = [
            200: .pushPreferences,
            400: .invalidRequest,
            401: .invalidToken,
            404: .notFound,
            429: .tooManyConnections,
            503: .storageUnavailable,
        ]
        /// The answers of setting them.
        static let scopedPutResponses: [Int: OpenAPIResponse] = [
            200: .pushPreferences,
            400: .invalidRequest,
            401: .invalidToken,
            404: .notFound,
            413: .payloadTooLarge,
            415: .unsupportedMediaType,
            429: .tooManyConnections,
            503: .storageUnavailable,
        ]

        static let getGlobalPushPreferences = RouteSpec(
            .get, "/v1/me/push-preferences", auth: .accessToken, operationID: "getGlobalPushPreferences",
            tags: ["notifications"], summary: "The caller's global push switch",
            description: "Off silences every push to the user's devices, whatever the scoped preferences say (NO-4, seed 002).",
            responses: [
                200: .pushPreferences,
                401: .invalidToken,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let putGlobalPushPreferences = RouteSpec(
            .put, "/v1/me/push-preferences", auth: .accessToken, operationID: "putGlobalPushPreferences",
            tags: ["notifications"], summary: "Set the caller's global push switch",
            requestBody: .shared("PushPreferencesUpdate"),
            responses: [
                200: .pushPreferences,
                400: .invalidRequest,
                401: .invalidToken,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let getPushPreferences = RouteSpec(
            .get, "/v1/scopes/{scope}/me/push-preferences", auth: .accessToken, operationID: "getPushPreferences",
            tags: ["notifications"], summary: "The caller's push preferences in a scope",
            description: "Until saved, the catalog's defaults (`is_default: true`) (NO-4).",
            parameters: [
                .shared("ScopePath"),
            ],
            responses: scopedGetResponses)

        static let putPushPreferences = RouteSpec(
            .put, "/v1/scopes/{scope}/me/push-preferences", auth: .accessToken, operationID: "putPushPreferences",
            tags: ["notifications"], summary: "Set the caller's push preferences in a scope",
            parameters: [
                .shared("ScopePath"),
            ],
            requestBody: .shared("PushPreferencesUpdate"),
            responses: scopedPutResponses)

        static let getStorePushPreferences = RouteSpec(
            .get, "/v1/stores/{store_id}/me/push-preferences", auth: .accessToken, operationID: "getStorePushPreferences",
            tags: ["notifications", "compatibility"], summary: "The caller's push preferences in a store (compatibility, seed 001)",
            description: "The scope `store:{store_id}`.",
            parameters: [
                .shared("StoreID"),
            ],
            responses: scopedGetResponses)

        static let putStorePushPreferences = RouteSpec(
            .put, "/v1/stores/{store_id}/me/push-preferences", auth: .accessToken, operationID: "putStorePushPreferences",
            tags: ["notifications", "compatibility"], summary: "Set the caller's push preferences in a store (compatibility, seed 001)",
            description: "The scope `store:{store_id}`.",
            parameters: [
                .shared("StoreID"),
            ],
            requestBody: .shared("PushPreferencesUpdate"),
            responses: scopedPutResponses)
    }
}
