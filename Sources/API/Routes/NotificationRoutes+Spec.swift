import Realtime

extension NotificationRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let sendNotification = RouteSpec(
            .post, "/v1/notifications", auth: .serverKey, operationID: "sendNotification",
            tags: ["notifications"], summary: "Send a notification (the choke point)",
            description: "For every recipient: stores the notification (the inbox, unless `persist` is false), publishes `notification.created` `{\"id\",\"kind\",\"scope\"}` on `user:{id}`, then plans a push per device of the user (NO-1, NO-2): skipped when the session ended or expired, the audience is excluded, the preferences turn the kind off or `push.policy` is `never`; suppressed when a foreground connection of the device's session received the event (`auto`); otherwise one `push.deliver` job (after `ack_window_ms` for `unless_acked`). The whole body is validated before anything is stored.",
            requestBody: .json(.ref("NotificationRequest")),
            responses: [
                200: .json("The same `idempotency_key` and the same body within 24 h: the first call's answer again; nothing is stored or sent twice.", .ref("NotificationSent"), headers: #"""
                    {
                      "Idempotent-Replayed": {
                        "required": true,
                        "description": "Marks a replayed answer.",
                        "schema": {"type": "string", "const": "true"}
                      }
                    }
                    """#),
                201: .json("Stored, broadcast and planned.", .ref("NotificationSent"), links: #"""
                    {
                      "Deliveries": {
                        "operationId": "notificationDeliveries",
                        "parameters": {"id": "$response.body#/notifications/0/id"},
                        "description": "The first notification's delivery record."
                      }
                    }
                    """#),
                202: .json("Stored (and broadcast when `event_id` is set), but the pushes could not be planned now (storage failed after the notifications were stored): `push_planning` is `deferred`, the counts are 0, and recovery plans the pushes within 30 s of storage working again. A repeat with the same `idempotency_key` answers this again (with `Idempotent-Replayed: true`) until then, and the planned answer after. Never a 5xx for a call that was stored (RL-2).", .ref("NotificationSent"), headers: #"""
                    {
                      "Idempotent-Replayed": {
                        "required": false,
                        "description": "Present on a repeat of the call with its `idempotency_key`.",
                        "schema": {"type": "string", "const": "true"}
                      }
                    }
                    """#),
                400: .invalidRequest,
                401: .unauthorized,
                409: .json("The `idempotency_key` was used with a different body in the last 24 h (`idempotency_key_reused`), or a call with it is still being processed by a live node (`idempotency_in_progress`; retry shortly: a node that died holds it no longer, ADR 0023). A call that reached nobody is final when stored: its repeat is never 409 `idempotency_in_progress`.", .error(["idempotency_key_reused", "idempotency_in_progress"])),
                413: .json("The body is over `HERALD_MAX_BODY_BYTES`, `data` is over 2048 bytes or `live.data` over `HERALD_MAX_DATA_BYTES` as compact JSON (`payload_too_large`, with `field`), or a scope rule reaches more than 10000 members (`too_many_recipients`).", .error(["payload_too_large", "too_many_recipients"])),
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let notificationDeliveries = RouteSpec(
            .get, "/v1/notifications/{id}/deliveries", auth: .serverKey, operationID: "notificationDeliveries",
            tags: ["notifications"], summary: "A notification's delivery record",
            description: "Every outcome per device and per live connection, oldest first, and the latest outcome of each (NO-8). A notification purged for its retention (`HERALD_NOTIFICATION_RETENTION_DAYS`, off by default; ADR 0012) is 404, its record gone with it.",
            parameters: [
                .shared("NotificationID"),
            ],
            responses: [
                200: .json("The record.", .ref("NotificationDeliveries")),
                401: .unauthorized,
                404: .notFound,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let deliveryOpened = RouteSpec(
            .post, "/v1/deliveries/{id}/opened", auth: .accessToken, operationID: "deliveryOpened",
            tags: ["notifications"], summary: "Record that the user opened a tracked push",
            description: "The open beacon (NO-8, seed 004): the `delivery_id` a push carries in its data when the call set `track_opens`. Idempotent.",
            parameters: [
                .path("id", "The push's `delivery_id`.", .json(#"{"type": "string", "minLength": 1}"#)),
            ],
            responses: [
                200: .json("Recorded, or recorded before (`already_recorded`).", .ref("DeliveryOpened")),
                401: .invalidToken,
                404: .shared("NotFound", description: "No such delivery for the caller (`not_found`): another user's is never revealed."),
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let reachability = RouteSpec(
            .get, "/v1/users/{id}/reachability", auth: .serverKey, operationID: "reachability",
            tags: ["notifications"], summary: "How a notification would reach a user now",
            description: "Per live session and per device: `live_foreground`, `live_background`, `push_only` (an active session, the user's global push switch on, and a provider with credentials) or `unreachable` (each device says why).",
            parameters: [
                .shared("UserIDPath"),
            ],
            responses: [
                200: .json("The user's reachability (an unknown user is `unreachable`).", .ref("Reachability")),
                400: .invalidRequest,
                401: .unauthorized,
                404: .notFound,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])
    }
}
