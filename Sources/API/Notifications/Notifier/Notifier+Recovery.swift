import Foundation
import HeraldCore
import PushBridge
import Realtime
import StorageSQLite
import Synchronization

/// Recovery of calls stored but not planned (a crash or a database error between the two
/// transactions), and the shutdown drain.
extension Notifier {
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

    func runRecovery() {
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
    func release(_ plans: [Int64]) {
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

}
