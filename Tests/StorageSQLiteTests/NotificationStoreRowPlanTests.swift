import HeraldCore
@testable import StorageSQLite
import Testing

/// A one-recipient call's plan held in its notification row (ADR 0003's amendment, migration 19).
@Suite struct NotificationStoreRowPlanTests {
    private func new(_ id: String, at: Int64 = 1_000) -> NotificationRecord {
        NotificationRecord(id: id, userID: "u1", kind: "order.paid", createdAt: at)
    }

    private func held(by node: String?, until: Int64?, json: String = #"{"kind":"order.paid"}"#) -> PendingPlan {
        PendingPlan(planJSON: json, createdAt: 1_000, claimedBy: node, leaseUntil: until)
    }

    private func unplannedCount(_ db: SQLiteConnection) throws -> Int? {
        try db.queryOne("SELECT count(*) FROM notifications WHERE plan_json IS NOT NULL")?[0]
    }

    @Test func theRowCarriesThePlanAndItsHoldAndNoPlanRowIsWritten() throws {
        try withMigratedDatabase { db in
            let sequence = "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'notification_plans'), 0)"
            let before: Int64? = try db.queryOne(sequence)?[0]
            let stored = try NotificationStore.insert(db, NotificationRecord(id: "n1", userID: "u1", kind: "k", planID: 9, planJSON: "ignored",
                                                                             createdAt: 1_000), carrying: held(by: "a", until: 5_000))
            #expect(stored.planID == nil && stored.planJSON == #"{"kind":"order.paid"}"# && stored.planLeaseUntil == 5_000)
            #expect(try NotificationStore.find(db, id: "n1") == stored)
            #expect(try db.queryOne("SELECT plan_claimed_by FROM notifications WHERE id = 'n1'")?[0, as: String.self] == "a")
            #expect(try NotificationStore.pendingPlans(db, limit: 10).isEmpty, "no plan row")
            #expect(try db.queryOne(sequence)?[0, as: Int64.self] == before, "no plan id taken")
            #expect(try !NotificationStore.isPlanned(db, stored))
        }
    }

    @Test func planningIsFencedByTheHoldAndClearsThePlanWithTheCursor() throws {
        try withMigratedDatabase { db in
            let stored = try NotificationStore.insert(db, new("n1"), carrying: held(by: "a", until: 5_000))
            #expect(try !NotificationStore.markPlanned(db, row: stored.sequence, cursor: "e1-1", by: "b"), "not b's")
            #expect(try NotificationStore.find(db, id: "n1") == stored, "a fenced-off planning writes nothing")
            #expect(try NotificationStore.markPlanned(db, row: stored.sequence, cursor: "e1-1", by: "a"))
            let planned = try #require(try NotificationStore.find(db, id: "n1"))
            #expect(planned.cursor == "e1-1" && planned.planJSON == nil && planned.planLeaseUntil == nil)
            #expect(try NotificationStore.isPlanned(db, planned))
            #expect(try !NotificationStore.markPlanned(db, row: stored.sequence, cursor: "e1-2", by: "a"), "planned once")
            #expect(try NotificationStore.adoptLegacyPlans(db, now: 1 << 40) == 0)

            // Without an event, the cursor stays NULL.
            let quiet = try NotificationStore.insert(db, new("n2"), carrying: held(by: "a", until: 5_000))
            #expect(try NotificationStore.markPlanned(db, row: quiet.sequence, cursor: nil, by: "a"))
            #expect(try NotificationStore.find(db, id: "n2")?.cursor == nil)
        }
    }

    @Test func recoveryAdoptsARowPlanOnlyOnceNobodyHoldsItEachRowAPlanOfItsOwn() throws {
        try withMigratedDatabase { db in
            // Two one-recipient calls with the same plan, stored one after the other, held by a.
            let now: Int64 = 1_000
            let first = try NotificationStore.insert(db, NotificationRecord(id: Notifier.newID("ntf", now: now), userID: "u1", kind: "k",
                                                                            createdAt: now), carrying: held(by: "a", until: 5_000))
            let second = try NotificationStore.insert(db, new("n2"), carrying: held(by: "a", until: 9_000))
            #expect(try NotificationStore.adoptLegacyPlans(db, now: 4_999) == 0, "held: left alone, as a held plan row")
            #expect(try unplannedCount(db) == 2)

            #expect(try NotificationStore.adoptLegacyPlans(db, now: 5_000) == 1, "the first lease is over")
            let plan = try #require(try NotificationStore.pendingPlans(db, limit: 10).first)
            #expect(plan.claimedBy == nil && plan.planJSON == #"{"kind":"order.paid"}"# && plan.createdAt == now)
            #expect(try NotificationStore.notifications(db, ofPlan: plan.id).map(\.id) == [first.id], "found by its timed id")
            #expect(try !NotificationStore.markPlanned(db, row: first.sequence, cursor: "e1-1", by: "a"), "a lost it to recovery")

            // Released by a (its planning failed): adopted at once, as its own plan.
            #expect(try NotificationStore.releaseRowPlans(db, sequences: [second.sequence], by: "b") == 0, "not b's")
            #expect(try NotificationStore.releaseRowPlans(db, sequences: [second.sequence], by: "a") == 1)
            #expect(try NotificationStore.find(db, id: "n2")?.planLeaseUntil == 0)
            #expect(try NotificationStore.adoptLegacyPlans(db, now: 0) == 1)
            let plans = try NotificationStore.pendingPlans(db, limit: 10)
            #expect(plans.count == 2)
            #expect(try NotificationStore.notifications(db, ofPlan: plans[1].id).map(\.id) == ["n2"], "not merged into another call")
            #expect(try unplannedCount(db) == 0)
        }
    }

    @Test func atStartRowHoldsOfOtherNodesAreReleasedAndLegacyRowsKeepTheirRuns() throws {
        try withMigratedDatabase { db in
            // A pre-schema-4 call of two rows, then row plans held by a dead node and by this one.
            let legacy = try (0..<2).map { try NotificationStore.insert(db, NotificationRecord(id: "l\($0)", userID: "u1", kind: "k",
                                                                                               planJSON: "P", createdAt: 1_000)) }
            let dead = try NotificationStore.insert(db, new("dead"), carrying: held(by: "old", until: 1 << 40, json: "P"))
            let mine = try NotificationStore.insert(db, new("mine"), carrying: held(by: "me", until: 1 << 40, json: "P"))
            #expect(try NotificationStore.releasePlanLeases(db, heldByOtherThan: "me") == 1)
            #expect(try NotificationStore.adoptLegacyPlans(db, now: 2_000) == 2, "the legacy call and the dead node's row")
            let plans = try NotificationStore.pendingPlans(db, limit: 10)
            #expect(try NotificationStore.notifications(db, ofPlan: plans[0].id).map(\.id) == legacy.map(\.id))
            #expect(try NotificationStore.notifications(db, ofPlan: plans[1].id).map(\.id) == [dead.id])
            #expect(try NotificationStore.markPlanned(db, row: mine.sequence, cursor: nil, by: "me"), "this node's own hold stays")
        }
    }

    @Test func recoveryFindsRowPlansByTheUnplannedIndex() throws {
        try withMigratedDatabase { db in
            for sql in ["SELECT seq, plan_json, created_at, plan_lease_until FROM notifications WHERE plan_json IS NOT NULL ORDER BY seq",
                        "UPDATE notifications SET plan_claimed_by = NULL, plan_lease_until = 0 WHERE plan_json IS NOT NULL AND plan_claimed_by <> 'n'"] {
                let plan = try db.query("EXPLAIN QUERY PLAN " + sql).map { try $0[3, as: String.self] }
                #expect(plan.contains { $0.contains("notifications_unplanned") }, "\(sql): \(plan)")
            }
        }
    }
}
