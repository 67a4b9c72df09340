import Foundation
import Synchronization

/// Step 4: per device, the planner's decision, the job, the delivery record and the cursor, in
/// the batch's planning transaction.
extension Notifier {
    /// What planning reads for every recipient of a batch: their devices, push preferences, and
    /// the language of those with a device.
    ///
    /// A class: passed to each call's planning, a struct copied its profile and tables each time.
    final class PlanningContext {
        /// The app of the calls: its catalog, payload options and providers apply.
        let profile: AppProfile
        let devices: [String: [DeviceRecord]]
        /// By user: the profile language (`PUT /v1/users/{id}`) of users with a device, for the
        /// texts a device's own language lacks (NO-5).
        let userLocales: [String: String]
        /// By user, then by scope (nil: the user's global switch).
        let preferences: [String: [String?: PushPreferenceRecord]]

        /// - Parameter calls: calls of `profile`'s app only.
        init(_ calls: [Planning], profile: AppProfile, now: Int64, tx: any StorageTransaction) throws {
            self.profile = profile
            let app = profile.app
            var users: Set<String> = []
            var scopes: Set<String> = []
            for call in calls {
                for record in call.stored { users.insert(record.userID) }
                if let scope = call.plan.scope { scopes.insert(scope) }
            }
            let userIDs = Array(users)
            var preferences: [String: [String?: PushPreferenceRecord]] = [:]
            // Issue 17: a batch of one scope (the usual one) reads devices, languages and
            // preferences in one statement where the adapter can; only device owners' count.
            if scopes.count <= 1, let reads = try tx.devices.planningReads(app: app, userIDs: userIDs, scope: scopes.first, now: now) {
                devices = Dictionary(grouping: reads.devices, by: \.userID)
                userLocales = reads.userLocales
                for record in reads.preferences { preferences[record.userID, default: [:]][record.scope] = record }
            } else {
                devices = Dictionary(grouping: try tx.devices.list(app: app, userIDs: userIDs, now: now), by: \.userID)
                // Every device owner's: a device's own language may lack a text the user's has (NO-5).
                userLocales = devices.isEmpty ? [:] : try tx.users.locales(app: app, userIDs: Array(devices.keys))
                for record in try tx.preferences.list(app: app, userIDs: userIDs, scopes: Array(scopes)) {
                    preferences[record.userID, default: [:]][record.scope] = record
                }
            }
            self.preferences = preferences
        }
    }

    /// Step 4 for one call, inside the writer transaction.
    /// - Parameters:
    ///   - events: the message that carried each of `call.stored` live (nil: none), in its order.
    ///   - receipts: who received each of those events (presence), in the same order.
    ///   - handoff: the transaction's hand-over to this node's worker (`DeliveryWorker.handoff(in:)`);
    ///     nil: pushes are queued for a claim, or leased each with a hand-over of its own.
    ///   - prepared: the call's pushes made before the unit (`preparePushes`), taken instead of
    ///     rendering each device's again; nil: each is made here.
    /// - Returns: nil when this node no longer holds the call's plan (its lease ran out and
    ///   another claimer took it): nothing is written for the call, the holder plans it.
    func planPushes(_ call: Planning, context: PlanningContext, events: [ChannelMessage?], receipts: [[Presence.Receipt]],
                    now: Int64, tx: any StorageTransaction, handoff: DeliveryWorker.Handoff? = nil,
                    prepared: PreparedPushes? = nil) throws -> Outcome? {
        // First, so a plan taken over leaves no trace of this planning (fenced by the lease). A
        // plan held in the call's only row goes with the row's cursor, in one UPDATE.
        // The id of the event that carried each record live, which its row keeps as its cursor:
        // formatted once, for the row plan's fence and for the record's pushes.
        let eventIDs = events.map { $0?.cursor.description }
        var cursorWritten: Int64?
        switch call.pending {
        case .table(let id)?:
            if try !tx.plans.markPlanned(id: id, by: nodeID) { return nil }
        case .row(let sequence)?:
            let cursor = call.stored.firstIndex { $0.sequence == sequence }.flatMap { eventIDs[$0] }
            if try !tx.plans.markPlanned(row: sequence, cursor: cursor, by: nodeID) { return nil }
            cursorWritten = sequence
        case nil:
            break
        }
        let stored = call.stored, plan = call.plan, devices = context.devices, profile = context.profile, app = call.app
        var outcome = Outcome()
        outcome.skippedRecipients = call.skipped
        // The call's texts, parsed once for all its devices (each device only picks a locale), and
        // only when one is pushed to: most recipients of the choke point have no device.
        var parsed: Result<Texts, CatalogError>? = prepared.map { .success($0.texts) }
        func texts() throws(CatalogError) -> Texts {
            if parsed == nil {
                parsed = Result { () throws(CatalogError) -> Texts in
                    Texts(title: try plan.title.map(NotificationPlan.localized), body: try plan.body.map(NotificationPlan.localized))
                }
            }
            return try parsed!.get()
        }
        for (index, record) in stored.enumerated() {
            let eventID = eventIDs[index]
            outcome.notifications.append((record.id, record.userID, eventID))
            let preferences = context.preferences[record.userID]
            let global = preferences?[String?.none]
            let scoped = plan.scope.flatMap { preferences?[$0] }
            let allowed = profile.planner.allows(kind: plan.kind, scope: plan.scope, global: global, scoped: scoped)
            var unread: Int?
            if plan.badge == .unread { unread = try tx.notifications.unreadCount(app: app, userID: record.userID) }
            let seen = receipts[index]
            for receipt in seen where receipt.received {
                outcome.liveDelivered += 1
                try tx.deliveries.record(DeliveryEntry(
                    notificationID: record.id, userID: record.userID, connectionID: receipt.connectionID, sessionID: receipt.sessionID,
                    outcome: .liveDelivered, detail: "\(receipt.transport.rawValue)\(receipt.foreground ? ", foreground" : ", background")", at: now))
            }
            for device in devices[record.userID] ?? [] {
                let enabled = providers?.isConfigured(storedProvider: device.provider, app: app) ?? false
                let decision = profile.planner.decide(plan, device: device, eventID: eventID, receipts: seen,
                                              allowedByPreferences: allowed, providerEnabled: enabled, now: now)
                switch decision {
                case .skip(let result, let detail):
                    if result == .suppressedForeground { outcome.pushSuppressed += 1 } else { outcome.skipped += 1 }
                    try tx.deliveries.record(DeliveryEntry(
                        notificationID: record.id, userID: record.userID, deviceID: device.id, sessionID: device.sessionID,
                        outcome: result, detail: detail, at: now))
                case .enqueue(let runAt, let ackEventID):
                    let deliveryID = plan.trackOpens ? Self.newID("dlv", now: now) : nil
                    let notification: PushNotification
                    do {
                        if let ready = prepared?.pushes[index] {
                            notification = ready
                        } else {
                            notification = try pushNotification(plan, profile: profile, texts: texts(), record: record, deviceLocale: device.locale,
                                                                userLocale: context.userLocales[record.userID], eventID: eventID,
                                                                unread: unread, deliveryID: deliveryID, now: now)
                        }
                    } catch {
                        outcome.skipped += 1
                        try tx.deliveries.record(DeliveryEntry(
                            notificationID: record.id, userID: record.userID, deviceID: device.id, sessionID: device.sessionID,
                            outcome: .failed, detail: "could not render: \(error.message)", at: now))
                        continue
                    }
                    let payload = DeliveryJobPayload(deviceID: device.id, apnsID: .random(), notification: notification, origin: .init(
                        notificationID: record.id, userID: record.userID, sessionID: device.sessionID, ackEventID: ackEventID, deliveryID: deliveryID))
                    let jobID: Int64
                    if let ackEventID, let sessionID = device.sessionID, runAt > now {
                        // Waits for its session's ack: stored with what it waits for, so an
                        // answered ack cancels it in storage, whatever restarts (ADR 0025).
                        jobID = try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: payload.jsonText(), app: device.app, runAt: runAt,
                                                    now: now, awaiting: AwaitedAck(sessionID: sessionID, eventID: ackEventID))
                        outcome.queuedForClaim += 1
                    } else if let worker {
                        // Leased to this node's worker and handed over after the commit when it
                        // has room: no claim, no second device read (ADR 0007).
                        let enqueued = try worker.enqueueReportingLease(payload, device: device, app: device.app, runAt: runAt, now: now, in: tx,
                                                                        handoff: handoff)
                        jobID = enqueued.id
                        if !enqueued.leased { outcome.queuedForClaim += 1 }
                    } else {
                        jobID = try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: payload.jsonText(), app: device.app, runAt: runAt, now: now)
                        outcome.queuedForClaim += 1
                    }
                    outcome.pushQueued += 1
                    try tx.deliveries.record(DeliveryEntry(
                        notificationID: record.id, userID: record.userID, deviceID: device.id, sessionID: device.sessionID,
                        outcome: .queued, jobID: jobID, deliveryID: deliveryID,
                        detail: ackEventID == nil ? nil : "sent at \(runAt) unless the session acknowledges \(ackEventID!)", at: now))
                }
            }
            if let eventID, record.sequence != cursorWritten { try tx.notifications.setCursor(sequence: record.sequence, cursor: eventID) }
        }
        if let key = plan.idempotencyKey { try tx.idempotency.complete(app: app, key: key, responseJSON: outcome.json) }
        counts.withLock { counts in
            counts.stored += stored.count
            counts.liveDelivered += outcome.liveDelivered
            counts.queued += outcome.pushQueued
            counts.suppressedForeground += outcome.pushSuppressed
            counts.skipped += outcome.skipped
            counts.planned = true
        }
        return outcome
    }
}
