import Realtime

extension MemberRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let listMembers = RouteSpec(
            .get, "/v1/scopes/{scope}/members", auth: .serverKey, operationID: "listMembers",
            tags: ["notifications"], summary: "A scope's members",
            description: "By user id (NO-6).",
            parameters: [
                .shared("ScopePath"),
                .query("cursor", "The `next_cursor` of the previous page (members after this user id); anything that is not a user id is 400 `cursor`.", .json(##"{"$ref": "#/components/schemas/UserID"}"##)),
                .query("limit", "Page size, 1-1000; default 100.", .json(#"{"type": "integer", "minimum": 1, "maximum": 1000}"#)),
            ],
            responses: [
                200: .json("A page of members (an unknown scope has none).", .ref("MemberList")),
                400: .invalidRequest,
                401: .unauthorized,
                404: .notFound,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let putMember = RouteSpec(
            .put, "/v1/scopes/{scope}/members/{user_id}", auth: .serverKey, operationID: "putMember",
            tags: ["notifications"], summary: "Add or update a member of a scope",
            description: "Replaces the member's permissions (NO-6); the recipient rules and `available_events` read them.",
            parameters: [
                .shared("ScopePath"),
                .shared("MemberUserID"),
            ],
            requestBody: .json(.ref("MemberUpdate")),
            responses: [
                200: .json("An existing member, updated.", .ref("Member")),
                201: .json("A new member.", .ref("Member")),
                400: .invalidRequest,
                401: .unauthorized,
                404: .notFound,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let deleteMember = RouteSpec(
            .delete, "/v1/scopes/{scope}/members/{user_id}", auth: .serverKey, operationID: "deleteMember",
            tags: ["notifications"], summary: "Remove a member from a scope",
            parameters: [
                .shared("ScopePath"),
                .shared("MemberUserID"),
            ],
            responses: [
                204: .content("Removed."),
                400: .invalidRequest,
                401: .unauthorized,
                404: .notFound,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])
    }
}
