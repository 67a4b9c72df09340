import Realtime

extension JobRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let listJobs = RouteSpec(
            .get, "/v1/jobs", auth: .serverKey, operationID: "listJobs",
            tags: ["server"], summary: "List jobs",
            description: "Push deliveries are durable jobs (`push.deliver`, one per device), each of its device's app: the server key's app's jobs are listed. Dead letters by default.",
            parameters: [
                .query("state", "Default `dead`.", .json(#"{"type": "string", "enum": ["queued", "leased", "done", "dead"]}"#)),
                .query("limit", "Page size, 1-500; default 50.", .json(#"{"type": "integer", "minimum": 1, "maximum": 500}"#)),
                .query("cursor", "The `next_cursor` of the previous page.", .json(#"{"type": "integer", "format": "int64", "minimum": 1, "maximum": 9223372036854775807}"#)),
            ],
            responses: [
                200: .json("A page of jobs, newest first.", .ref("JobList")),
                400: .invalidRequest,
                401: .unauthorized,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let retryJob = RouteSpec(
            .post, "/v1/jobs/{id}/retry", auth: .serverKey, operationID: "retryJob",
            tags: ["server"], summary: "Retry a dead job",
            parameters: [
                .path("id", "The job id.", .json(#"{"type": "integer", "format": "int64", "minimum": 1, "maximum": 9223372036854775807}"#)),
            ],
            responses: [
                200: .json("The job, queued again with fresh attempts, due now.", .ref("Job")),
                401: .unauthorized,
                404: .shared("NotFound", description: "No such job of the server key's app (`not_found`)."),
                409: .json("The job is not dead (`job_not_dead`).", .error(["job_not_dead"])),
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])

        static let retryDeadJobs = RouteSpec(
            .post, "/v1/jobs/retry", auth: .serverKey, operationID: "retryDeadJobs",
            tags: ["server"], summary: "Retry dead jobs in bulk",
            description: "Every dead job of the server key's app matching the body goes back to the queue with fresh attempts and a fresh retry budget, due now: after a provider outage (`provider`, `reason`, `dead_since`/`dead_until` its start and end) or a credentials fix. Each filter is optional and all given must hold; an empty body retries every dead job of the app. A bad value or an unknown member is a 400 naming the field, and nothing is retried.",
            requestBody: .optionalJSON(.json(#"{"type": "object", "additionalProperties": false, "properties": {"kind": {"type": ["string", "null"], "minLength": 1, "maxLength": 64, "pattern": "^[ -~]+$", "examples": ["push.deliver"]}, "dead_since": {"type": ["integer", "null"], "format": "int64", "minimum": 0, "maximum": 9223372036854775807, "description": "Unix milliseconds: only jobs dead-lettered at or after it."}, "dead_until": {"type": ["integer", "null"], "format": "int64", "minimum": 0, "maximum": 9223372036854775807, "description": "Unix milliseconds: only jobs dead-lettered before it (at or before `dead_since`: an empty window, nothing matches)."}, "provider": {"type": ["string", "null"], "enum": ["apns", "fcm", "webpush", "expo", null], "description": "Only jobs for devices of this provider (a job's `dead_provider`)."}, "reason": {"type": ["string", "null"], "minLength": 1, "maxLength": 128, "pattern": "^[ -9;-~]+$", "examples": ["ServiceUnavailable", "UNAVAILABLE", "transport_error", "provider_misconfigured"], "description": "Only jobs with this reason code (a job's `dead_reason`: its `last_error` up to the first `:`)."}}}"#)),
            responses: [
                200: .json("How many jobs were queued again.", .json(#"{"type": "object", "required": ["retried"], "properties": {"retried": {"type": "integer", "minimum": 0}}}"#)),
                400: .invalidRequest,
                401: .unauthorized,
                413: .payloadTooLarge,
                415: .unsupportedMediaType,
                429: .tooManyConnections,
                503: .storageUnavailable,
            ])
    }
}
