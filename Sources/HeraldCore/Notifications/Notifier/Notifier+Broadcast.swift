import Foundation
import Synchronization

/// Steps 2 and 3: one publish per batch after its commit, then one barrier on every loop before
/// presence is asked who received each event.
extension Notifier {
    /// Steps 2-4 for the stored notifications of one batch: one publish, one barrier, one
    /// planning transaction.
    func broadcastAndPlan(_ calls: [Planning]) {
        var batch: [PublishRequest] = []
        // Each stored record's event, by position: its index in `batch` (nil: it has no personal
        // channel), then its message and receipts in arrays aligned with `call.stored`. Keyed by
        // notification id, each was a hash of the id per insert and per look-up, six a
        // notification (issue 17).
        var slots: [[Int?]] = []
        slots.reserveCapacity(calls.count)
        for call in calls {
            var slot: [Int?] = []
            slot.reserveCapacity(call.stored.count)
            for record in call.stored {
                guard let personal = ChannelName.personal(userID: record.userID) else {
                    slot.append(nil)
                    continue
                }
                let channel = ChannelName.scoped(personal, app: call.app)
                var data = JSONWriter(capacity: 96)
                data.raw("{\"id\":")
                data.quoted(record.id)
                data.raw(",\"kind\":")
                data.quoted(record.kind)
                data.raw(",\"scope\":")
                data.quotedOrNull(record.scope)
                data.raw("}")
                slot.append(batch.count)
                batch.append(PublishRequest(channel: channel, event: Self.createdEvent, data: data.text))
            }
            slots.append(slot)
        }
        let published = batch.count
        for call in calls {
            // The plan keeps the channel as the app's backend named it; its app's namespace is added here.
            if var live = call.live {
                live.channel = ChannelName.scoped(live.channel, app: call.app)
                batch.append(live)
            }
        }
        var receipts: [PublishReceipt] = []
        do {
            if !batch.isEmpty { receipts = try broker.publish(batch) }
        } catch {
            // Stored but not live: nobody saw it, so planning pushes to every device (at least
            // once, never none); the inbox still has it on the next GET.
            log.error("notifications not broadcast: the broker failed", ["error": "\(error)", "notifications": String(published)])
        }
        // Per call, per stored record: the message that carried it live, nil when none did.
        let events: [[ChannelMessage?]] = slots.map { slot in
            slot.map { index in index.flatMap { $0 < receipts.count ? receipts[$0].message : nil } }
        }
        // The profiles planning uses, and the pushes that do not depend on its reads, made here
        // rather than in the serial writer's unit (issue 17).
        let oneApp = calls.allSatisfy { $0.app == calls.first?.app }
        let onlyProfile = oneApp && !calls.isEmpty ? profile(calls[0].app) : nil
        var appProfiles: [String: AppProfile] = [:]
        if !oneApp { for call in calls where appProfiles[call.app] == nil { appProfiles[call.app] = profile(call.app) } }
        let profiles = appProfiles
        var preparing: [PreparedPushes?] = []
        if preparesPushes.load(ordering: .relaxed) {
            let now = clock.unixMilliseconds
            preparing = calls.indices.map { index in
                preparePushes(calls[index], profile: onlyProfile ?? profiles[calls[index].app]!, events: events[index], now: now)
            }
        }
        let prepared = preparing
        var wanted: [(userID: String, personalSequence: UInt64)] = []
        for (call, messages) in zip(calls, events) {
            for (record, message) in zip(call.stored, messages) {
                if let message {
                    wanted.append((Presence.userKey(app: call.app, userID: record.userID), message.sequence))
                }
            }
        }
        let remote = wanted
        barrier.afterPendingDeliveries(timeoutNanoseconds: Self.barrierTimeoutNanoseconds) { [self] in
            // Connections on other nodes (a cluster) report their receipts a little later (ADR 0005).
            presence.awaitRemoteReceipts(remote) { [self] in
                // Per call, per stored record, as `events`: who received its event.
                let seen: [[[Presence.Receipt]]] = zip(calls, events).map { call, messages in
                    zip(call.stored, messages).map { record, message in
                        guard let message else { return [] }
                        return presence.receipts(userID: Presence.userKey(app: call.app, userID: record.userID),
                                                 personalSequence: message.sequence)
                    }
                }
                database.write({ [self] tx in
                    let now = clock.unixMilliseconds
                    // The planning reads of every call in the batch,
                    // one query each instead of one per call (one-recipient calls come in batches of
                    // dozens), per app, since an app's users are its own (ADR 0006). A batch of one
                    // app (the usual one) needs no look-up of its context by app.
                    var contexts: [String: PlanningContext] = [:]
                    let only = try onlyProfile.map { profile in try PlanningContext(calls, profile: profile, now: now, tx: tx) }
                    if !oneApp {
                        for (app, ofApp) in Dictionary(grouping: calls, by: \.app) {
                            contexts[app] = try PlanningContext(ofApp, profile: profiles[app]!, now: now, tx: tx)
                        }
                    }
                    // The pushes the batch leases at insert reach the worker in one hop after the commit.
                    let handoff = worker?.handoff(in: tx)
                    return try calls.indices.map { index in
                        let call = calls[index]
                        return try planPushes(call, context: only ?? contexts[call.app]!, events: events[index], receipts: seen[index],
                                              now: now, tx: tx, handoff: handoff, prepared: prepared.isEmpty ? nil : prepared[index])
                    }
                }) { [self] result in
                    // Failed: the plans are left to recovery, at once rather than when their lease ends.
                    if case .failure = result { release(calls.compactMap(\.pending)) }
                    // Before the worker is woken, so its claim never counts a job not yet added.
                    // Jobs leased at insert were handed over at the commit: no claim takes them.
                    if case .success(let outcomes) = result {
                        // Made ahead only while most notifications get a push: for recipients
                        // without devices the pushes would be made for nothing.
                        let pushed = outcomes.reduce(0) { $0 + ($1?.pushQueued ?? 0) }
                        preparesPushes.store(pushed * 2 >= calls.reduce(0) { $0 + $1.stored.count }, ordering: .relaxed)
                    }
                    if case .success(let outcomes) = result, let pushBacklog {
                        pushBacklog.queued(outcomes.reduce(0) { $0 + ($1?.queuedForClaim ?? 0) })
                    }
                    afterCommit.async { [self] in
                        switch result {
                        case .success(let outcomes):
                            if outcomes.contains(where: { ($0?.queuedForClaim ?? 0) > 0 }) { pushQueued?() }
                            for (index, outcome) in outcomes.enumerated() {
                                let call = calls[index]
                                call.completion(outcome.map { .success($0) } ?? .failure(deferred(call, events: events[index], PlanTakenOver())))
                            }
                        case .failure(let error):
                            for (call, messages) in zip(calls, events) { call.completion(.failure(deferred(call, events: messages, error))) }
                        }
                        planning.withLock { $0 -= calls.count }
                    }
                }
            }
        }
    }
}

extension Notifier {
    /// A call stored and broadcast whose planning did not happen here: what it can answer.
    /// - Parameter events: the message that carried each of `call.stored` live (nil: none), in its order.
    func deferred(_ call: Planning, events: [ChannelMessage?], _ error: any Error) -> PlanningDeferred {
        var outcome = Outcome()
        outcome.notifications = zip(call.stored, events).map { record, message in (record.id, record.userID, message?.cursor.description) }
        outcome.skippedRecipients = call.skipped
        outcome.planningDeferred = true
        return PlanningDeferred(outcome: outcome, error: error)
    }
}

/// A call's plan was claimed by another holder after this node's lease on it ran out; that
/// holder plans the call.
struct PlanTakenOver: Error, CustomStringConvertible {
    var description: String { "the call's push plan was taken over after its lease ran out" }
}
