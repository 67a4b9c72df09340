import HeraldCore
import Realtime

/// The delivery queue seen from the app backend (PU-5): dead letters listed and retried. Each
/// route serves the server key's app (ADR 0006): another app's jobs are not listed, and its job
/// ids are 404 `not_found`, as ids that do not exist.
struct JobRoutes {
    let authenticator: Authenticator
    let responder: DatabaseResponder

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.listJobs) { context in try routes.list(context) }
        table.on(Spec.retryJob) { context in try routes.retry(context) }
        table.on(Spec.retryDeadJobs) { context in try routes.retryDead(context) }
    }

    /// The body of `POST /v1/jobs/retry`: which dead letters to retry (all when empty).
    struct RetryDeadBody: JSONBody {
        /// Only jobs of this kind (`push.deliver`).
        let kind: String?
        /// Only jobs that died at or after this time, unix ms (e.g. when a provider outage began).
        let dead_since: Int64?
        /// Only jobs that died before this time, unix ms (e.g. when the outage ended).
        let dead_until: Int64?
        /// Only jobs for this push provider (`apns`, `fcm`, `webpush`).
        let provider: String?
        /// Only jobs whose dead-letter reason code is this (`ServiceUnavailable`, `transport_error`…).
        let reason: String?

        /// Every member: an unknown one is refused, not read as "no filter" (which would retry
        /// every dead job, e.g. for `dead_provider`, the name `GET /v1/jobs` shows).
        static let members = BodyMembers.object([("kind", .any), ("dead_since", .wholeNumber), ("dead_until", .wholeNumber),
                                                 ("provider", .any), ("reason", .any)])
    }

    /// `POST /v1/jobs/retry` (server key) → 200 `{"retried": n}`: every dead job matching the body
    /// (kind, provider, reason code, died in `[dead_since, dead_until)`) goes back to the queue with
    /// fresh attempts and retry budget, due now (after a provider outage or a credentials fix,
    /// PU-5). An empty body retries every dead job of the key's app. A bad value is a 400 naming its field.
    func retryDead(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context)
        var filter = DeadJobFilter(app: app)
        if !context.request.body.isEmpty {
            let body = try RequestBody.decode(RetryDeadBody.self, from: context.request)
            do {
                filter = try DeadJobFilter.validated(app: app, kind: body.kind, deadSince: body.dead_since, deadUntil: body.dead_until,
                                                     provider: body.provider, reason: body.reason)
            } catch {
                throw HTTPError.invalid(error.field.rawValue, error.message)
            }
        }
        let matching = filter
        return responder.write { tx in
            let retried = try tx.jobs.retryDead(matching: matching, now: unixMilliseconds())
            return .json(200, "{\"retried\":\(retried)}")
        }
    }

    /// `GET /v1/jobs?state=dead|queued|leased|done&limit=&cursor=` (server key): the key's app's
    /// jobs, newest first.
    func list(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        let request = context.request
        guard let state = JobState(rawValue: try request.queryValue("state") ?? "dead") else {
            throw HTTPError.invalid("state", "state must be queued, leased, done or dead")
        }
        let pageSize = try request.queryNumber("limit", in: 1...500, otherwise: "limit must be 1-500") ?? 50
        let beforeID = try request.queryNumber("cursor", in: 1...Int64.max, otherwise: "cursor is the next_cursor of a previous page")
        return responder.read { tx in
            let jobs = try tx.jobs.list(app: app, state: state, limit: pageSize, beforeID: beforeID)
            let next = jobs.count == pageSize ? jobs.last.map { "\"\($0.id)\"" } ?? "null" : "null"
            return .json(200, "{\"jobs\":[" + jobs.map(JobJSON.encode).joined(separator: ",") + "],\"next_cursor\":\(next)}")
        }
    }

    /// `POST /v1/jobs/{id}/retry` (server key): a dead job of the key's app goes back to the
    /// queue, due now.
    func retry(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        guard let raw = context.pathParameters["id"], let id = Int64(raw), id > 0 else {
            throw HTTPError(404, "not_found", "no such job")
        }
        return responder.write { tx in
            guard let job = try tx.jobs.find(id: id, app: app) else { throw HTTPError(404, "not_found", "no such job") }
            guard try tx.jobs.retryDead(id: id, app: app, now: unixMilliseconds()) else {
                throw HTTPError(409, "job_not_dead", "only dead jobs can be retried; this one is \(job.state.rawValue)")
            }
            let updated = try tx.jobs.find(id: id, app: app) ?? job
            return .json(200, JobJSON.encode(updated))
        }
    }
}

/// The job object of the API.
enum JobJSON {
    static func encode(_ job: JobRecord) -> String {
        "{\"id\":\"\(job.id)\",\"kind\":\(JSONText.quote(job.kind)),\"state\":\"\(job.state.rawValue)\",\"attempts\":\(job.attempts),"
            + "\"run_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: job.runAt))),"
            + "\"last_error\":\(job.lastError.map(JSONText.quote) ?? "null"),"
            + "\"created_at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: job.createdAt))),"
            + "\"dead_provider\":\(job.deadCause?.provider.map(JSONText.quote) ?? "null"),"
            + "\"dead_reason\":\(job.deadCause.map { JSONText.quote($0.reason) } ?? "null"),"
            + "\"payload\":\(job.payloadJSON)}"
    }
}
