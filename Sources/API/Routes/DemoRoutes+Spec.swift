import Realtime

extension DemoRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let demoRoot = RouteSpec(
            .get, "/", auth: .none, operationID: "demoRoot",
            tags: ["dev"], summary: "The web demo (dev mode only)",
            description: "Only when `HERALD_DEV=1`: `index.html` of `HERALD_WEB_DEMO_DIR`. Otherwise 404.",
            responses: [
                200: .content("The demo page (`Cache-Control: no-cache`).", ["text/html": .json(#"{"type": "string"}"#)]),
                404: .notFound,
                429: .tooManyConnections,
            ])

        static let demoIndex = RouteSpec(
            .get, "/demo/", auth: .none, operationID: "demoIndex",
            tags: ["dev"], summary: "The web demo (dev mode only)",
            description: "`GET /demo/` (with or without the slash): the same page as `GET /`.",
            responses: [
                200: .content("The demo page (`Cache-Control: no-cache`).", ["text/html": .json(#"{"type": "string"}"#)]),
                404: .notFound,
                429: .tooManyConnections,
            ])

        static let demoFile = RouteSpec(
            .get, "/demo/{file}", auth: .none, operationID: "demoFile",
            tags: ["dev"], summary: "A file of the web demo (dev mode only)",
            description: "A plain file name of `HERALD_WEB_DEMO_DIR` (no directories) with a known extension: html, js, mjs, css, json, svg, png, ico, txt. Anything else is 404.",
            parameters: [
                .path("file", "The file name, e.g. `herald-client.js`.", .json(#"{"type": "string", "minLength": 1, "maxLength": 100}"#)),
            ],
            responses: [
                200: .content("The file, typed by its extension (`Cache-Control: no-cache`).", ["text/html": .json(#"{"type": "string"}"#), "text/javascript": .json(#"{"type": "string"}"#), "text/css": .json(#"{"type": "string"}"#), "application/json": nil, "image/svg+xml": .json(#"{"type": "string"}"#), "image/png": .json(#"{"type": "string", "contentMediaType": "image/png"}"#), "image/x-icon": .json(#"{"type": "string", "contentMediaType": "image/x-icon"}"#), "text/plain": .json(#"{"type": "string"}"#)]),
                404: .notFound,
                429: .tooManyConnections,
            ])

        static let devSendNotification = RouteSpec(
            .post, "/v1/dev/notifications", auth: .accessToken, operationID: "devSendNotification",
            tags: ["dev"], summary: "Send a notification as the app backend would (dev mode only)",
            description: "The demo page's stand-in for `POST /v1/notifications`, which needs the server key a browser must never hold. Takes the same body and answers the same way; `recipients` defaults to the caller.",
            requestBody: .json(.json(#"""
            {
              "type": "object",
              "description": "The `POST /v1/notifications` body; `recipients` may be left out (then the caller).",
              "required": ["kind"],
              "properties": {
                "recipients": {"type": "object"},
                "kind": {"type": "string", "pattern": "^[A-Za-z0-9_.:-]{1,64}$"},
                "title": {"type": ["string", "object"]},
                "body": {"type": ["string", "object"]},
                "data": {"type": "object", "additionalProperties": {"type": "string"}},
                "priority": {"type": "string", "enum": ["normal", "high", "urgent"]},
                "persist": {"type": "boolean"},
                "live": {"type": "object"},
                "push": {"type": "object"},
                "idempotency_key": {"type": "string", "minLength": 1, "maxLength": 255}
              }
            }
            """#)),
            responses: [
                200: .json("A repeated `idempotency_key`: the first answer again, with `Idempotent-Replayed: true`.", .json(#"{"type": "object"}"#), headers: #"{"Idempotent-Replayed": {"schema": {"type": "string", "const": "true"}}}"#),
                201: .json("Stored, published and planned per device (as `POST /v1/notifications`).", .json(#"""
                    {
                      "type": "object",
                      "required": [
                        "notifications",
                        "live_delivered",
                        "push_queued",
                        "push_suppressed",
                        "skipped",
                        "skipped_recipients"
                      ],
                      "properties": {
                        "notifications": {
                          "type": "array",
                          "items": {
                            "type": "object",
                            "required": ["id", "user_id", "event_id"],
                            "properties": {
                              "id": {"type": "string"},
                              "user_id": {"type": "string"},
                              "event_id": {"type": ["string", "null"]}
                            }
                          }
                        },
                        "live_delivered": {"type": "integer", "minimum": 0},
                        "push_queued": {"type": "integer", "minimum": 0},
                        "push_suppressed": {"type": "integer", "minimum": 0},
                        "skipped": {"type": "integer", "minimum": 0},
                        "skipped_recipients": {
                          "type": "array",
                          "items": {
                            "type": "object",
                            "required": ["user_id", "reason"],
                            "properties": {"user_id": {"type": "string"}, "reason": {"type": "string"}}
                          }
                        }
                      }
                    }
                    """#)),
                202: .json("Stored but its pushes not planned yet (`push_planning: deferred`; as `POST /v1/notifications`).", .json(#"{"type": "object"}"#),
                           headers: #"{"Idempotent-Replayed": {"schema": {"type": "string", "const": "true"}}}"#),
                400: .invalidRequest,
                401: .invalidToken,
                409: .json("The `idempotency_key` was used with another body (`idempotency_key_reused`) or is still in flight (`idempotency_in_progress`).", .ref("Error")),
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let devNotificationDeliveries = RouteSpec(
            .get, "/v1/dev/notifications/{id}/deliveries", auth: .accessToken, operationID: "devNotificationDeliveries",
            tags: ["dev"], summary: "A notification's delivery record (dev mode only)",
            description: "The answer of `GET /v1/notifications/{id}/deliveries`, for the demo page: every outcome oldest first (`live_delivered`, `suppressed_foreground`, `queued`, `sent`, `failed`, …) and the latest per device and connection.",
            parameters: [
                .path("id", "The notification id.", .json(#"{"type": "string", "minLength": 1}"#)),
            ],
            responses: [
                200: .json("The record.", .json(#"""
                    {
                      "type": "object",
                      "required": ["notification_id", "user_id", "kind", "planned", "targets", "deliveries"],
                      "properties": {
                        "notification_id": {"type": "string"},
                        "user_id": {"type": "string"},
                        "kind": {"type": "string"},
                        "planned": {"type": "boolean"},
                        "targets": {
                          "type": "array",
                          "items": {"type": "object", "required": ["session_id", "outcome", "at"]}
                        },
                        "deliveries": {"type": "array", "items": {"type": "object", "required": ["outcome", "at"]}}
                      }
                    }
                    """#)),
                401: .invalidToken,
                404: .notFound,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let devChannelPresence = RouteSpec(
            .get, "/v1/dev/channels/{name}/presence", auth: .accessToken, operationID: "devChannelPresence",
            tags: ["dev"], summary: "Who is connected to a channel (dev mode only)",
            description: "The answer of `GET /v1/channels/{name}/presence`, for the demo page.",
            parameters: [
                .path("name", "The channel.", .ref("ChannelName")),
            ],
            responses: [
                200: .json("The channel's connections, by user and session.", .ref("ChannelPresence")),
                400: .invalidRequest,
                401: .invalidToken,
                404: .notFound,
                429: .tooManyConnections,
            ])

        static let devPushDoubleRequests = RouteSpec(
            .get, "/v1/dev/push-double/requests", auth: .accessToken, operationID: "devPushDoubleRequests",
            tags: ["dev"], summary: "What the provider double received (local push demo only)",
            description: "With `HERALD_DEMO_PUSH=1 scripts/run`, Herald pushes to a local APNs/FCM double (Tests/ProviderDouble); this is its request log: per request `seq`, `provider`, `path`, `headers`, `body` (the payload), `jwt` (decoded), `status`, `outcome`, `notes`.",
            parameters: [
                .query("since", "Only requests after this `seq`.", .json(#"{"type": "integer", "minimum": 0}"#)),
                .query("provider", "Comma-separated `apns`, `fcm`, `oauth` (default `apns,fcm`).", .json(#"{"type": "string", "pattern": "^(apns|fcm|oauth)(,(apns|fcm|oauth))*$"}"#)),
            ],
            responses: [
                200: .json("The log, oldest first.", .json(#"""
                    {
                      "type": "object",
                      "required": ["requests"],
                      "properties": {
                        "requests": {
                          "type": "array",
                          "items": {"type": "object", "required": ["seq", "provider", "path", "headers"]}
                        }
                      },
                      "additionalProperties": false
                    }
                    """#)),
                400: .invalidRequest,
                401: .invalidToken,
                404: .json("The local push demo is not running (`push_demo_off`).", .error(["push_demo_off", "not_found"])),
                429: .tooManyConnections,
                502: .json("The provider double did not answer (`push_double_unreachable`).", .ref("Error")),
            ])

        /// Every route here: documented even when dev mode is off and they are not served.
        static let all = [demoRoot, demoIndex, demoFile, devSendNotification, devNotificationDeliveries, devChannelPresence, devPushDoubleRequests]
    }
}
