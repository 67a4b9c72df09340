import Realtime

extension DeviceRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        /// What a registered device's id leads to, on every answer that returns one.
        static let deviceLinks = #"""
            {
              "DeleteDevice": {
                "operationId": "deleteDevice",
                "parameters": {"id": "$response.body#/id"},
                "description": "The device's id deletes it."
              },
              "TestPush": {
                "operationId": "testPush",
                "parameters": {"id": "$response.body#/id"},
                "description": "The device's id sends it a test push."
              }
            }
            """#

        /// The answers of both registration routes (the compatibility one maps onto the other).
        static let registrationResponses: [Int: OpenAPIResponse] = [
            200: .json("An existing device (same provider and token, whatever its platform label) updated, and moved to the caller if it was another user's.", .ref("Device"), links: deviceLinks),
            201: .json("A new device.", .ref("Device"), links: deviceLinks),
            400: .invalidRequest,
            401: .invalidToken,
            403: .deviceForbidden,
            409: .sessionConflict,
            413: .payloadTooLarge,
            415: .unsupportedMediaType,
            429: .tooManyConnections,
            503: .storageUnavailable,
        ]

        static let registerDevice = RouteSpec(
            .post, "/v1/me/devices", auth: .accessToken, operationID: "registerDevice",
            tags: ["devices"], summary: "Register a push device",
            description: "Upsert on (platform, token), bound to the token's session (`sid` required). An earlier device of the same session and platform is deleted, and the pushes still owed to it (queued or being sent, not dead letters) go to the new device, keeping their push id and attempts.",
            requestBody: .json(.ref("DeviceRegistration")),
            responses: registrationResponses.merging([400: .invalidDeviceRegistration]) { _, web in web })

        static let listDevices = RouteSpec(
            .get, "/v1/me/devices", auth: .accessToken, operationID: "listDevices",
            tags: ["devices"], summary: "The caller's devices",
            responses: [
                200: .json("Every device of the user, tokens masked.", .ref("DeviceList")),
                401: .invalidToken,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let deleteDevice = RouteSpec(
            .delete, "/v1/me/devices/{id}", auth: .accessToken, operationID: "deleteDevice",
            tags: ["devices"], summary: "Delete one of the caller's devices",
            description: "Another user's device is 404 too: its existence is never revealed.",
            parameters: [
                .path("id", "The device id.", .json(#"{"type": "string", "minLength": 1}"#)),
            ],
            responses: [
                204: .content("Deleted."),
                401: .invalidToken,
                404: .notFound,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let registerLegacyDevice = RouteSpec(
            .post, "/v1/devices", auth: .accessToken, operationID: "registerLegacyDevice",
            tags: ["compatibility"], summary: "Register a device (compatibility, seed 003)",
            description: "Maps onto `POST /v1/me/devices` with provider `fcm`, or `expo` for an `ExponentPushToken[…]`/`ExpoPushToken[…]`; `device_id` is the installation id. A token registered by another installation is 403 `forbidden`, as seed 003 documents.",
            requestBody: .json(.ref("LegacyDeviceRegistration")),
            responses: [
                204: .content("Registered."),
                400: .invalidRequest,
                401: .invalidToken,
                403: .json("The access token has no `sid` (`session_required`), or the token is registered to another installation (`forbidden`, seed 003's code; nothing changes).",
                           .error(["session_required", "forbidden"])),
                409: .sessionConflict,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let deleteLegacyDevice = RouteSpec(
            .delete, "/v1/devices/{token}", auth: .accessToken, operationID: "deleteLegacyDevice",
            tags: ["compatibility"], summary: "Forget a device token (compatibility, seed 003)",
            parameters: [
                .path("token", "The push token.", .json(#"{"type": "string", "minLength": 1}"#)),
            ],
            responses: [
                204: .content("Deleted, or the caller had no such token."),
                401: .invalidToken,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let registerDeviceToken = RouteSpec(
            .post, "/v1/users/me/device-tokens", auth: .accessToken, operationID: "registerDeviceToken",
            tags: ["compatibility"], summary: "Register a device token (compatibility, seed 002)",
            description: "Maps onto `POST /v1/me/devices` with provider `expo` for an `ExponentPushToken[…]`/`ExpoPushToken[…]` (what expo-notifications gives the app), else `fcm`.",
            requestBody: .json(.ref("DeviceTokenRegistration")),
            responses: registrationResponses)

        static let deleteDeviceToken = RouteSpec(
            .delete, "/v1/users/me/device-tokens", auth: .accessToken, operationID: "deleteDeviceToken",
            tags: ["compatibility"], summary: "Forget a device token (compatibility, seed 002)",
            requestBody: .json(.ref("DeviceTokenRemoval")),
            responses: [
                204: .content("Deleted, or the caller had no such token."),
                400: .invalidRequest,
                401: .invalidToken,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])
    }
}
