import Realtime

extension PublishRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let publish = RouteSpec(
            .post, "/v1/publish", auth: .serverKey, operationID: "publish",
            tags: ["server"], summary: "Publish a message",
            description: "Answered once the event loop that took the request has written the message to a sixth of its own subscribers' streams (at least 64, or all when fewer), and every other loop that had streams to write has written a sixth of its own (at most 1 s for one): the rest of the fan-out overlaps the publisher's next message. While a loop is far behind (more than about a million writes queued and not yet sent), only once every loop has sent it. A publisher that waits for each answer therefore cannot queue messages much faster than they are written.",
            requestBody: .json(.ref("PublishMessage")),
            responses: [
                200: .json("Published.", .ref("PublishReceipt")),
                400: .invalidRequest,
                401: .unauthorized,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .json("The broker cannot take the message now (`broker_unavailable`). The message `the broker cannot be reached; nothing was published, retry shortly`: nothing was published; retry. The message `the broker did not confirm the publish; it may still reach subscribers, and a retry may deliver it twice`: its answer timed out or was lost in flight, so it may have been published.",
                           .error(["broker_unavailable"])),
            ])

        static let publishBatch = RouteSpec(
            .post, "/v1/publish/batch", auth: .serverKey, operationID: "publishBatch",
            tags: ["server"], summary: "Publish several messages",
            description: "Validated whole first: one bad message (`field` e.g. `messages[2].channel`) publishes nothing. Answered like `POST /v1/publish`: after a sixth of the fan-out on each loop, and while a loop is far behind, after every loop has written the batch.",
            requestBody: .json(.ref("PublishBatch")),
            responses: [
                200: .json("All published, receipts in order.", .ref("PublishBatchResult")),
                400: .invalidRequest,
                401: .unauthorized,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .json("The broker cannot take the message now (`broker_unavailable`). The message `the broker cannot be reached; nothing was published, retry shortly`: nothing was published; retry. The message `the broker did not confirm the publish; it may still reach subscribers, and a retry may deliver it twice`: its answer timed out or was lost in flight, so it may have been published.",
                           .error(["broker_unavailable"])),
            ])

        static let clearRetained = RouteSpec(
            .delete, "/v1/channels/{name}/retained", auth: .serverKey, operationID: "clearRetained",
            tags: ["server"], summary: "Clear a channel's retained message",
            description: "Forgets the channel's retained message (RT-6): a later subscriber is not given it. Nothing is sent to current subscribers; publish a message first if they must know. A retained message also expires by itself `HERALD_RETAINED_TTL_SECONDS` after its publish (default 86400, a day; ADR 0028).",
            parameters: [
                .path("name", "The channel.", .ref("ChannelName")),
            ],
            responses: [
                204: .content("Cleared, or the channel had no retained message."),
                400: .invalidRequest,
                401: .unauthorized,
                429: .tooManyConnections,
                503: .json("The broker cannot be reached (`broker_unavailable`). The message `the broker cannot be reached; the retained message was not cleared, retry shortly`: nothing changed. The message `the broker did not confirm the clear; it may have been cleared, retry to be sure`: its answer timed out or was lost; a retry is harmless.",
                           .error(["broker_unavailable"])),
            ])
    }
}
