import Realtime

extension OperationsRoutes {
    /// The OpenAPI operations of these routes; `register(in:)` registers each route with its spec.
    enum Spec {
        static let health = RouteSpec(
            .get, "/healthz", auth: .none, operationID: "health",
            tags: ["operations"], summary: "Liveness",
            responses: [
                200: .json("The process serves requests.", .ref("Health")),
                429: .tooManyConnections,
            ])

        static let ready = RouteSpec(
            .get, "/readyz", auth: .none, operationID: "ready",
            tags: ["operations"], summary: "Readiness",
            description: "Ready when the database takes a write (a probe write, its answer kept 1 s), every event loop answers and, with `HERALD_BROKER`, Redis answers a PING (else `broker unreachable: …` in `problems`), and, on PostgreSQL with `HERALD_NODE_ID`, no other live instance holds this node's id (else `node id '<id>' is held by another instance: host …, pid …, instance …, last heartbeat … s ago`; ADR 0016). `storage` says why storage cannot write (`full`, `read_only`, `busy`, `stalled`: no answer within 2 s, `unavailable`, `failed`); it turns `ok` again by itself once a write commits. On SQLite, `full` also follows any write refused for want of space, until a later write stores rows or the probe finds room for 64 KiB of new pages. `push` shows each provider: disabled, ok, provider_misconfigured while the mass-deletion guard holds, or degraded while its recent requests all went unanswered (timed out or failed at the transport; `push_degraded` says why and since when); a degraded provider does not make the node unready (live streams still serve, and a provider down for everyone must not take every node out of the balancer).",
            responses: [
                200: .json("Ready.", .ref("Readiness")),
                429: .tooManyConnections,
                503: .json("Not ready; `problems` says why.", .ref("Readiness")),
            ])

        static let metrics = RouteSpec(
            .get, "/metrics", auth: .none, operationID: "metrics",
            tags: ["operations"], summary: "Prometheus metrics",
            description: "Text exposition format 0.0.4: connections, streams by state, sessions, messages published and delivered, slow-consumer disconnects, HTTP responses by route and status, push jobs by state and the oldest due job's age, provider answers by outcome, provider latency histogram, providers misconfigured (`herald_push_provider_misconfigured`) and degraded (`herald_push_provider_degraded`).",
            responses: [
                200: .content("The metrics.", ["text/plain": .json(#"{"type": "string"}"#)]),
                429: .tooManyConnections,
            ])

        static let openapi = RouteSpec(
            .get, "/openapi.json", auth: .none, operationID: "openapi",
            tags: ["operations"], summary: "This document",
            responses: [
                200: .json("The OpenAPI 3.1 document of every route.", .ref("OpenAPIDocument")),
                429: .tooManyConnections,
            ])
    }
}
