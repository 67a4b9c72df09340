import Realtime

extension InboxRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let listInbox = RouteSpec(
            .get, "/v1/me/notifications", auth: .accessToken, operationID: "listInbox",
            tags: ["notifications"], summary: "The caller's inbox",
            description: "Newest first (NO-3). Notifications sent with `persist: false` are not listed. With `HERALD_NOTIFICATION_RETENTION_DAYS` set, notifications older than that are purged, read or not; a `cursor` at a purged one pages on to the older ones left.",
            parameters: [
                .query("cursor", "The `next_cursor` of the previous page.", .json(#"{"type": "integer", "format": "int64", "minimum": 1, "maximum": 9223372036854775807}"#)),
                .query("limit", "Page size, 1-100; default 20.", .json(#"{"type": "integer", "minimum": 1, "maximum": 100}"#)),
                .query("unread", "`true`: unread notifications only. Default `false`.", .json(#"{"type": "boolean"}"#)),
                .query("locale", "The language of `title`, `subtitle` and `body` (NO-5). Each text is in the first language it has of: this (else the `Accept-Language` tags by weight), then the user's language (`PUT /v1/users/{id}`); else the catalog's default.", .ref("LocaleTag")),
                .header("Accept-Language", "Read when there is no `locale`: its first tag, when it is a well-formed tag (otherwise ignored).", .json(#"{"type": "string"}"#), required: false),
            ],
            responses: [
                200: .json("A page of the inbox.", .ref("InboxPage"), headers: ##"{"Herald-Cursor": {"$ref": "#/components/headers/HeraldCursor"}}"##),
                400: .invalidRequest,
                401: .invalidToken,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let unreadCount = RouteSpec(
            .get, "/v1/me/notifications/unread-count", auth: .accessToken, operationID: "unreadCount",
            tags: ["notifications"], summary: "The caller's unread count",
            responses: [
                200: .json("Unread notifications in the inbox.", .ref("UnreadCount"), headers: ##"{"Herald-Cursor": {"$ref": "#/components/headers/HeraldCursor"}}"##),
                401: .invalidToken,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let markRead = RouteSpec(
            .post, "/v1/me/notifications/{id}/read", auth: .accessToken, operationID: "markRead",
            tags: ["notifications"], summary: "Mark one notification read",
            description: "The first time, `notification.read` `{\"ids\":[id],\"unread_count\":n}` is published on `user:{sub}` so the user's other sessions update; marking again keeps the first `read_at` and publishes nothing.",
            parameters: [
                .shared("NotificationID"),
            ],
            responses: [
                200: .json("Read.", .ref("NotificationRead")),
                401: .invalidToken,
                404: .shared("NotFound", description: "Not one of the caller's notifications (`not_found`): another user's is never revealed."),
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let markAllRead = RouteSpec(
            .post, "/v1/me/notifications/read-all", auth: .accessToken, operationID: "markAllRead",
            tags: ["notifications"], summary: "Mark every notification read",
            description: "When any was unread, `notification.read` `{\"all\":true,\"unread_count\":0}` is published on `user:{sub}`. No body.",
            responses: [
                200: .json("All read.", .ref("NotificationsReadAll")),
                401: .invalidToken,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])
    }
}
