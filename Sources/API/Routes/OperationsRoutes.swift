import Dispatch
import HeraldCore
import Realtime
import Synchronization

/// Health, readiness and metrics (OP-3).
struct OperationsRoutes {
    let node: RealtimeNode
    let database: any Storage
    let push: PushService?
    /// Every provider this build has an adapter for, configured or not (readiness lists them all).
    let providers: PushProviders
    let notifier: Notifier
    /// The write check `/readyz` makes, cached a short time.
    let probe: StorageProbe
    /// Stored apps that did not load (shown by `/readyz`; they do not make the node unready: the
    /// other apps are served).
    var apps: AppService?
    /// What this node's retention purge deleted (ADR 0012).
    var retention = RetentionMetrics()
    /// This node's hold on its node id (ADR 0016); nil without one.
    var nodeIdentity: NodeIdentityLease?

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.health) { _ in .response(.json(200, "{\"status\":\"ok\"}")) }
        table.on(Spec.ready) { _ in routes.readiness() }
        table.on(Spec.metrics) { _ in routes.metrics() }
    }

    /// `GET /readyz`: 200 when the database takes a write and every event loop answers; 503 with
    /// what is wrong otherwise: `storage` names why storage cannot write (`full`, `read_only`,
    /// `busy`, `stalled`, `unavailable`, `failed`; RL-2), and it flips back once a probe write succeeds.
    /// A provider whose mass-deletion guard tripped (PU-5a) is reported, and one whose recent
    /// requests all went unanswered (`ProviderHealth`: degraded, under `push` and, with its reason
    /// and since when, `push_degraded`); neither makes the node unready. A broker whose store does
    /// not answer (`HERALD_BROKER`) is a problem too: every publish would answer 503. So is another
    /// live instance holding this node's `HERALD_NODE_ID` (ADR 0016): each would take the other's jobs.
    func readiness() -> RouteResult {
        let node = self.node, probe = self.probe, push = self.push, providerIDs = providers.adapterIDs, apps = self.apps
        let identity = nodeIdentity
        return .deferred { writer in
            node.snapshot { snapshot in
                // A real write, not an empty transaction: one commits on a full disk.
                probe.check { health in
                    // The broker's check may wait for a remote store: never on the caller's thread.
                    DispatchQueue.global().async {
                        var problems: [String] = []
                        if case .notWritable(_, let detail) = health { problems.append("database not writable: \(detail)") }
                        do { try node.broker.checkReachable() } catch { problems.append("broker unreachable: \(error)") }
                        if let problem = identity?.readinessProblem { problems.append(problem) }
                        if snapshot.loopsAnswering < snapshot.loopCount {
                            problems.append("\(snapshot.loopCount - snapshot.loopsAnswering) of \(snapshot.loopCount) event loops did not answer")
                        }
                        var providers: [String] = []
                        var degraded: [(key: String, degradation: ProviderHealth.Degradation)] = []
                        for provider in providerIDs {
                            guard let push, push.providers.isConfigured(provider) else {
                                providers.append("\"\(provider)\":\"disabled\"")
                                continue
                            }
                            if let reason = push.worker.massDeletionGuard.trippedReason(provider: provider.rawValue) {
                                providers.append("\"\(provider)\":\(JSONText.quote("provider_misconfigured: " + reason))")
                            } else if let degradation = push.worker.providerHealth.degradation(provider: provider.rawValue) {
                                providers.append("\"\(provider)\":\(JSONText.quote("degraded: " + degradation.reason))")
                                degraded.append((provider.rawValue, degradation))
                            } else {
                                providers.append("\"\(provider)\":\"ok\"")
                            }
                        }
                        // Stored apps' providers only show when their guard holds (ADR 0006) or
                        // they do not answer.
                        let tripped = push?.worker.massDeletionGuard.trippedAppProviders ?? []
                        for (key, reason) in tripped {
                            providers.append("\(JSONText.quote(key)):\(JSONText.quote("provider_misconfigured: " + reason))")
                        }
                        for (key, degradation) in push?.worker.providerHealth.degradedAppProviders ?? [] where !tripped.contains(where: { $0.provider == key }) {
                            providers.append("\(JSONText.quote(key)):\(JSONText.quote("degraded: " + degradation.reason))")
                            degraded.append((key, degradation))
                        }
                        // Not a problem: live streams still serve, and a provider down everywhere
                        // (Apple's outage) must not take every node out of the balancer.
                        let degradedJSON = degraded.map { key, degradation in
                            "\(JSONText.quote(key)):{\"reason\":\(JSONText.quote(degradation.reason)),"
                                + "\"since\":\(JSONText.quote(Timestamp.iso8601(milliseconds: degradation.sinceMilliseconds))),"
                                + "\"unanswered_requests\":\(degradation.failures)}"
                        }
                        let body = "{\"status\":\"\(problems.isEmpty ? "ready" : "not_ready")\",\"loops\":\(snapshot.loopsAnswering),"
                            + "\"storage\":\"\(health.name)\","
                            + "\"problems\":\(JSONText.array(problems)),\"push\":{\(providers.joined(separator: ","))},"
                            + "\"push_degraded\":{\(degradedJSON.joined(separator: ","))},"
                            + "\"apps_not_loaded\":{" + (apps?.notLoaded ?? [:]).sorted { $0.key < $1.key }
                                .map { "\(JSONText.quote($0.key.rawValue)):\(JSONText.quote($0.value))" }.joined(separator: ",") + "}}"
                        writer.complete(.json(problems.isEmpty ? 200 : 503, body))
                    }
                }
            }
        }
    }

    /// How long `/metrics` waits for the push queue's depth: past it (a stalled database) it
    /// answers without the queue's gauges rather than with the database.
    static let depthWaitMilliseconds = 1_000

    /// `GET /metrics`: Prometheus text exposition format 0.0.4.
    func metrics() -> RouteResult {
        let node = self.node, database = self.database, push = self.push, notifier = self.notifier, providerIDs = providers.adapterIDs
        let retention = self.retention, identity = nodeIdentity
        return .deferred { writer in
            node.snapshot { snapshot in
                // Counted before this route's own read joins them.
                let waiting = (database as? BoundedStorage)?.pendingCount
                let answer = OnceWith<Result<JobQueueDepth, any Error>?> { depthResult in
                    var text = PrometheusText()
                    text.metric("herald_connections", "Open connections by kind (http, sse, websocket).", type: "gauge",
                                snapshot.connections.sorted { $0.key < $1.key }.map { (["kind": $0.key], Double($0.value)) })
                    let byState = node.presence.connectionCounts().sorted { $0.key < $1.key }.map { key, value -> ([String: String], Double) in
                        let parts = key.split(separator: "|").map(String.init)
                        return (["transport": parts[0], "state": parts.count > 1 ? parts[1] : ""], Double(value))
                    }
                    text.metric("herald_streams", "Open streams by transport and reported app state.", type: "gauge", byState)
                    let sessions = node.presence.sessionCounts()
                    text.metric("herald_sessions_live", "Sessions with a live connection.", type: "gauge", [([:], Double(sessions.live))])
                    text.metric("herald_sessions_foreground", "Live sessions in the foreground with a fresh lease.", type: "gauge",
                                [([:], Double(sessions.foreground))])
                    text.metric("herald_connections_accepted_total", "Connections accepted.", type: "counter",
                                [([:], Double(snapshot.connectionsAccepted))])
                    text.metric("herald_messages_published_total", "Messages published to channels.", type: "counter",
                                [([:], Double(node.broker.publishedCount))])
                    text.metric("herald_messages_delivered_total", "Messages written to subscribers.", type: "counter",
                                [([:], Double(snapshot.messagesDelivered))])
                    text.metric("herald_slow_consumer_disconnects_total", "Streams cut for reading too slowly.", type: "counter",
                                [([:], Double(snapshot.slowConsumerCuts))])
                    var responses: [String: UInt64] = [:]
                    for r in snapshot.responses { responses["\(r.route)\u{0}\(r.status)", default: 0] += r.count }
                    text.metric("herald_http_responses_total", "HTTP responses by route and status.", type: "counter",
                                responses.sorted { $0.key < $1.key }.map { key, count in
                                    let parts = key.split(separator: "\u{0}").map(String.init)
                                    return (["route": parts[0], "status": parts[1]], Double(count))
                                })
                    let notifications = notifier.metrics
                    text.metric("herald_notifications_total", "Notifications stored and planned (one per recipient).", type: "counter",
                                [([:], Double(notifications.stored))])
                    text.metric("herald_notifications_purged_total", "Notifications this node purged for their retention, with their delivery records.",
                                type: "counter", [([:], Double(retention.purgedNotifications))])
                    text.metric("herald_notification_targets_total", "Planning outcomes of notifications by outcome.", type: "counter",
                                ["live_delivered", "queued", "suppressed_foreground", "skipped"].map {
                                    (["outcome": $0], Double(notifications.outcomes[$0] ?? 0))
                                })
                    if case .success(let depth)? = depthResult {
                        text.metric("herald_push_jobs", "Push jobs by state.", type: "gauge",
                                    JobState.allCases.map { (["state": $0.rawValue], Double(depth.counts[$0] ?? 0)) })
                        text.metric("herald_push_queue_oldest_due_seconds", "Age of the oldest due push job.", type: "gauge",
                                    [([:], Double(depth.oldestDueAgeMilliseconds) / 1000)])
                    }
                    if let push {
                        text.metric("herald_push_results_total", "Provider answers by provider and outcome.", type: "counter",
                                    push.providers.metrics.outcomes.map { (["provider": $0.provider, "outcome": $0.outcome], Double($0.count)) })
                        text.histogram("herald_push_request_seconds", "Provider request latency.",
                                       push.providers.metrics.latency.map { ($0.provider, $0.histogram) })
                        if let backlog = push.worker.backlog {
                            // The pacing of POST /v1/notifications by this worker (HERALD_PUSH_BACKLOG_LIMIT): one
                            // figure for the node, since the worker's claims take every provider's jobs alike.
                            text.metric("herald_push_backlog", "Push jobs queued for the worker and not claimed yet (estimate).",
                                        type: "gauge", [([:], Double(backlog.depth))])
                            text.metric("herald_push_backlog_limit", "The backlog at which notification calls wait (HERALD_PUSH_BACKLOG_LIMIT).",
                                        type: "gauge", [([:], Double(backlog.limit))])
                            text.metric("herald_push_backlog_waits_total", "Batches of notification calls that waited for the worker.",
                                        type: "counter", [([:], Double(backlog.pauses))])
                        }
                        text.metric("herald_push_provider_misconfigured", "1 while the mass-deletion guard holds (PU-5a).", type: "gauge",
                                    providerIDs.map { (["provider": $0.rawValue], push.worker.massDeletionGuard.trippedReason(provider: $0.rawValue) == nil ? 0 : 1) }
                                    + push.worker.massDeletionGuard.trippedAppProviders.map { (["provider": $0.provider], 1) })
                        text.metric("herald_push_provider_degraded", "1 while the provider's recent requests all went unanswered (OP-3).",
                                    type: "gauge",
                                    providerIDs.map { (["provider": $0.rawValue], push.worker.providerHealth.degradation(provider: $0.rawValue) == nil ? 0 : 1) }
                                    + push.worker.providerHealth.degradedAppProviders.map { (["provider": $0.provider], 1) })
                    }
                    text.metric("herald_presence_sweeps_total", "Presence and broker sweeps done (every 5 s).", type: "counter",
                                [([:], Double(node.sweepsDone))])
                    if let identity {
                        text.metric("herald_node_id_conflict", "1 while another live instance holds this node's HERALD_NODE_ID (ADR 0016).",
                                    type: "gauge", [([:], identity.conflict == nil ? 0 : 1)])
                    }
                    if let waiting {
                        text.metric("herald_storage_calls_waiting", "Calls waiting on storage (answered 503 past HERALD_STORAGE_WAIT_SECONDS).",
                                    type: "gauge", [([:], Double(waiting))])
                    }
                    var response = HTTPResponse(status: 200, body: Array(text.output.utf8))
                    response.headers.add(name: "Content-Type", value: "text/plain; version=0.0.4; charset=utf-8")
                    writer.complete(response)
                }
                database.read({ tx in try tx.jobs.depth(now: unixMilliseconds()) }) { answer.run($0) }
                DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Self.depthWaitMilliseconds)) { answer.run(nil) }
            }
        }
    }
}

/// A callback that runs at most once, with the value of whichever caller comes first.
private final class OnceWith<Value: Sendable>: Sendable {
    private let ran = Atomic<Bool>(false)
    private let body: @Sendable (Value) -> Void

    init(_ body: @escaping @Sendable (Value) -> Void) { self.body = body }

    func run(_ value: Value) {
        guard !ran.exchange(true, ordering: .acquiringAndReleasing) else { return }
        body(value)
    }
}

/// Builds Prometheus text exposition (format 0.0.4).
struct PrometheusText {
    private(set) var output = ""

    mutating func metric(_ name: String, _ help: String, type: String, _ samples: [([String: String], Double)]) {
        output += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        for (labels, value) in samples { output += "\(name)\(Self.labels(labels)) \(Self.number(value))\n" }
    }

    mutating func histogram(_ name: String, _ help: String, _ series: [(String, PushMetrics.Histogram)]) {
        output += "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for (provider, h) in series {
            for (i, bound) in PushMetrics.latencyBuckets.enumerated() {
                output += "\(name)_bucket\(Self.labels(["provider": provider, "le": Self.number(bound)])) \(h.buckets[i])\n"
            }
            output += "\(name)_bucket\(Self.labels(["provider": provider, "le": "+Inf"])) \(h.count)\n"
            output += "\(name)_sum\(Self.labels(["provider": provider])) \(Self.number(h.sum))\n"
            output += "\(name)_count\(Self.labels(["provider": provider])) \(h.count)\n"
        }
    }

    private static func labels(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        let parts = labels.sorted { $0.key < $1.key }.map { key, value in
            "\(key)=\"\(escaped(value))\""
        }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// A label value as the format writes it: `\`, `"` and a line feed escaped. Most values
    /// (providers, states, bounds) have none, and are written as they are: the three
    /// `replacingOccurrences` on every value were ~8k instructions a value, ~2.4k a push of
    /// `push.py`'s `/metrics` polls (issue 17).
    static func escaped(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == 0x0A }) else { return value }
        var out = ""
        out.reserveCapacity(value.utf8.count + 8)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
