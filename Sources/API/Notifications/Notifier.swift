import Foundation
import HeraldCore
import PushBridge
import Realtime
import Storage
import Synchronization

/// The one choke point (NO-1, NO-2): stores a notification per recipient, broadcasts its
/// invalidation event on `user:{id}`, then plans pushes — only to devices whose session did not
/// see the event live in the foreground. Never both, never neither:
///
/// 1. one writer transaction stores the rows and the call's plan (a `PendingPlan`), and reserves
///    the idempotency key;
/// 2. after the commit, the events are published (so a reader who took `Herald-Cursor` before its
///    GET either sees the row or gets the event);
/// 3. once every loop has written what was queued before (`afterPendingDeliveries`), presence says
///    which connections received each event;
/// 4. a second transaction decides per device, enqueues `push.deliver` jobs, writes the delivery
///    record and the live event's cursor, and deletes the plan.
///
/// A crash between 1 and 4 leaves the plan; `recover()` (at start and periodically) re-broadcasts
/// and plans those calls, so a stored notification is never left unpushed.
public final class Notifier: Sendable {
    private let database: Database
    private let node: RealtimeNode
    private let push: PushService?
    let catalog: NotificationCatalog
    private let planner: PushPlanner
    private let renderer: NotificationRenderer
    private let recovery = DispatchQueue(label: "herald.notifier.recovery")
    /// Where a batch goes after its storing commit, so the writer's queue only runs SQL.
    private let afterCommit = DispatchQueue(label: "herald.notifier.after-commit")
    /// Since start: notifications stored, and planning outcomes by name (`/metrics`).
    private let counts = Mutex<(stored: Int, outcomes: [String: Int])>((0, [:]))
    /// Resumed at once with no schedule (a source released while suspended crashes Dispatch);
    /// `start` schedules it. Dispatch sources are thread-safe.
    nonisolated(unsafe) private let timer: any DispatchSourceTimer

    /// How long an idempotency key answers with its first result (NO-1: 24 h).
    static let idempotencyWindowMilliseconds: Int64 = 24 * 3600 * 1000
    /// Most members a scope rule may reach in one call.
    static let maxScopeRecipients = 10_000
    /// The live event every recipient gets on `user:{id}`.
    static let createdEvent = EventName("notification.created")!

    /// - Parameters:
    ///   - push: delivery, when a provider has credentials; without it devices are recorded `failed`.
    ///   - catalog: the app's kinds (`HERALD_CATALOG_PATH`), or `.empty`.
    public init(database: Database, node: RealtimeNode, push: PushService?, catalog: NotificationCatalog) {
        self.database = database
        self.node = node
        self.push = push
        self.catalog = catalog
        self.planner = PushPlanner(catalog: catalog)
        self.renderer = NotificationRenderer(catalog: catalog)
        self.timer = DispatchSource.makeTimerSource(queue: recovery)
        timer.resume()
    }

    /// What `send` answers.
    struct Outcome: Sendable {
        var notifications: [(id: String, userID: String, eventID: String?)] = []
        var liveDelivered = 0, pushQueued = 0, pushSuppressed = 0, skipped = 0
        var skippedRecipients: [(userID: String, reason: String)] = []

        /// The 201 body (and an idempotent replay's), grown in one string: it is made for every call.
        var json: String {
            var out = "{\"notifications\":["
            out.reserveCapacity(96 + notifications.count * 96)
            for (index, n) in notifications.enumerated() {
                out += index == 0 ? "{\"id\":" : ",{\"id\":"
                JSONText.appendQuoted(n.id, to: &out)
                out += ",\"user_id\":"
                JSONText.appendQuoted(n.userID, to: &out)
                out += ",\"event_id\":"
                if let eventID = n.eventID { JSONText.appendQuoted(eventID, to: &out) } else { out += "null" }
                out += "}"
            }
            out += "],\"live_delivered\":\(liveDelivered),\"push_queued\":\(pushQueued),\"push_suppressed\":\(pushSuppressed),"
            out += "\"skipped\":\(skipped),\"skipped_recipients\":["
            for (index, recipient) in skippedRecipients.enumerated() {
                out += index == 0 ? "{\"user_id\":" : ",{\"user_id\":"
                JSONText.appendQuoted(recipient.userID, to: &out)
                out += ",\"reason\":"
                JSONText.appendQuoted(recipient.reason, to: &out)
                out += "}"
            }
            out += "]}"
            return out
        }
    }

    private enum Stored: Sendable {
        case replay(String)
        /// `plan`: the first `seq` of the call's stored plan; nil when it reached nobody.
        case fresh([NotificationRecord], skipped: [(userID: String, reason: String)], plan: Int64?)
    }

    /// One call waiting for its turn in a batch.
    private struct Call: Sendable {
        let request: NotificationRequest
        let hash: String
        let completion: @Sendable (HTTPResponse) -> Void
    }

    /// One call's stored rows on their way to being broadcast and planned.
    private struct Planning: Sendable {
        let stored: [NotificationRecord]
        let plan: NotificationPlan
        let live: PublishRequest?
        let skipped: [(userID: String, reason: String)]
        /// The stored plan (its first `seq`) that planning deletes; nil when there is none.
        let pending: Int64?
        let completion: @Sendable (Result<Outcome, any Error>) -> Void
    }

    /// Calls waiting for the writer, and whether a batch is being stored now. Group commit: while
    /// one batch is in the writer, the calls that arrive queue here and go together in the next
    /// one — one transaction, one publish, one loop barrier and one planning transaction per batch
    /// instead of per call.
    private let intake = Mutex<(pending: [Call], storing: Bool)>(([], false))
    /// The plans (by first `seq`) this process has stored or taken up and not finished planning.
    /// Recovery leaves them alone: a plan is abandoned only when no call here still owns it.
    private let planning = Mutex<Set<Int64>>([])
    /// Most calls stored in one transaction.
    static let maxBatch = 128

    /// Runs one `POST /v1/notifications` call; `completion` gets the HTTP answer (201, or 200 for
    /// an idempotent replay, or an error).
    ///
    /// - Parameter requestHash: digest of the request, so one key cannot mean two requests.
    func send(_ request: NotificationRequest, requestHash: String, completion: @escaping @Sendable (HTTPResponse) -> Void) {
        let first = intake.withLock { intake -> Bool in
            intake.pending.append(Call(request: request, hash: requestHash, completion: completion))
            guard !intake.storing else { return false }
            intake.storing = true
            return true
        }
        if first { storeBatch() }
    }

    /// Step 1 for every waiting call in one transaction; one call's refusal (an idempotency
    /// conflict, too many recipients) leaves the others stored.
    private func storeBatch() {
        let calls = intake.withLock { intake -> [Call] in
            let taken = Array(intake.pending.prefix(Self.maxBatch))
            intake.pending.removeFirst(taken.count)
            return taken
        }
        let owned = OwnedPlans()
        database.write({ [self] connection -> [Result<Stored, HTTPError>] in
            try connection.transaction { connection -> [Result<Stored, HTTPError>] in
                var results: [Result<Stored, HTTPError>] = []
                for call in calls {
                    // `store` refuses (HTTPError) only before its first write, so a refused call
                    // leaves nothing behind and needs no savepoint (they were 11 % of the writer's
                    // time); a storage error fails the whole batch.
                    do {
                        results.append(.success(try store(call, owned: owned, connection: connection)))
                    } catch let refusal as HTTPError {
                        results.append(.failure(refusal))
                    }
                }
                return results
            }
        }) { [self] result in
            // Rolled back: the plans registered inside the transaction do not exist. Given back
            // before the next batch, which may store plans starting at the same (freed) seq.
            if case .failure = result { release(owned.take()) }
            // The writer is free for the next batch while this one is broadcast and planned.
            let more = intake.withLock { intake -> Bool in
                if intake.pending.isEmpty { intake.storing = false }
                return !intake.pending.isEmpty
            }
            if more { storeBatch() }
            // The rest (publish, the loop barrier, answers) runs off the writer's queue: the
            // writer is the choke point's one serial resource.
            afterCommit.async { [self] in answer(calls, result) }
        }
    }

    /// After a batch's storing transaction: answers replays and refusals, and sends the stored
    /// calls on to be broadcast and planned.
    private func answer(_ calls: [Call], _ result: Result<[Result<Stored, HTTPError>], any Error>) {
        let results: [Result<Stored, HTTPError>]
        switch result {
        case .failure(let error):
            let response = DatabaseResponder.response(.failure(error))
            for call in calls { call.completion(response) }
            return
        case .success(let stored):
            results = stored
        }
        var planning: [Planning] = []
        for (call, result) in zip(calls, results) {
            switch result {
            case .failure(let refusal):
                call.completion(refusal.response)
            case .success(.replay(let json)):
                var response = HTTPResponse.json(200, json)
                response.headers.add(name: "Idempotent-Replayed", value: "true")
                call.completion(response)
            case .success(.fresh(let stored, let skipped, let pending)):
                let completion = call.completion
                planning.append(Planning(stored: stored, plan: call.request.plan, live: call.request.live, skipped: skipped,
                                         pending: pending) { result in
                    switch result {
                    case .success(let outcome):
                        completion(.json(201, outcome.json))
                    case .failure(let error):
                        // Stored but not planned: `recover()` finishes the job; the caller may
                        // retry with its idempotency key.
                        Log.error("planning pushes failed; they will be planned by recovery", ["error": "\(error)"])
                        completion(DatabaseResponder.response(.failure(error)))
                    }
                })
            }
        }
        if !planning.isEmpty { broadcastAndPlan(planning) }
    }

    /// Step 1 for one call, inside the batch transaction. Every refusal is thrown before the first
    /// write (the batch relies on it).
    private func store(_ call: Call, owned: OwnedPlans, connection: SQLiteConnection) throws -> Stored {
        let request = call.request, plan = request.plan
        let now = unixMilliseconds()
        if let key = request.idempotencyKey,
           let existing = try IdempotencyStore.find(connection, key: key, notBefore: now - Self.idempotencyWindowMilliseconds) {
            guard existing.requestHash == call.hash else {
                throw HTTPError(409, "idempotency_key_reused", "this idempotency_key was used with a different request in the last 24 hours",
                                field: "idempotency_key")
            }
            guard existing.complete else {
                throw HTTPError(409, "idempotency_in_progress", "a request with this idempotency_key is still being processed; retry shortly",
                                field: "idempotency_key")
            }
            return .replay(existing.responseJSON)
        }
        let (users, skipped) = try resolve(request.recipients, kind: plan.kind, connection: connection)
        var stored: [NotificationRecord] = []
        stored.reserveCapacity(users.count)
        for user in users {
            stored.append(try NotificationStore.insert(connection, NotificationRecord(
                id: Self.newID("ntf", now: now), userID: user, kind: plan.kind, scope: plan.scope, titleJSON: request.titleJSON,
                bodyJSON: request.bodyJSON, argsJSON: request.argsJSON, dataJSON: request.dataJSON, collapseKey: plan.collapseKey,
                threadID: plan.threadID, priority: plan.priority, expiresAt: plan.expiresAt, inInbox: plan.persist, createdAt: now)))
        }
        var pending: Int64?
        if let first = stored.first, let last = stored.last {
            // One plan for the call, whatever its number of recipients: they are the rows just
            // stored one after another.
            try NotificationStore.insertPlan(connection, PendingPlan(firstSequence: first.sequence, lastSequence: last.sequence,
                                                                     planJSON: request.planJSON, createdAt: now))
            pending = first.sequence
            // Owned from before the commit, so recovery (reading committed plans) never sees it unowned.
            planning.withLock { _ = $0.insert(first.sequence) }
            owned.add(first.sequence)
        }
        if let key = request.idempotencyKey {
            var provisional = Outcome()
            provisional.notifications = stored.map { ($0.id, $0.userID, nil) }
            provisional.skippedRecipients = skipped
            try IdempotencyStore.reserve(connection, IdempotencyRecord(
                app: "default", key: key, requestHash: call.hash, responseJSON: provisional.json, complete: false, createdAt: now))
        }
        return .fresh(stored, skipped: skipped, plan: pending)
    }

    /// Steps 2-4 for the stored notifications of one batch: one publish, one barrier, one
    /// planning transaction.
    private func broadcastAndPlan(_ calls: [Planning]) {
        var batch: [PublishRequest] = []
        var ids: [String] = []
        for call in calls {
            for record in call.stored {
                guard let channel = ChannelName.personal(userID: record.userID) else { continue }
                let data = "{\"id\":\(JSONText.quote(record.id)),\"kind\":\(JSONText.quote(record.kind)),\"scope\":\(record.scope.map(JSONText.quote) ?? "null")}"
                batch.append(PublishRequest(channel: channel, event: Self.createdEvent, data: data))
                ids.append(record.id)
            }
        }
        for call in calls { if let live = call.live { batch.append(live) } }
        let receipts = batch.isEmpty ? [] : node.broker.publish(batch)
        var events: [String: ChannelMessage] = [:]
        for (index, id) in ids.enumerated() { events[id] = receipts[index].message }
        let sequences = events
        node.afterPendingDeliveries { [self] in
            var seen: [String: [Presence.Receipt]] = [:]
            for call in calls {
                for record in call.stored {
                    if let message = sequences[record.id] {
                        seen[record.id] = node.presence.receipts(userID: record.userID, personalSequence: message.sequence)
                    }
                }
            }
            let presence = seen
            database.write({ [self] connection in
                try connection.transaction { connection in
                    let now = unixMilliseconds()
                    // The planning reads of every call in the batch, in one query each instead of
                    // one per call (one-recipient calls come in batches of dozens).
                    let context = try PlanningContext(calls, now: now, connection: connection)
                    return try calls.map { call in
                        try planPushes(call, context: context, events: sequences, receipts: presence, now: now, connection: connection)
                    }
                }
            }) { [self] result in
                // Planned, or failed and left to recovery: no longer owned by these calls.
                release(calls.compactMap(\.pending))
                afterCommit.async { [self] in
                    switch result {
                    case .success(let outcomes):
                        if outcomes.contains(where: { $0.pushQueued > 0 }) { push?.worker.wake() }
                        for (call, outcome) in zip(calls, outcomes) { call.completion(.success(outcome)) }
                    case .failure(let error):
                        for call in calls { call.completion(.failure(error)) }
                    }
                }
            }
        }
    }

    /// What planning reads for every recipient of a batch: their devices and push preferences.
    private struct PlanningContext {
        let devices: [String: [DeviceRecord]]
        /// By user, then by scope (nil: the user's global switch).
        let preferences: [String: [String?: PushPreferenceRecord]]

        init(_ calls: [Planning], now: Int64, connection: SQLiteConnection) throws {
            var users: Set<String> = []
            var scopes: Set<String> = []
            for call in calls {
                for record in call.stored { users.insert(record.userID) }
                if let scope = call.plan.scope { scopes.insert(scope) }
            }
            let userIDs = Array(users)
            devices = Dictionary(grouping: try DeviceStore.list(connection, userIDs: userIDs, now: now), by: \.userID)
            var preferences: [String: [String?: PushPreferenceRecord]] = [:]
            for record in try PreferenceStore.list(connection, userIDs: userIDs, scopes: Array(scopes)) {
                preferences[record.userID, default: [:]][record.scope] = record
            }
            self.preferences = preferences
        }
    }

    /// Step 4 for one call, inside the writer transaction.
    private func planPushes(_ call: Planning, context: PlanningContext, events: [String: ChannelMessage],
                            receipts: [String: [Presence.Receipt]], now: Int64, connection: SQLiteConnection) throws -> Outcome {
        let stored = call.stored, plan = call.plan, devices = context.devices
        var outcome = Outcome()
        outcome.skippedRecipients = call.skipped
        // The call's texts, parsed once for all its devices (each device only picks a locale), and
        // only when one is pushed to: most recipients of the choke point have no device.
        var parsed: Result<Texts, CatalogError>?
        func texts() throws(CatalogError) -> Texts {
            if parsed == nil {
                parsed = Result { () throws(CatalogError) -> Texts in
                    Texts(title: try plan.title.map(NotificationPlan.localized), body: try plan.body.map(NotificationPlan.localized))
                }
            }
            return try parsed!.get()
        }
        for record in stored {
            let eventID = events[record.id].map { String(describing: $0.cursor) }
            outcome.notifications.append((record.id, record.userID, eventID))
            let preferences = context.preferences[record.userID]
            let global = preferences?[String?.none]
            let scoped = plan.scope.flatMap { preferences?[$0] }
            let allowed = planner.allows(kind: plan.kind, scope: plan.scope, global: global, scoped: scoped)
            var unread: Int?
            if plan.badge == .unread { unread = try NotificationStore.unreadCount(connection, userID: record.userID) }
            let seen = receipts[record.id] ?? []
            for receipt in seen where receipt.received {
                outcome.liveDelivered += 1
                try DeliveryStore.record(connection, DeliveryEntry(
                    notificationID: record.id, userID: record.userID, connectionID: receipt.connectionID, sessionID: receipt.sessionID,
                    outcome: .liveDelivered, detail: "\(receipt.transport.rawValue)\(receipt.foreground ? ", foreground" : ", background")", at: now))
            }
            for device in devices[record.userID] ?? [] {
                let enabled = push?.isEnabled(device.provider) ?? false
                let decision = planner.decide(plan, device: device, eventID: eventID, receipts: seen,
                                              allowedByPreferences: allowed, providerEnabled: enabled, now: now)
                switch decision {
                case .skip(let result, let detail):
                    if result == .suppressedForeground { outcome.pushSuppressed += 1 } else { outcome.skipped += 1 }
                    try DeliveryStore.record(connection, DeliveryEntry(
                        notificationID: record.id, userID: record.userID, deviceID: device.id, sessionID: device.sessionID,
                        outcome: result, detail: detail, at: now))
                case .enqueue(let runAt, let ackEventID):
                    let deliveryID = plan.trackOpens ? Self.newID("dlv", now: now) : nil
                    let notification: PushNotification
                    do {
                        notification = try pushNotification(plan, texts: texts(), record: record, device: device, eventID: eventID,
                                                            unread: unread, deliveryID: deliveryID, now: now)
                    } catch {
                        outcome.skipped += 1
                        try DeliveryStore.record(connection, DeliveryEntry(
                            notificationID: record.id, userID: record.userID, deviceID: device.id, sessionID: device.sessionID,
                            outcome: .failed, detail: "could not render: \(error.message)", at: now))
                        continue
                    }
                    let payload = DeliveryJobPayload(deviceID: device.id, apnsID: .random(), notification: notification, origin: .init(
                        notificationID: record.id, userID: record.userID, sessionID: device.sessionID, ackEventID: ackEventID, deliveryID: deliveryID))
                    let jobID = try JobStore.enqueue(connection, kind: DeliveryJobPayload.kind, payloadJSON: payload.jsonText(), runAt: runAt, now: now)
                    outcome.pushQueued += 1
                    try DeliveryStore.record(connection, DeliveryEntry(
                        notificationID: record.id, userID: record.userID, deviceID: device.id, sessionID: device.sessionID,
                        outcome: .queued, jobID: jobID, deliveryID: deliveryID,
                        detail: ackEventID == nil ? nil : "sent at \(runAt) unless the session acknowledges \(ackEventID!)", at: now))
                }
            }
            if let eventID { try NotificationStore.setCursor(connection, sequence: record.sequence, cursor: eventID) }
        }
        if let pending = call.pending { try NotificationStore.markPlanned(connection, firstSequence: pending) }
        if let key = plan.idempotencyKey { try IdempotencyStore.complete(connection, key: key, responseJSON: outcome.json) }
        counts.withLock { counts in
            counts.stored += stored.count
            counts.outcomes["live_delivered", default: 0] += outcome.liveDelivered
            counts.outcomes["queued", default: 0] += outcome.pushQueued
            counts.outcomes["suppressed_foreground", default: 0] += outcome.pushSuppressed
            counts.outcomes["skipped", default: 0] += outcome.skipped
        }
        return outcome
    }

    /// The call's own title and body, parsed.
    struct Texts {
        let title: LocalizedText?
        let body: LocalizedText?
    }

    /// The push for one device: texts in its locale (NO-5), grouping (NO-7), badge, ids.
    func pushNotification(_ plan: NotificationPlan, texts: Texts, record: NotificationRecord, device: DeviceRecord, eventID: String?,
                          unread: Int?, deliveryID: String?, now: Int64) throws(CatalogError) -> PushNotification {
        var data = plan.data
        data[catalog.kindKey] = plan.kind
        if let key = catalog.notificationIDKey { data[key] = record.id }
        if let deliveryID { data["delivery_id"] = deliveryID }
        var ttlSeconds: Int?
        var expiresAt: Int?
        if plan.ttlSeconds == 0 {
            ttlSeconds = 0   // "now or never" keeps its meaning at the provider
        } else if let at = plan.expiresAt {
            expiresAt = Int((at + 999) / 1000)
        }
        let badge: Int? = switch plan.badge {
        case .number(let n)?: n
        case .unread?: unread
        case nil: nil
        }
        let rendered = try renderer.render(kind: plan.kind, deviceLocale: device.locale,
                                           title: texts.title, body: texts.body,
                                           arguments: plan.arguments, data: plan.data, collapseKey: plan.collapseKey, threadID: plan.threadID,
                                           sound: plan.sound, androidChannelID: plan.androidChannelID)
        let priority = PushNotification.Priority(rawValue: plan.priority) ?? .normal
        if plan.type == .wakeup {
            if let eventID { data["cursor"] = eventID }
            var wakeup = PushNotification.wakeup(data: data, collapseKey: rendered.collapseKey, ttlSeconds: ttlSeconds)
            wakeup.expiresAt = expiresAt
            wakeup.badge = badge
            return wakeup
        }
        return PushNotification(kind: .alert, title: rendered.title, subtitle: rendered.subtitle, body: rendered.body, sound: rendered.sound,
                                badge: badge, threadID: rendered.threadID, collapseKey: rendered.collapseKey, data: data, priority: priority,
                                ttlSeconds: ttlSeconds, expiresAt: expiresAt, androidChannelID: rendered.androidChannelID, tag: rendered.tag)
    }

    /// NO-6: recipients as user ids, plus those a scope rule named but could not reach.
    private func resolve(_ recipients: Recipients, kind: String, connection: SQLiteConnection) throws -> ([String], [(userID: String, reason: String)]) {
        let requires = catalog.kind(kind)?.requires
        switch recipients {
        case .users(let ids):
            return (ids, [])
        case .scopePermission(let scope, let permission):
            let members = try MemberStore.holding(connection, scope: scope, permission: permission ?? requires)
            guard members.count <= Self.maxScopeRecipients else {
                throw HTTPError(413, "too_many_recipients", "scope \(scope) has \(members.count) recipients; one call reaches at most \(Self.maxScopeRecipients)",
                                field: "recipients")
            }
            return (members.map(\.userID), [])
        case .scopeAssignee(let scope, let assignee?):
            guard let member = try MemberStore.find(connection, scope: scope, userID: assignee) else {
                return ([], [(assignee, "not_a_member")])
            }
            if let requires, !member.permissions.contains(requires) { return ([], [(assignee, "missing_permission")]) }
            return ([assignee], [])
        case .scopeAssignee(let scope, nil):
            let members = try MemberStore.holding(connection, scope: scope, permission: requires)
            guard members.count <= Self.maxScopeRecipients else {
                throw HTTPError(413, "too_many_recipients", "scope \(scope) has \(members.count) recipients; one call reaches at most \(Self.maxScopeRecipients)",
                                field: "recipients")
            }
            return (members.map(\.userID), [])
        }
    }

    /// Notifications stored and planned since start, and planning outcomes
    /// (`live_delivered`, `queued`, `suppressed_foreground`, `skipped`) for `/metrics`.
    var metrics: (stored: Int, outcomes: [String: Int]) { counts.withLock { $0 } }

    // MARK: - Recovery

    /// Runs recovery now and every `intervalSeconds`, and drops idempotency keys past their 24 h.
    public func start(intervalSeconds: Int = 30) {
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            runRecovery()
            do {
                _ = try database.writeSync { try IdempotencyStore.purge($0, createdBefore: unixMilliseconds() - Self.idempotencyWindowMilliseconds) }
            } catch {
                Log.error("purging idempotency keys failed", ["error": "\(error)"])
            }
        }
        timer.schedule(deadline: .now(), repeating: .seconds(max(intervalSeconds, 1)))
    }

    public func stop() {
        timer.cancel()
    }

    /// Broadcasts and plans notifications stored but never planned (a crash or a database error
    /// between the two transactions). Presence is asked as for a live call, so a client that is
    /// connected now is not pushed twice.
    public func recover() {
        recovery.async { [self] in runRecovery() }
    }

    private func runRecovery() {
        do {
            let adopted = try database.writeSync { try NotificationStore.adoptLegacyPlans($0) }
            if adopted > 0 { Log.warning("took up the push plans an older build left on notification rows", ["calls": String(adopted)]) }
        } catch {
            Log.error("could not take up the push plans an older build left", ["error": "\(error)"])
            return
        }
        var after: Int64 = 0
        var recovered = 0
        while true {
            let from = after
            let page: [PendingPlan]
            do {
                page = try database.readSync { try NotificationStore.pendingPlans($0, after: from, limit: 500) }
            } catch {
                Log.error("could not read unplanned notifications", ["error": "\(error)"])
                return
            }
            guard let last = page.last else { break }
            after = last.firstSequence
            // A plan is abandoned when it is stored and no call here owns it. A live call owns its
            // plan from before the commit that stores it, so one this read sees is owned unless
            // its call is over: claim the unowned ones, then read again, because a call that
            // ended between the two reads deleted its plan.
            let claimed = planning.withLock { planning in Set(page.map(\.firstSequence).filter { planning.insert($0).inserted }) }
            guard !claimed.isEmpty else { continue }
            var abandoned: [PendingPlan] = []
            do {
                abandoned = try database.readSync { try NotificationStore.pendingPlans($0, after: from, limit: 500) }
                    .filter { claimed.contains($0.firstSequence) }
            } catch {
                release(Array(claimed))
                Log.error("could not read unplanned notifications", ["error": "\(error)"])
                return
            }
            release(Array(claimed.subtracting(abandoned.map(\.firstSequence))))
            var calls: [Planning] = []
            var failed = false
            let done = DispatchGroup()
            for (index, pending) in abandoned.enumerated() {
                let stored: [NotificationRecord]
                do {
                    stored = try database.readSync { try NotificationStore.notifications($0, of: pending) }
                } catch {
                    release(abandoned[index...].map(\.firstSequence))
                    Log.error("could not read unplanned notifications", ["error": "\(error)"])
                    failed = true
                    break
                }
                guard let plan = try? NotificationPlan.decode(pending.planJSON) else {
                    Log.error("unreadable notification plan; marking planned without pushes", ["count": String(stored.count)])
                    _ = try? database.writeSync { try NotificationStore.markPlanned($0, firstSequence: pending.firstSequence) }
                    release([pending.firstSequence])
                    continue
                }
                done.enter()
                calls.append(Planning(stored: stored, plan: plan, live: plan.live?.request, skipped: [], pending: pending.firstSequence) { result in
                    if case .failure(let error) = result { Log.error("recovery could not plan notifications", ["error": "\(error)"]) }
                    done.leave()
                })
                recovered += stored.count
            }
            // A page's calls are planned in batches, like live calls (each releases its plans).
            for start in stride(from: 0, to: calls.count, by: Self.maxBatch) {
                broadcastAndPlan(Array(calls[start..<min(start + Self.maxBatch, calls.count)]))
            }
            done.wait()
            if failed { return }
        }
        if recovered > 0 { Log.warning("planned notifications an earlier run or a failed call left unplanned", ["count": String(recovered)]) }
    }

    /// Ends this process's ownership of plans (planned, or left to recovery).
    private func release(_ plans: [Int64]) {
        guard !plans.isEmpty else { return }
        planning.withLock { planning in for plan in plans { planning.remove(plan) } }
    }

    /// Waits up to `seconds` for calls being stored or planned to finish (SIGTERM, OP-5), so none
    /// is cut off by the database closing. - Returns: true when none is left.
    public func drain(deadline seconds: Double) -> Bool {
        let until = DispatchTime.now() + seconds
        while true {
            let busy = intake.withLock { !$0.pending.isEmpty || $0.storing } || planning.withLock { !$0.isEmpty }
            if !busy { return true }
            if DispatchTime.now() >= until { return false }
            usleep(10_000)   // shutdown only
        }
    }

    // MARK: - Helpers

    /// `<prefix>_` and 20 characters of Crockford-style base32: 45 bits of the unix ms, most
    /// significant first, then 55 random bits. Ids made later sort after earlier ones, so a
    /// batch's inserts land at the right edge of the UNIQUE id index instead of on a random
    /// page each (one page per notification was most of the choke point's WAL writes); 55 random
    /// bits per millisecond keep them unguessable and, in practice, unique.
    static func newID(_ prefix: String, now: Int64 = unixMilliseconds()) -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(prefix.utf8.count + 21)
        bytes.append(contentsOf: prefix.utf8)
        bytes.append(UInt8(ascii: "_"))
        let time = UInt64(truncatingIfNeeded: now) & (1 << 45 - 1)
        for shift in stride(from: 40, through: 0, by: -5) {
            bytes.append(idAlphabet[Int(time >> UInt64(shift) & 31)])
        }
        var random = generator.next() as UInt64
        for _ in 0..<11 {
            bytes.append(idAlphabet[Int(random & 31)])
            random >>= 5
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let idAlphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
}

/// Plans (first `seq`) registered by one batch's transaction, so a rollback can give them back.
private final class OwnedPlans: Sendable {
    private let plans = Mutex<[Int64]>([])
    func add(_ plan: Int64) { plans.withLock { $0.append(plan) } }
    func take() -> [Int64] { plans.withLock { plans in defer { plans = [] }; return plans } }
}
