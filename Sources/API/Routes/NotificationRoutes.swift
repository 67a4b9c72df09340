import Digests
import Foundation
import HeraldCore
import Realtime

/// The choke point from the app backend (NO-1), its delivery record (NO-8), the open beacon and
/// a user's reachability.
struct NotificationRoutes {
    let authenticator: Authenticator
    let configuration: APIConfiguration
    let responder: DatabaseResponder
    let notifier: Notifier
    let presence: any PresenceStore
    let push: PushService?

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.sendNotification) { context in try routes.send(context) }
        table.on(Spec.notificationDeliveries) { context in try routes.deliveries(context) }
        table.on(Spec.deliveryOpened) { context in try routes.opened(context) }
        table.on(Spec.reachability) { context in try routes.reachability(context) }
    }

    /// `POST /v1/notifications` (server key) → 201 `{notifications, live_delivered, push_queued,
    /// push_suppressed, skipped, skipped_recipients}`; 200 with `Idempotent-Replayed: true` for a
    /// repeated `idempotency_key`.
    func send(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context)
        return try submit(Self.body(context.request), app: app.rawValue)
    }

    /// The body, read in one pass by `NotificationBodyScanner`; one it leaves is decoded by
    /// `JSONDecoder`, whose errors name the field.
    /// - Throws: `HTTPError` 415 or 400, as `RequestBody.decode`.
    static func body(_ request: HTTPRequest) throws(HTTPError) -> NotificationBody {
        try RequestBody.checkContentType(request)
        // The common body in one pass, the syntax checked as it is read; any other takes the
        // check, then the scanner, then the decoder, so its 400 is theirs.
        if let body = NotificationBodyScanner.unchecked(request.body) { return body }
        // A number beyond a double is left to the scanner: in a whole-number field (`"badge":1e400`)
        // its 400 names the field; anywhere the decoder reads it, `RequestBody.decode` refuses it.
        try RequestBody.check(request, rejectNumbersBeyondDouble: false)
        if let body = try NotificationBodyScanner.scan(request.body) { return body }
        return try RequestBody.decode(NotificationBody.self, from: request)
    }

    /// Validates `body` and hands it to the notifier: the one path of `POST /v1/notifications` and
    /// of the web demo's dev-only helper (`DemoRoutes`), which has already checked its caller.
    ///
    /// - Parameter app: whose members, catalog, devices and channels the call uses (ADR 0006).
    /// - Throws: `HTTPError` 400 for a body `NotificationRequest` refuses.
    func submit(_ body: NotificationBody, app: String) throws -> RouteResult {
        let profile = notifier.profile(app)
        let request = try NotificationRequest(body: body, now: unixMilliseconds(), catalog: profile.catalog, payload: profile.payload,
                                              maxLiveDataBytes: configuration.maxDataBytes)
        // Only a call with an idempotency key is ever compared with another.
        let hash = request.idempotencyKey == nil ? "" : Self.sha256Hex(Array(request.canonicalText.utf8))
        let notifier = self.notifier
        let call = NotificationCall(app: app, recipients: request.recipients, plan: request.plan, live: request.live,
                                    idempotencyKey: request.idempotencyKey, requestHash: hash, planJSON: request.planJSON,
                                    titleJSON: request.titleJSON, bodyJSON: request.bodyJSON, argsJSON: request.argsJSON,
                                    dataJSON: request.dataJSON)
        return .deferred { writer in
            notifier.send(call) { writer.complete(Self.response($0)) }
        }
    }

    /// The HTTP answer to the notifier's: 201, 200 with `Idempotent-Replayed: true`, 202 for a
    /// call stored whose push planning is left to recovery (RL-2: never a 5xx once stored),
    /// 409/413 for a refusal, and storage failures, nothing stored, as `DatabaseResponder` maps
    /// them (503, 507).
    static func response(_ answer: NotificationAnswer) -> HTTPResponse {
        switch answer {
        case .created(let json):
            return .json(201, json)
        case .replayed(let json):
            var response = HTTPResponse.json(200, json)
            response.headers.add(name: "Idempotent-Replayed", value: "true")
            return response
        case .accepted(let json, let replayed):
            var response = HTTPResponse.json(202, json)
            if replayed { response.headers.add(name: "Idempotent-Replayed", value: "true") }
            return response
        case .refused(let refusal):
            let status = switch refusal {
            case .idempotencyKeyReused, .idempotencyInProgress: 409
            case .tooManyRecipients: 413
            }
            return HTTPError(status, refusal.code, refusal.message, field: refusal.field).response
        case .failed(let error):
            return DatabaseResponder.response(.failure(error))
        }
    }

    /// `GET /v1/notifications/{id}/deliveries` (server key): every outcome, oldest first, and
    /// the latest outcome per device and per connection.
    func deliveries(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context)
        return deliveryRecord(id: context.pathParameters["id"] ?? "", app: app.rawValue)
    }

    /// The delivery record of notification `id` (404 `not_found` when there is none, or it is
    /// another app's), for a caller already checked: the server key here, the demo user in `DemoRoutes`.
    func deliveryRecord(id: String, app: String) -> RouteResult {
        responder.read { tx in
            guard let notification = try tx.notifications.find(id: id), notification.app == app else {
                throw HTTPError(404, "not_found", "no such notification")
            }
            let entries = try tx.deliveries.list(notificationID: id)
            let planned = try tx.notifications.isPlanned(notification)
            var latest: [String: DeliveryEntry] = [:]
            var order: [String] = []
            for entry in entries {
                let key = entry.deviceID.map { "d:" + $0 } ?? entry.connectionID.map { "c:" + $0 } ?? "n:"
                if latest[key] == nil { order.append(key) }
                latest[key] = entry
            }
            let targets = order.compactMap { latest[$0] }.map { entry in
                "{" + (entry.deviceID.map { "\"device_id\":\(JSONText.quote($0))," } ?? "")
                    + (entry.connectionID.map { "\"connection_id\":\(JSONText.quote($0))," } ?? "")
                    + "\"session_id\":\(Self.shownSessionID(entry.sessionID).map(JSONText.quote) ?? "null"),\"outcome\":\"\(entry.outcome.rawValue)\","
                    + "\"at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: entry.at)))}"
            }
            return .json(200, "{\"notification_id\":\(JSONText.quote(notification.id)),\"user_id\":\(JSONText.quote(notification.userID)),"
                + "\"kind\":\(JSONText.quote(notification.kind)),\"planned\":\(planned),"
                + "\"targets\":[" + targets.joined(separator: ",") + "],"
                + "\"deliveries\":[" + entries.map(Self.json).joined(separator: ",") + "]}")
        }
    }

    /// `POST /v1/deliveries/{id}/opened` (client token): the user opened a tracked push (NO-8,
    /// seed 004). Idempotent: a second open answers 200 with `already_recorded: true`.
    func opened(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let deliveryID = context.pathParameters["id"] ?? ""
        return responder.write { tx in
            // A delivery of another app's user of the same id is not this user's (ADR 0006).
            guard let queued = try tx.deliveries.queued(deliveryID: deliveryID), queued.userID == claims.subject,
                  try tx.notifications.find(id: queued.notificationID)?.app == claims.app.rawValue else {
                throw HTTPError(404, "not_found", "no such delivery for this user")
            }
            if try tx.deliveries.exists(deliveryID: deliveryID, outcome: .opened) {
                return .json(200, "{\"delivery_id\":\(JSONText.quote(deliveryID)),\"notification_id\":\(JSONText.quote(queued.notificationID)),\"already_recorded\":true}")
            }
            try tx.deliveries.record(DeliveryEntry(
                notificationID: queued.notificationID, userID: queued.userID, deviceID: queued.deviceID, sessionID: claims.sessionID,
                outcome: .opened, deliveryID: deliveryID, at: unixMilliseconds()))
            return .json(200, "{\"delivery_id\":\(JSONText.quote(deliveryID)),\"notification_id\":\(JSONText.quote(queued.notificationID)),\"already_recorded\":false}")
        }
    }

    /// `GET /v1/users/{id}/reachability` (server key): how each session and device of the user
    /// would get a notification now — `live_foreground`, `live_background`, `push_only` or
    /// `unreachable` (with its reason: the session ended, the user's global push switch is off,
    /// or the provider has no credentials).
    func reachability(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        guard let userID = context.pathParameters["id"], ChannelName.personal(userID: userID) != nil else {
            throw HTTPError.invalid("id", "not a valid user id")
        }
        let sessions = presence.sessions(userID: Presence.userKey(app: app, userID: userID))
        let push = self.push
        return responder.read { tx in
            let devices = try tx.devices.list(app: app, userID: userID, now: unixMilliseconds())
            // NO-4: the global switch off silences every push, whatever the kind or scope.
            let pushDisabled = try tx.preferences.find(app: app, userID: userID, scope: nil)?.isEnabled == false
            var live: [String: Presence.SessionSummary] = [:]
            for session in sessions { if let sid = session.sessionID { live[sid] = session } }
            func liveState(_ session: Presence.SessionSummary) -> String { session.foreground ? "live_foreground" : "live_background" }
            var deviceSessions: Set<String> = []
            let deviceJSON = devices.map { device -> String in
                if let sid = device.sessionID { deviceSessions.insert(sid) }
                let state: String
                if let sid = device.sessionID, let session = live[sid] {
                    state = liveState(session)
                } else if device.sessionActive, !pushDisabled, push?.providers.isConfigured(storedProvider: device.provider, app: app) == true {
                    state = "push_only"
                } else {
                    state = "unreachable"
                }
                let reason: String? = state != "unreachable" ? nil
                    : !device.sessionActive ? "session_inactive" : pushDisabled ? "push_disabled" : "push_not_configured"
                return "{\"device_id\":\(JSONText.quote(device.id)),\"platform\":\(JSONText.quote(device.platform)),"
                    + "\"provider\":\(JSONText.quote(device.provider)),\"session_id\":\(Self.shownSessionID(device.sessionID).map(JSONText.quote) ?? "null"),"
                    + "\"reachability\":\"\(state)\",\"reason\":\(reason.map(JSONText.quote) ?? "null")}"
            }
            let sessionJSON = sessions.map { session in
                "{\"session_id\":\(session.sessionID.map(JSONText.quote) ?? "null"),\"reachability\":\"\(liveState(session))\","
                    + "\"connections\":\(session.connections.count),"
                    + "\"has_device\":\(session.sessionID.map { deviceSessions.contains($0) } ?? false)}"
            }
            let overall = sessions.contains { $0.foreground } ? "live_foreground"
                : !sessions.isEmpty ? "live_background"
                : deviceJSON.contains { $0.contains("\"push_only\"") } ? "push_only" : "unreachable"
            return .json(200, "{\"user_id\":\(JSONText.quote(userID)),\"reachability\":\"\(overall)\","
                + "\"sessions\":[" + sessionJSON.joined(separator: ",") + "],\"devices\":[" + deviceJSON.joined(separator: ",") + "]}")
        }
    }

    /// A session id as answers show it: the token's `sid`, or nil for the standing session a device
    /// of an app without sessions binds to (AP-5; `~{app}~{user}` inside, never shown).
    static func shownSessionID(_ sid: String?) -> String? {
        sid.flatMap { AppNamespace.split($0) == nil ? $0 : nil }
    }

    static func json(_ entry: DeliveryEntry) -> String {
        func string(_ value: String?) -> String { value.map(JSONText.quote) ?? "null" }
        return "{\"outcome\":\"\(entry.outcome.rawValue)\",\"device_id\":\(string(entry.deviceID)),\"connection_id\":\(string(entry.connectionID)),"
            + "\"session_id\":\(string(shownSessionID(entry.sessionID))),\"provider_message_id\":\(string(entry.providerMessageID)),"
            + "\"job_id\":\(entry.jobID.map { "\"\($0)\"" } ?? "null"),\"delivery_id\":\(string(entry.deliveryID)),"
            + "\"detail\":\(string(entry.detail)),\"at\":\(JSONText.quote(Timestamp.iso8601(milliseconds: entry.at)))}"
    }

    /// Lower-case hex SHA-256 (the idempotency check's request digest).
    static func sha256Hex(_ bytes: [UInt8]) -> String { Digests.SHA256.hexDigest(bytes) }
}
