import Foundation
import Synchronization

/// Intake and group commit: calls queue while a batch is in the writer and are stored together
/// (step 1), then answered or handed on to be broadcast and planned.
extension Notifier {
    /// Step 1 for the waiting calls, once the push backlog has room (`PushBacklog`): while it
    /// has none the batch waits, up to its `maxWaitMilliseconds`, with `storing` still set, so
    /// the calls that arrive meanwhile join it.
    func storeBatch() {
        guard let backlog = pushBacklog else { return storeWaiting() }
        let go = Once { [self] in afterCommit.async { [self] in storeWaiting() } }
        guard backlog.whenRoom(go.run) else {
            afterCommit.asyncAfter(deadline: .now() + .milliseconds(backlog.maxWaitMilliseconds), execute: go.run)
            return
        }
        storeWaiting()
    }

    /// Step 1 for every waiting call in one transaction; one call's refusal (an idempotency
    /// conflict, too many recipients) leaves the others stored.
    func storeWaiting() {
        let calls = intake.withLock { intake -> [Call] in
            let taken = Array(intake.pending.prefix(Self.maxBatch))
            intake.pending.removeFirst(taken.count)
            return taken
        }
        let fate = BatchFate()
        database.write({ [self] tx -> [Result<Stored, NotificationRefusal>] in
            var results: [Result<Stored, NotificationRefusal>] = []
            // Keys this batch stores: a repeat in the same batch is in progress, like one in flight.
            var batchKeys: Set<String> = []
            for call in calls {
                // `store` refuses only before its first write, so a refused call
                // leaves nothing behind and needs no savepoint (they were 11 % of the writer's
                // time); a storage error fails the whole batch.
                do {
                    results.append(.success(try store(call, tx: tx, batchKeys: &batchKeys)))
                } catch let refusal as NotificationRefusal {
                    results.append(.failure(refusal))
                }
            }
            // Told even when the callers were answered 503 before the commit (Notifier+LateCommit).
            let stored = results
            _ = tx.whenEnded { [self] committed in
                if committed, let late = fate.committed(stored) { planLate(calls, late) }
            }
            return results
        }) { [self] result in
            if let late = fate.answered(stalled: Self.isStall(result)) { planLate(calls, late) }
            // Counted before `storing` ends, so `drain` never sees a stored call as neither.
            if case .success(let stored) = result {
                let fresh = stored.count(where: { if case .success(.fresh) = $0 { true } else { false } })
                planning.withLock { $0 += fresh }
                // Before the next batch is submitted (below, or by a call once `storing` ends), so
                // its repeats see the keys.
                let keys = zip(calls, stored).compactMap { call, stored -> String? in
                    if case .success(.fresh) = stored { return call.request.inFlightKey }
                    return nil
                }
                if !keys.isEmpty { keysInFlight.withLock { $0.formUnion(keys) } }
            }
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
    func answer(_ calls: [Call], _ result: Result<[Result<Stored, NotificationRefusal>], any Error>) {
        let results: [Result<Stored, NotificationRefusal>]
        switch result {
        case .failure(let error):
            for call in calls { call.completion(.failed(error)) }
            return
        case .success(let stored):
            results = stored
        }
        var planning: [Planning] = []
        for (call, result) in zip(calls, results) {
            switch result {
            case .failure(let refusal):
                call.completion(.refused(refusal))
            case .success(.replay(let json)):
                call.completion(.replayed(json: json))
            case .success(.replayDeferred(let json)):
                call.completion(.accepted(json: json, replayed: true))
            case .success(.fresh(let stored, let skipped, let pending)):
                let completion = call.completion, log = self.log, key = call.request.inFlightKey
                planning.append(Planning(app: call.request.app, stored: stored, plan: call.request.plan, live: call.request.live, skipped: skipped,
                                         pending: pending) { [self] result in
                    if let key { _ = keysInFlight.withLock { $0.remove(key) } }
                    switch result {
                    case .success(let outcome):
                        completion(.created(json: outcome.json))
                    case .failure(let deferred):
                        // Stored, so never a 5xx (RL-2): the stored ids, and recovery plans the
                        // pushes; a repeat with the idempotency key gets this answer until then.
                        log.error("planning pushes failed; they will be planned by recovery", ["error": "\(deferred.error)"])
                        completion(.accepted(json: deferred.outcome.json, replayed: false))
                    }
                })
            }
        }
        if !planning.isEmpty { broadcastAndPlan(planning) }
    }

    /// Step 1 for one call, inside the batch transaction. Every refusal is thrown before the first
    /// write (the batch relies on it).
    /// - Parameter batchKeys: idempotency keys stored earlier in the same batch; gets this call's.
    func store(_ call: Call, tx: any StorageTransaction, batchKeys: inout Set<String>) throws -> Stored {
        let request = call.request, plan = request.plan, app = request.app
        let now = clock.unixMilliseconds
        if let key = request.idempotencyKey,
           let existing = try tx.idempotency.find(app: app, key: key, notBefore: now - Self.idempotencyWindowMilliseconds) {
            guard existing.requestHash == request.requestHash else { throw NotificationRefusal.idempotencyKeyReused }
            if existing.complete { return .replay(existing.responseJSON) }
            if let flight = request.inFlightKey, batchKeys.contains(flight) || keysInFlight.withLock({ $0.contains(flight) }) { throw NotificationRefusal.idempotencyInProgress }
            // Not in flight here, but maybe on another node sharing the database (PostgreSQL):
            // its step 1 committed and its step 2 has not run yet.
            switch try planHolding(of: existing, now: now, tx: tx) {
            case .held: throw NotificationRefusal.idempotencyInProgress
            // Its node died holding it (ADR 0023): planned now here, not at the next pass.
            case .orphaned: recoverSoon()
            case .free: break
            }
            // Its planning may have committed since the key was read (each statement of a
            // PostgreSQL write sees the latest commits, and planning does not lock the key): the
            // plan is gone because it was planned, and the key now holds the planned answer.
            if let latest = try tx.idempotency.find(app: app, key: key, notBefore: existing.createdAt), latest.complete {
                return .replay(latest.responseJSON)
            }
            return .replayDeferred(existing.responseJSON)
        }
        let (users, skipped) = try resolve(request.recipients, app: app, kind: plan.kind, scope: plan.scope, tx: tx)
        // One plan for the call, whatever its number of recipients, held by this node from the
        // commit that stores it: recovery (on any node) leaves it alone while the lease runs.
        let held = PendingPlan(planJSON: request.planJSON, createdAt: now, claimedBy: nodeID, leaseUntil: now + Self.planLeaseMilliseconds)
        func record(_ user: String, plan id: Int64?) -> NotificationRecord {
            NotificationRecord(
                id: Self.newID("ntf", now: now), app: app, userID: user, kind: plan.kind, scope: plan.scope, titleJSON: request.titleJSON,
                bodyJSON: request.bodyJSON, argsJSON: request.argsJSON, dataJSON: request.dataJSON, collapseKey: plan.collapseKey,
                threadID: plan.threadID, priority: plan.priority, expiresAt: plan.expiresAt, inInbox: plan.persist, planID: id,
                createdAt: now)
        }
        var pending: PlanHold?
        var stored: [NotificationRecord] = []
        stored.reserveCapacity(users.count)
        // One recipient: the plan rides in the row where the adapter allows it (ADR 0003's
        // amendment), so no plan row is written now and deleted at planning.
        if users.count == 1, let row = try tx.notifications.insert(record(users[0], plan: nil), carrying: held) {
            pending = .row(sequence: row.sequence)
            stored.append(row)
        } else if !users.isEmpty {
            let id = try tx.plans.insert(held)
            pending = .table(id: id)
            for user in users { stored.append(try tx.notifications.insert(record(user, plan: id))) }
        }
        if let key = request.idempotencyKey, let flight = request.inFlightKey {
            batchKeys.insert(flight)
            var provisional = Outcome()
            provisional.notifications = stored.map { ($0.id, $0.userID, nil) }
            provisional.skippedRecipients = skipped
            // A call that reached nobody has no plan (nothing names a holder a repeat could find
            // gone, ADR 0023) and nothing to plan: its answer is final now, and stored so, so a
            // repeat after its node died replays it at once instead of 409 for the plan lease.
            // Only its `live` message is left, which no plan recovers for such a call either.
            let final = stored.isEmpty
            provisional.planningDeferred = !final
            try tx.idempotency.reserve(IdempotencyRecord(
                app: app, key: key, requestHash: request.requestHash, responseJSON: provisional.json, complete: final, createdAt: now))
        }
        return .fresh(stored, skipped: skipped, plan: pending)
    }

    /// Who may plan the call that reserved `record` (complete: false): `.held` while it is still
    /// being handled, on this node or another (its plan held under a running lease, by the node
    /// that stored it until its planning ends, or by recovery). A planning failure releases the
    /// plan, so the repeat is then a deferred replay; a node that died holds it until the lease
    /// runs out (`planLeaseMilliseconds`), unless the storage knows its holder is gone
    /// (`.orphaned`, PostgreSQL, ADR 0023). A call that reached nobody has no plan: its key is
    /// stored complete (`store`); one stored incomplete by an earlier build counts as held for
    /// the same lease from its storing.
    func planHolding(of record: IdempotencyRecord, now: Int64, tx: any StorageTransaction) throws -> PlanHolding {
        guard let id = Self.firstNotificationID(inAnswer: record.responseJSON),
              let notification = try tx.notifications.find(id: id) else {
            return record.createdAt > now - Self.planLeaseMilliseconds ? .held : .free
        }
        // A plan held in the row itself (ADR 0003's amendment): released holds have lease 0.
        guard let planID = notification.planID else {
            return notification.planJSON != nil && (notification.planLeaseUntil ?? 0) > now ? .held : .free
        }
        return try tx.plans.holding(ofPlan: planID, now: now)
    }

    /// The first notification id of a stored answer (`{"notifications":[{"id":…}]…}`), if any.
    static func firstNotificationID(inAnswer json: String) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
              let notifications = object["notifications"] as? [[String: Any]] else { return nil }
        return notifications.first?["id"] as? String
    }

    /// NO-6: recipients as user ids, plus those a rule named but could not reach.
    ///
    /// The kind's required permission holds for every recipient in a scope (seed 000's table):
    /// explicit `user_ids` with a `scope` keep only the members holding it, and a `permission` rule
    /// keeps only those who also hold the kind's. The others are listed with `not_a_member` or
    /// `missing_permission`. Without a scope there is no membership to check, so `user_ids` stand.
    /// - Parameters:
    ///   - app: whose members and catalog apply.
    ///   - scope: the notification's scope (the call's `scope`, else the rule's).
    func resolve(_ recipients: Recipients, app: String, kind: String, scope notificationScope: String?,
                 tx: any StorageTransaction) throws -> ([String], [(userID: String, reason: String)]) {
        // Listed users without a scope are the recipients as given: no member to check, so the
        // kind's permission is not looked up (issue 17: the app's profile copied, ~2k instructions a call).
        if case .users(let ids) = recipients, notificationScope == nil { return (ids, []) }
        let requires = profile(app).catalog.kind(kind)?.requires
        switch recipients {
        case .users(let ids):
            guard let requires, let notificationScope else { return (ids, []) }
            var users: [String] = [], skipped: [(userID: String, reason: String)] = []
            for id in ids {
                guard let member = try tx.members.find(app: app, scope: notificationScope, userID: id) else {
                    skipped.append((id, "not_a_member"))
                    continue
                }
                if member.permissions.contains(requires) { users.append(id) } else { skipped.append((id, "missing_permission")) }
            }
            return (users, skipped)
        case .scopePermission(let scope, let permission):
            let members = try tx.members.holding(app: app, scope: scope, permission: permission ?? requires)
            guard members.count <= Self.maxScopeRecipients else {
                throw NotificationRefusal.tooManyRecipients(scope: scope, count: members.count, limit: Self.maxScopeRecipients)
            }
            guard let requires, let permission, permission != requires else { return (members.map(\.userID), []) }
            // The call's permission narrows the scope; it does not stand in for the kind's.
            var users: [String] = [], skipped: [(userID: String, reason: String)] = []
            for member in members {
                if member.permissions.contains(requires) { users.append(member.userID) } else { skipped.append((member.userID, "missing_permission")) }
            }
            return (users, skipped)
        case .scopeAssignee(let scope, let assignee?):
            guard let member = try tx.members.find(app: app, scope: scope, userID: assignee) else {
                return ([], [(assignee, "not_a_member")])
            }
            if let requires, !member.permissions.contains(requires) { return ([], [(assignee, "missing_permission")]) }
            return ([assignee], [])
        case .scopeAssignee(let scope, nil):
            let members = try tx.members.holding(app: app, scope: scope, permission: requires)
            guard members.count <= Self.maxScopeRecipients else {
                throw NotificationRefusal.tooManyRecipients(scope: scope, count: members.count, limit: Self.maxScopeRecipients)
            }
            return (members.map(\.userID), [])
        }
    }
}
