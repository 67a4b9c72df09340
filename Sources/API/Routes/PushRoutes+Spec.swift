import Realtime

extension PushRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let testPush = RouteSpec(
            .post, "/v1/me/devices/{id}/test", auth: .accessToken, operationID: "testPush",
            tags: ["devices"], summary: "Send a test push to one of the caller's devices",
            description: "A localized \"notifications are working\" push (DV-7), sent at once, bypassing the queue. Its data carry the kind `test` under the catalog's kind key; its texts, sound and priority are the catalog's `test` kind, else Herald's own, in the first language it has of the device's, the user's (`PUT /v1/users/{id}`) and the catalog's default (NO-5).",
            parameters: [
                .path("id", "The device id.", .json(#"{"type": "string", "minLength": 1}"#)),
            ],
            responses: [
                200: .json("The provider accepted the push.", .ref("TestPushResult")),
                401: .invalidToken,
                404: .shared("NotFound", description: "Not one of the caller's devices (`not_found`)."),
                410: .json("The provider rejected the token as invalid; the device was removed (`push_token_invalid`, with `reason`).", .error(["push_token_invalid"])),
                429: .tooManyConnections,
                502: .json("The provider did not accept the push (`push_provider_error`, with the provider's `reason`), or the push expired before it could be sent (`push_expired`, `reason` `expired`).", .error(["push_provider_error", "push_expired"])),
                503: .json("The device's provider has no credentials on this server (`push_not_configured`), or storage cannot take the request now (`storage_busy`, `storage_read_only`, `storage_unavailable`).",
                           .error(["push_not_configured"] + DatabaseResponder.unavailableCodes)),
                507: .storageFull,
            ])

        static let vapidPublicKey = RouteSpec(
            .get, "/v1/push/vapid-public-key", auth: .none, operationID: "vapidPublicKey",
            tags: ["devices"], summary: "The Web Push application server key",
            description: "The VAPID public key (RFC 8292) a browser of the app passes as `applicationServerKey` to `pushManager.subscribe`: 65 bytes uncompressed P-256, base64url. Public; no token needed, so `app` names the app (ADR 0006; absent: `default`, whose key is `HERALD_VAPID_*`'s).",
            parameters: [
                .query("app", "The app whose key is asked for (an app id); default `default`.", .json(#"{"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,62}$"}"#)),
            ],
            responses: [
                200: .json("Web Push is configured for the app.", .json(#"{"type": "object", "required": ["public_key"], "properties": {"public_key": {"type": "string", "pattern": "^B[A-Za-z0-9_-]{86}$", "description": "base64url, unpadded, 87 characters."}}, "additionalProperties": false}"#)),
                400: .invalidRequest,
                404: .json("The app has no VAPID key (`webpush_not_configured`), or no such app is served here (`not_found`).", .error(["webpush_not_configured", "not_found"])),
                429: .tooManyConnections,
            ])

        static let sendPush = RouteSpec(
            .post, "/v1/push", auth: .serverKey, operationID: "sendPush",
            tags: ["server"], summary: "Queue a push to a user's or to listed devices",
            requestBody: .json(.ref("PushRequest")),
            responses: [
                202: .json("One durable `push.deliver` job per device with an active session; the others are listed as skipped. A job whose device's session ends or passes its expiry before it is sent is not sent (`last_error` `session_inactive`, DV-4).", .ref("PushQueued")),
                400: .invalidRequest,
                401: .unauthorized,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .json("No push provider has credentials on this server (`push_not_configured`, checked before the body), or storage cannot take the request now (`storage_busy`, `storage_read_only`, `storage_unavailable`).",
                           .error(["push_not_configured"] + DatabaseResponder.unavailableCodes)),
                507: .storageFull,
            ])
    }
}
