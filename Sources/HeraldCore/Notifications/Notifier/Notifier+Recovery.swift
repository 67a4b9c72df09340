import Foundation
import Synchronization

/// Recovery of calls stored but not planned (a crash or a database error between the two
/// transactions), and the shutdown drain.
extension Notifier {
    /// Runs recovery now and every `intervalSeconds`, and drops idempotency keys past their 24 h.
    ///
    /// First releases the plans other nodes hold: with one process per database (SQLite), they
    /// belong to a process that died, and waiting out their leases would only delay their pushes.
    public func start(intervalSeconds: Int = 30) {
        do {
            _ = try database.writeSync { [nodeID] in try $0.plans.releaseLeases(heldByOtherThan: nodeID) }
        } catch {
            log.error("could not release the push plans a previous run held; they come back when their lease ends", ["error": "\(error)"])
        }
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            runRecovery()
            do {
                _ = try database.writeSync { [clock] in try $0.idempotency.purge(createdBefore: clock.unixMilliseconds - Self.idempotencyWindowMilliseconds) }
            } catch {
                log.error("purging idempotency keys failed", ["error": "\(error)"])
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

    /// `recover()` unless a run asked for this way is already waiting: a burst of repeats of
    /// calls a dead node held runs recovery once, not once each.
    func recoverSoon() {
        guard !recoveryAsked.exchange(true, ordering: .acquiringAndReleasing) else { return }
        recovery.async { [self] in
            recoveryAsked.store(false, ordering: .releasing)
            runRecovery()
        }
    }

    func runRecovery() {
        do {
            let adopted = try database.writeSync { [clock] in try $0.plans.adoptLegacyPlans(now: clock.unixMilliseconds) }
            if adopted > 0 { log.warning("took up the push plans notification rows carried and nobody held", ["calls": String(adopted)]) }
        } catch {
            log.error("could not take up the push plans notification rows carry", ["error": "\(error)"])
            return
        }
        var after: Int64 = 0
        var recovered = 0
        while true {
            // Claimed, not just read: a plan whose lease runs (a live call's, or another
            // claimer's) is left alone, and one claimed here is no other's until planned or
            // released. `after` keeps one pass from claiming again what it just failed to plan.
            let from = after
            let abandoned: [PendingPlan]
            do {
                abandoned = try database.writeSync { [nodeID, clock] in
                    try $0.plans.claim(by: nodeID, after: from, limit: 500, leaseMilliseconds: Self.planLeaseMilliseconds, now: clock.unixMilliseconds)
                }
            } catch {
                log.error("could not read unplanned notifications", ["error": "\(error)"])
                return
            }
            guard let last = abandoned.last else { break }
            after = last.id
            var calls: [Planning] = []
            var failed = false
            let done = DispatchGroup()
            for (index, pending) in abandoned.enumerated() {
                let stored: [NotificationRecord]
                do {
                    stored = try database.readSync { try $0.plans.notifications(ofPlan: pending.id) }
                } catch {
                    release(abandoned[index...].map { .table(id: $0.id) })
                    log.error("could not read unplanned notifications", ["error": "\(error)"])
                    failed = true
                    break
                }
                guard let plan = try? NotificationPlan.decode(pending.planJSON) else {
                    log.error("unreadable notification plan; marking planned without pushes", ["count": String(stored.count)])
                    _ = try? database.writeSync { try $0.plans.delete(id: pending.id) }
                    continue
                }
                done.enter()
                calls.append(Planning(app: stored.first?.app ?? "default", stored: stored, plan: plan, live: plan.live?.request, skipped: [], pending: .table(id: pending.id)) { [log] result in
                    if case .failure(let deferred) = result { log.error("recovery could not plan notifications", ["error": "\(deferred.error)"]) }
                    done.leave()
                })
                recovered += stored.count
            }
            // A page's calls are planned in batches, like live calls; their leases are renewed
            // while they are (a plan planned meanwhile is gone, and renewing skips it).
            planning.withLock { $0 += calls.count }
            for start in stride(from: 0, to: calls.count, by: Self.maxBatch) {
                broadcastAndPlan(Array(calls[start..<min(start + Self.maxBatch, calls.count)]))
            }
            let held = calls.compactMap { call -> Int64? in if case .table(let id)? = call.pending { id } else { nil } }
            while done.wait(timeout: .now() + .milliseconds(Int(Self.planLeaseMilliseconds / 3))) == .timedOut {
                _ = try? database.writeSync { [nodeID, clock] in
                    try $0.plans.renew(ids: held, by: nodeID, until: clock.unixMilliseconds + Self.planLeaseMilliseconds)
                }
            }
            if failed { return }
        }
        if recovered > 0 { log.warning("planned notifications an earlier run or a failed call left unplanned", ["count": String(recovered)]) }
    }

    /// Ends this node's hold on plans it could not plan, so recovery takes them up at its next
    /// pass rather than when their lease runs out. Best effort: if this write fails too, the
    /// lease runs out.
    func release(_ plans: [PlanHold]) {
        guard !plans.isEmpty else { return }
        var ids: [Int64] = [], rows: [Int64] = []
        for plan in plans {
            switch plan {
            case .table(let id): ids.append(id)
            case .row(let sequence): rows.append(sequence)
            }
        }
        database.write({ [nodeID, ids, rows] tx in
            if !ids.isEmpty { try tx.plans.release(ids: ids, by: nodeID) }
            if !rows.isEmpty { try tx.plans.release(rows: rows, by: nodeID) }
        }) { _ in }
    }

    /// Waits up to `seconds` for calls being stored or planned to finish (SIGTERM, OP-5), so none
    /// is cut off by the database closing. - Returns: true when none is left.
    public func drain(deadline seconds: Double) -> Bool {
        let until = DispatchTime.now() + seconds
        while true {
            let busy = intake.withLock { !$0.pending.isEmpty || $0.storing } || planning.withLock { $0 > 0 }
            if !busy { return true }
            if DispatchTime.now() >= until { return false }
            usleep(10_000)   // shutdown only
        }
    }

}
