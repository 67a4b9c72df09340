import Realtime

extension PublishRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let publish = RouteSpec(
            .post, "/v1/publish", auth: .serverKey, operationID: "publish",
            tags: ["server"], summary: "Publish a message",
            requestBody: .json(.ref("PublishMessage")),
            responses: [
                200: .json("Published.", .ref("PublishReceipt")),
                400: .invalidRequest,
                401: .unauthorized,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .json("The broker cannot take the message now (`broker_unavailable`): nothing was published; retry.",
                           .error(["broker_unavailable"])),
            ])

        static let publishBatch = RouteSpec(
            .post, "/v1/publish/batch", auth: .serverKey, operationID: "publishBatch",
            tags: ["server"], summary: "Publish several messages",
            description: "Validated whole first: one bad message (`field` e.g. `messages[2].channel`) publishes nothing.",
            requestBody: .json(.ref("PublishBatch")),
            responses: [
                200: .json("All published, receipts in order.", .ref("PublishBatchResult")),
                400: .invalidRequest,
                401: .unauthorized,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .json("The broker cannot take the message now (`broker_unavailable`): nothing was published; retry.",
                           .error(["broker_unavailable"])),
            ])
    }
}
