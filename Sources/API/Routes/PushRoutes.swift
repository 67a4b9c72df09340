import Foundation
import HeraldCore
import Realtime

/// Push sending from the API: the device test push (DV-7) and `POST /v1/push`, which queues one
/// durable `push.deliver` job per device (PU-5).
struct PushRoutes {
    let authenticator: Authenticator
    let responder: DatabaseResponder
    let push: PushService?
    /// Each app's profile: its catalog gives the test push's kind key and texts; its payload
    /// options where test and direct pushes carry their data (AP-4).
    let notifier: Notifier

    /// `POST /v1/push` body: whom, and what.
    struct SendBody: JSONBody, Equatable {
        let user_id: String?
        let device_ids: [String]?
        let notification: NotificationBody

        static let members = BodyMembers.object([("user_id", .any), ("device_ids", .any), ("notification", NotificationBody.members)])
    }

    struct NotificationBody: Decodable, Equatable {
        let kind: String?
        let title: String?
        let subtitle: String?
        let body: String?
        let sound: String?
        let badge: Int?
        let data: [String: String]?
        let priority: String?
        let ttl_seconds: Int?
        let collapse_key: String?
        let thread_id: String?
        let android_channel_id: String?

        static let members = BodyMembers.object(["kind", "title", "subtitle", "body", "sound", "badge", "data", "priority",
                                                 "ttl_seconds", "collapse_key", "thread_id", "android_channel_id"].map { name in
            (name, name == "badge" || name == "ttl_seconds" ? .wholeNumber : .any)
        })
    }

    func register(in table: inout RouteTable) {
        let routes = self
        table.on(Spec.testPush) { context in try routes.testPush(context) }
        table.on(Spec.sendPush) { context in try routes.send(context) }
        table.on(Spec.vapidPublicKey) { context in try routes.vapidKey(context) }
    }

    /// `GET /v1/push/vapid-public-key[?app=]`: the key a browser of the app subscribes with
    /// (`applicationServerKey`, RFC 8292 §3.2). Public by nature, so no token is needed, and the
    /// app is named by `?app=` (ADR 0006; absent: `default`).
    /// - Throws: 400 for an `app` that is not an app id; 404 `not_found` for an app not served here;
    ///   404 `webpush_not_configured` when the app has no VAPID key.
    func vapidKey(_ context: RequestContext) throws(HTTPError) -> RouteResult {
        var id = AppID.default
        if let raw = try context.request.queryValue("app") {
            guard let named = AppID(raw) else { throw HTTPError.invalid("app", "an app id is 1-63 characters of a-z 0-9 -, not starting with -") }
            id = named
        }
        guard let app = authenticator.apps.app(id) else { throw HTTPError(404, "not_found", "no app \(id) on this server") }
        guard let key = app.webPushPublicKey else {
            throw HTTPError(404, "webpush_not_configured", id.isDefault
                ? "Web Push is not configured on this server (HERALD_VAPID_PRIVATE_KEY, HERALD_VAPID_SUBJECT)"
                : "app \(id) has no Web Push key (push.webpush)")
        }
        return .response(.json(200, "{\"public_key\":\(JSONText.quote(key))}"))
    }

    /// `POST /v1/me/devices/{id}/test`: a localized test push (`TestPush`), sent now, bypassing the queue.
    func testPush(_ context: RequestContext) throws -> RouteResult {
        let claims = try authenticator.client(context, now: unixSeconds())
        let id = context.pathParameters["id"] ?? ""
        let push = self.push, profile = notifier.profile(claims.app.rawValue)
        let database = responder.database
        return .deferred { writer in
            database.read({ tx -> (DeviceRecord, String?)? in
                guard let device = try tx.devices.find(id: id, now: unixMilliseconds()) else { return nil }
                // The user's profile language, for texts the device's language lacks (NO-5, seed 000).
                return (device, try tx.users.find(app: device.app, userID: device.userID)?.locale)
            }) { result in
                guard case .success(let found) = result, let (device, userLocale) = found, device.userID == claims.subject,
                      device.app == claims.app.rawValue else {
                    if case .failure(let error) = result { return writer.complete(DatabaseResponder.response(.failure(error))) }
                    return writer.complete(.error(404, code: "not_found", message: "no such device"))
                }
                guard let push, let provider = PushProviderID(rawValue: device.provider),
                      push.providers.configuredIDs(app: device.app).contains(provider) else {
                    return writer.complete(.error(503, code: "push_not_configured",
                                                  message: "\(device.provider) has no credentials on this server"))
                }
                var notification = TestPush.notification(catalog: profile.catalog, deviceLocale: device.locale, userLocale: userLocale)
                notification.rootKey = profile.payload.rootKey
                let target = PushTarget(provider: provider, token: device.token, environment: device.environment)
                push.providers.send(notification, to: target, pushID: .random(), app: device.app) { classification in
                    // A request like the worker's: it tells whether the provider answers (ADR 0015).
                    push.worker.noteHealth(provider: provider, app: device.app, classification)
                    switch classification.outcome {
                    case .delivered(let messageID):
                        writer.complete(.json(200, "{\"device_id\":\(JSONText.quote(device.id)),\"provider\":\(JSONText.quote(device.provider)),"
                            + "\"provider_message_id\":\(messageID.map(JSONText.quote) ?? "null")}"))
                    case .deleteDevice(let reason, let timestamp):
                        database.write({ tx in
                            try tx.devices.deleteInvalid(id: device.id, invalidSince: timestamp)
                        }) { result in
                            // The device could not be removed: say so by the storage's meaning, not 410.
                            if case .failure(let error) = result { return writer.complete(DatabaseResponder.response(.failure(error))) }
                            if case .success(false) = result {
                                // Registered again after the provider's verdict (PU-5c): kept, so not "invalid".
                                return writer.complete(.error(502, code: "push_provider_error",
                                                              message: "the provider rejected a token this device has since replaced: \(reason)",
                                                              extra: [("reason", reason)]))
                            }
                            writer.complete(.error(410, code: "push_token_invalid", message: "the provider rejected this device's token; it was removed",
                                                   extra: [("reason", reason)]))
                        }
                    case .expired:
                        // NO-2: expired before it could be sent (a refused credential was renewed
                        // meanwhile): nothing reached the device, and no provider refused it.
                        writer.complete(.error(502, code: "push_expired", message: "the push expired before it could be sent",
                                               extra: [("reason", "expired")]))
                    case .retry(_, let reason), .refreshAuthAndRetryOnce(let reason), .notSent(_, let reason), .busy(let reason),
                         .deadLetter(let reason):
                        // The reason goes in `reason`: `error` is the code in Herald's one error shape.
                        writer.complete(.error(502, code: "push_provider_error", message: "the provider did not accept the push: \(reason)",
                                               extra: [("reason", reason)]))
                    }
                }
            }
        }
    }

    /// `POST /v1/push` (server key): one job per device of `user_id` (devices of live sessions
    /// only) or per listed device → 202 with the job ids.
    func send(_ context: RequestContext) throws -> RouteResult {
        let app = try authenticator.server(context).rawValue
        guard let push else {
            throw HTTPError(503, "push_not_configured", "no push provider has credentials on this server")
        }
        let body = try Self.body(context.request)
        guard (body.user_id == nil) != (body.device_ids == nil) else {
            throw HTTPError.invalid("user_id", "give exactly one of user_id and device_ids")
        }
        if let ids = body.device_ids, ids.isEmpty || ids.count > 1000 {
            throw HTTPError.invalid("device_ids", "device_ids must hold 1 to 1000 ids")
        }
        var direct = try Self.notification(body.notification)
        direct.rootKey = notifier.profile(app).payload.rootKey
        // One id for the call's pushes: a resent one replaces its first copy on the device, and
        // every device's push stays one notification for the body caches (ADR 0020).
        direct.notificationID = Notifier.newID("push", now: unixMilliseconds())
        let notification = direct
        let userID = body.user_id, deviceIDs = body.device_ids
        let worker = push.worker
        return responder.write { tx in
            let now = unixMilliseconds()
            var devices: [DeviceRecord] = []
            var skipped: [String] = []
            if let userID {
                devices = try tx.devices.list(app: app, userID: userID, now: now)
            } else {
                let ids = deviceIDs ?? []
                // One statement for every id (issue 17: one lookup per id was ~40k instructions a push;
                // the store finds an id given twice once). Found devices by position, not copied into
                // a dictionary and out again (a device's copy retains and releases its dozen strings).
                let rows = try tx.devices.find(ids: ids, now: now)
                // Sized once: growing it as it filled was ~1.5k instructions a push. An id's entry
                // becomes `used` once it has its answer, so an id given twice gets one job (or one
                // `not_found`) with no set of seen ids beside it (issue 17: ~0.7k a push).
                let used = -1
                var found = [String: Int](minimumCapacity: rows.count)
                for index in rows.indices { found[rows[index].id] = index }
                devices.reserveCapacity(rows.count)
                for id in ids {
                    if let slot = found.index(forKey: id) {
                        let index = found.values[slot]
                        if index == used { continue }
                        found.values[slot] = used
                        if rows[index].app == app {  // another app's device is not found (AP-3)
                            devices.append(rows[index])
                            continue
                        }
                    } else {
                        found[id] = used
                    }
                    skipped.append("{\"device_id\":\(JSONText.quote(id)),\"reason\":\"not_found\"}")
                }
            }
            // The answer's `jobs` items written into one byte buffer (issue 17: a string per job,
            // then joined, was ~5k instructions a push; `String` appends, ~1.5k).
            var jobs = JSONWriter(capacity: devices.count * 80)
            var queued = 0
            // NO-4: the user's global switch off silences every push, direct ones too. Every
            // user's switch in one call (issue 17: one look-up per user was ~8k instructions a
            // push when each device is another user's), repeats left to the store: it needs
            // them only when the app has any user with the switch off.
            var users: [String] = []
            users.reserveCapacity(devices.count)
            // By index: `for device in devices` copied each device.
            for index in devices.indices where devices[index].sessionActive {
                users.append(devices[index].userID)
            }
            let switchedOff = try tx.preferences.switchedOff(app: app, userIDs: users)
            // One hand-over for the call's jobs: one end action and one hop to the worker after
            // the commit, not one of each per job (issue 17: ~1.7k instructions a push).
            let handoff = devices.isEmpty ? nil : worker.handoff(in: tx)
            for index in devices.indices {
                guard devices[index].sessionActive else {
                    skipped.append("{\"device_id\":\(JSONText.quote(devices[index].id)),\"reason\":\"session_inactive\"}")
                    continue
                }
                if switchedOff.contains(devices[index].userID) {
                    skipped.append("{\"device_id\":\(JSONText.quote(devices[index].id)),\"reason\":\"push_disabled\"}")
                    continue
                }
                // Its user too: a device whose token moved to another user by its send does not get it (DV-1).
                let payload = DeliveryJobPayload(deviceID: devices[index].id, apnsID: .random(), notification: notification,
                                                 userID: devices[index].userID)
                // Leased to this node's worker at insert when it has room (ADR 0007).
                let jobID = try worker.enqueue(payload, device: devices[index], app: app, runAt: now, now: now, in: tx, handoff: handoff)
                jobs.raw(queued == 0 ? "{\"job_id\":\"" : ",{\"job_id\":\"")
                jobs.number(jobID)
                jobs.raw("\",\"device_id\":")
                jobs.quoted(devices[index].id)
                jobs.raw("}")
                queued += 1
            }
            // The worker's claim is a write too: queued behind this one, it sees these jobs.
            worker.wake()
            return .json(202, "{\"queued\":\(queued),\"jobs\":[" + jobs.text + "],\"skipped\":["
                + skipped.joined(separator: ",") + "]}")
        }
    }

    /// The body, read in one pass by `PushBodyScanner`; one it leaves is decoded by `JSONDecoder`,
    /// whose errors name the field.
    /// - Throws: `HTTPError` 415 or 400, as `RequestBody.decode`.
    static func body(_ request: HTTPRequest) throws(HTTPError) -> SendBody {
        try RequestBody.check(request)
        if let body = PushBodyScanner.scan(request.body) { return body }
        return try RequestBody.decode(SendBody.self, from: request)
    }

    /// The `notification` of `POST /v1/push`, checked.
    /// - Throws: `HTTPError` 400 naming the member (`notification.priority`, …) it refuses.
    static func notification(_ body: NotificationBody) throws(HTTPError) -> PushNotification {
        let kind: PushNotification.Kind
        switch body.kind ?? "alert" {
        case "alert": kind = .alert
        case "wakeup": kind = .wakeup
        default: throw HTTPError.invalid("notification.kind", "kind must be alert or wakeup")
        }
        let priority: PushNotification.Priority
        switch body.priority ?? (kind == .wakeup ? "high" : "normal") {
        case "normal": priority = .normal
        case "high": priority = .high
        case "urgent": priority = .urgent
        default: throw HTTPError.invalid("notification.priority", "priority must be normal, high or urgent")
        }
        if kind == .alert, body.title == nil, body.body == nil {
            throw HTTPError.invalid("notification.body", "an alert needs a title or a body")
        }
        if let ttl = body.ttl_seconds, !(0...2_419_200).contains(ttl) {
            throw HTTPError.invalid("notification.ttl_seconds", "ttl_seconds must be 0 to 2419200 (28 days)")
        }
        if let key = body.collapse_key, key.unicodeScalars.count > 64 || !NotificationRenderer.isSendableCollapseKey(key) {
            throw HTTPError.invalid("notification.collapse_key", "collapse_key is at most 64 characters, without control characters or a space "
                                    + "at either end (it is sent as the apns-collapse-id header)")
        }
        try NotificationRequest.checkPushNames(thread: body.thread_id, sound: body.sound, channel: body.android_channel_id,
                                               prefix: "notification.")
        return PushNotification(kind: kind, title: body.title, subtitle: body.subtitle, body: body.body, sound: body.sound,
                                badge: body.badge, threadID: body.thread_id, collapseKey: body.collapse_key.map(NotificationRenderer.fitCollapseKey), data: body.data ?? [:],
                                priority: priority, ttlSeconds: body.ttl_seconds, androidChannelID: body.android_channel_id)
    }
}
