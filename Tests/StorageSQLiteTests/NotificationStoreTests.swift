import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct NotificationStoreTests {
    private func new(_ id: String, user: String = "u1", at: Int64 = 1_000, inInbox: Bool = true, plan: Int64? = nil,
                     planJSON: String? = nil) -> NotificationRecord {
        NotificationRecord(id: id, userID: user, kind: "order.paid", inInbox: inInbox, planID: plan, planJSON: planJSON, createdAt: at)
    }

    @Test func insertReturnsTheStoredRowWithDefaults() throws {
        try withMigratedDatabase { db in
            let first = try NotificationStore.insert(db, NotificationRecord(
                id: "n1", userID: "u1", kind: "conversation.message", scope: "store-1", titleJSON: #"{"en":"Hi"}"#,
                collapseKey: "conv-1", priority: "high", expiresAt: 9_000, planJSON: "{}", createdAt: 1_000))
            let second = try NotificationStore.insert(db, new("n2"))
            #expect(second.sequence > first.sequence)
            #expect(first.app == "default" && first.dataJSON == "{}" && first.inInbox && first.readAt == nil && first.cursor == nil)
            #expect(try NotificationStore.find(db, id: "n1") == first)
            #expect(try NotificationStore.find(db, id: "missing") == nil)
            let duplicate = #expect(throws: SQLiteError.self) { _ = try NotificationStore.insert(db, new("n1")) }
            #expect(duplicate?.isUniqueViolation == true)
            let priority = #expect(throws: SQLiteError.self) {
                _ = try NotificationStore.insert(db, NotificationRecord(id: "n3", userID: "u1", kind: "k", priority: "loud", createdAt: 1))
            }
            guard case .constraint(.check, _)? = priority else { Issue.record("got \(String(describing: priority))"); return }
        }
    }

    @Test func pagesNewestFirstWithoutSkipsOrRepeats() throws {
        try withMigratedDatabase { db in
            // The same created_at for all: only seq orders them.
            let ids = try (0..<7).map { try NotificationStore.insert(db, new("n\($0)")).id }
            _ = try NotificationStore.insert(db, new("other", user: "u2"))
            var seen: [String] = []
            var before: Int64?
            while true {
                let page = try NotificationStore.page(db, userID: "u1", unreadOnly: false, before: before, limit: 3)
                if page.isEmpty { break }
                #expect(page.count <= 3)
                seen += page.map(\.id)
                before = page.last?.sequence
            }
            #expect(seen == ids.reversed())
        }
    }

    @Test func unreadFilterCountsAndPushOnlyRowsStayOutOfTheInbox() throws {
        try withMigratedDatabase { db in
            for id in ["a", "b", "c"] { _ = try NotificationStore.insert(db, new(id)) }
            _ = try NotificationStore.insert(db, new("push-only", inInbox: false))
            _ = try NotificationStore.insert(db, new("elsewhere", user: "u2"))
            #expect(try NotificationStore.unreadCount(db, userID: "u1") == 3)
            #expect(try NotificationStore.markRead(db, userID: "u1", id: "b", now: 2_000) == .marked(at: 2_000))
            #expect(try NotificationStore.unreadCount(db, userID: "u1") == 2)
            #expect(try NotificationStore.page(db, userID: "u1", unreadOnly: true, before: nil, limit: 10).map(\.id) == ["c", "a"])
            let all = try NotificationStore.page(db, userID: "u1", unreadOnly: false, before: nil, limit: 10)
            #expect(all.map(\.id) == ["c", "b", "a"])
            #expect(all[1].readAt == 2_000)
            #expect(try NotificationStore.unreadCount(db, app: "other-app", userID: "u1") == 0)
        }
    }

    @Test func unreadPagesUseThePartialIndex() throws {
        try withMigratedDatabase { db in
            let plan = try db.query("""
                EXPLAIN QUERY PLAN SELECT * FROM notifications
                WHERE app = 'default' AND user_id = 'u1' AND read_at IS NULL AND in_inbox = 1 AND seq < 10
                ORDER BY seq DESC LIMIT 5
                """)
            #expect(try plan.contains { try $0["detail", as: String.self].contains("notifications_unread") })
        }
    }

    @Test func markReadOnlyTouchesTheUsersOwnNotification() throws {
        try withMigratedDatabase { db in
            _ = try NotificationStore.insert(db, new("n1"))
            #expect(try NotificationStore.markRead(db, userID: "intruder", id: "n1", now: 2_000) == .notFound)
            #expect(try NotificationStore.markRead(db, userID: "u1", id: "missing", now: 2_000) == .notFound)
            #expect(try NotificationStore.find(db, id: "n1")?.readAt == nil)
            #expect(try NotificationStore.markRead(db, userID: "u1", id: "n1", now: 3_000) == .marked(at: 3_000))
            #expect(try NotificationStore.markRead(db, userID: "u1", id: "n1", now: 4_000) == .alreadyRead(at: 3_000))
            #expect(try NotificationStore.find(db, id: "n1")?.readAt == 3_000)
        }
    }

    @Test func aPushOnlyNotificationIsNotInTheInboxSoCannotBeMarkedRead() throws {
        try withMigratedDatabase { db in
            _ = try NotificationStore.insert(db, new("p1", inInbox: false))
            #expect(try NotificationStore.markRead(db, userID: "u1", id: "p1", now: 2_000) == .notFound)
            #expect(try NotificationStore.find(db, id: "p1")?.readAt == nil)
        }
    }

    @Test func markAllReadCountsTheUsersUnreadInboxRowsOnly() throws {
        try withMigratedDatabase { db in
            for id in ["a", "b", "c"] { _ = try NotificationStore.insert(db, new(id)) }
            _ = try NotificationStore.insert(db, new("push-only", inInbox: false))
            _ = try NotificationStore.insert(db, new("theirs", user: "u2"))
            _ = try NotificationStore.markRead(db, userID: "u1", id: "a", now: 1_500)
            #expect(try NotificationStore.markAllRead(db, userID: "u1", now: 2_000) == 2)
            #expect(try NotificationStore.markAllRead(db, userID: "u1", now: 3_000) == 0)
            #expect(try NotificationStore.find(db, id: "a")?.readAt == 1_500, "an earlier read keeps its time")
            #expect(try NotificationStore.unreadCount(db, userID: "u2") == 1)
        }
    }

    @Test func aCallsPlanNamesItsRowsUntilMarkedPlanned() throws {
        try withMigratedDatabase { db in
            let alone = try NotificationStore.insert(db, new("planned-at-once"))
            let plan = try NotificationStore.insertPlan(db, PendingPlan(planJSON: #"{"kind":"k"}"#, createdAt: 1_000,
                                                                         claimedBy: "node-a", leaseUntil: 61_000))
            let other = try NotificationStore.insertPlan(db, PendingPlan(planJSON: "{}", createdAt: 1_000, claimedBy: "node-a", leaseUntil: 61_000))
            // Another call's row in between: a plan's rows need not be contiguous.
            var rows = try ["a", "b"].map { try NotificationStore.insert(db, new($0, user: "u-\($0)", plan: plan)) }
            let d = try NotificationStore.insert(db, new("d", plan: other))
            rows.append(try NotificationStore.insert(db, new("c", user: "u-c", plan: plan)))
            #expect(plan > 0 && other > plan)
            let pending = try NotificationStore.pendingPlans(db, limit: 10)
            #expect(pending.map(\.id) == [plan, other])
            #expect(pending[0] == PendingPlan(id: plan, planJSON: #"{"kind":"k"}"#, createdAt: 1_000, claimedBy: "node-a", leaseUntil: 61_000))
            #expect(try NotificationStore.pendingPlans(db, after: plan, limit: 10).map(\.id) == [other])
            #expect(try NotificationStore.pendingPlans(db, limit: 1).count == 1)
            #expect(try NotificationStore.notifications(db, ofPlan: plan).map(\.id) == ["a", "b", "c"])
            #expect(try NotificationStore.isPlanned(db, alone))
            #expect(try rows.allSatisfy { try !NotificationStore.isPlanned(db, $0) })
            #expect(try !NotificationStore.isPlanned(db, d))

            #expect(try !NotificationStore.markPlanned(db, id: plan, by: "node-b"), "fenced: only the holder marks it planned")
            #expect(try NotificationStore.markPlanned(db, id: plan, by: "node-a"))
            #expect(try !NotificationStore.markPlanned(db, id: plan, by: "node-a"), "gone already")
            #expect(try rows.allSatisfy { try NotificationStore.isPlanned(db, $0) })
            #expect(try !NotificationStore.isPlanned(db, d))
            #expect(try NotificationStore.pendingPlans(db, limit: 10).map(\.id) == [other])
            // Ids are never reused, so a planned row's plan_id never names a later call's plan.
            try NotificationStore.deletePlan(db, id: other)
            let next = try NotificationStore.insertPlan(db, PendingPlan(planJSON: "{}", createdAt: 2_000))
            #expect(next > other)
            #expect(try NotificationStore.notifications(db, ofPlan: next).isEmpty)
        }
    }

    @Test func plansAreClaimedOnlyWhenTheirLeaseIsOverAndFencedByTheirHolder() throws {
        try withMigratedDatabase { db in
            let clock = ManualClock(unixMilliseconds: 100_000)
            let lease: Int64 = 60_000
            func claim(_ node: String, after: Int64 = 0, limit: Int = 10) throws -> [Int64] {
                try NotificationStore.claimPlans(db, by: node, after: after, limit: limit, leaseMilliseconds: lease, now: clock.unixMilliseconds)
                    .map(\.id)
            }
            let now = clock.unixMilliseconds
            let live = try NotificationStore.insertPlan(db, PendingPlan(planJSON: "{}", createdAt: now, claimedBy: "a", leaseUntil: now + lease))
            let orphan = try NotificationStore.insertPlan(db, PendingPlan(planJSON: "{}", createdAt: now))
            let expired = try NotificationStore.insertPlan(db, PendingPlan(planJSON: "{}", createdAt: now, claimedBy: "c", leaseUntil: now))

            // A live call's plan is left alone; one without owner or with its lease over is taken.
            #expect(try claim("b") == [orphan, expired])
            let claimed = try NotificationStore.pendingPlans(db, limit: 10).first { $0.id == orphan }
            #expect(claimed?.claimedBy == "b" && claimed?.leaseUntil == now + lease)
            #expect(try claim("c").isEmpty, "held by b now")
            #expect(try claim("b", after: orphan).isEmpty, "paging: after skips lower ids")

            // Renewal keeps b's hold past the first lease; a's live plan, never renewed, ends.
            clock.advance(byMilliseconds: 50_000)
            #expect(try NotificationStore.renewPlans(db, ids: [orphan, expired, live], by: "b", until: clock.unixMilliseconds + lease) == 2)
            clock.advance(byMilliseconds: 20_000)
            #expect(try claim("c") == [live], "a's lease is over; b's renewed ones are not")
            #expect(try !NotificationStore.markPlanned(db, id: live, by: "a"), "a lost the lease: its planning must not be recorded")
            #expect(try NotificationStore.markPlanned(db, id: live, by: "c"))

            // Released (planning failed), a plan is claimable at once.
            #expect(try NotificationStore.releasePlans(db, ids: [orphan], by: "c") == 0, "not c's")
            #expect(try NotificationStore.releasePlans(db, ids: [orphan], by: "b") == 1)
            #expect(try claim("c", limit: 1) == [orphan])

            // At start, holds of other nodes (dead processes, one process per database) go.
            #expect(try NotificationStore.releasePlanLeases(db, heldByOtherThan: "c") == 1)
            #expect(try claim("c") == [expired])
        }
    }

    /// The recovery claim reads its plans and leases them by id (issue 17): it returns them as
    /// stored after it, and one that fails part-way leases none.
    @Test func aPlanClaimReturnsThePlansAsStoredAndLeasesNoneWhenItFails() throws {
        try withMigratedDatabase { db in
            let first = try NotificationStore.insertPlan(db, PendingPlan(planJSON: #"{"a":1}"#, createdAt: 5))
            let second = try NotificationStore.insertPlan(db, PendingPlan(planJSON: #"{"b":2}"#, createdAt: 6, claimedBy: "old", leaseUntil: 10))
            try db.run("CREATE TRIGGER refuse AFTER UPDATE ON notification_plans WHEN new.id = \(second) BEGIN SELECT RAISE(ABORT, 'refused'); END")
            #expect(throws: SQLiteError.self) { try NotificationStore.claimPlans(db, by: "n", limit: 10, leaseMilliseconds: 100, now: 50) }
            #expect(!db.isInTransaction)
            #expect(try NotificationStore.pendingPlans(db, limit: 10).map(\.claimedBy) == [nil, "old"])
            try db.run("DROP TRIGGER refuse")
            let claimed = try NotificationStore.claimPlans(db, by: "n", limit: 10, leaseMilliseconds: 100, now: 50)
            #expect(claimed.map(\.id) == [first, second])
            #expect(try NotificationStore.pendingPlans(db, limit: 10) == claimed)
            #expect(claimed.allSatisfy { $0.claimedBy == "n" && $0.leaseUntil == 150 } && claimed.map(\.planJSON) == [#"{"a":1}"#, #"{"b":2}"#])
        }
    }

    @Test func insertStoresEveryColumnAndNoPlanOnTheRow() throws {
        try withMigratedDatabase { db in
            let stored = try NotificationStore.insert(db, NotificationRecord(
                id: "n1", userID: "u1", kind: "k", scope: "s", titleJSON: #"{"*":"T"}"#, bodyJSON: #"{"en":"B"}"#,
                argsJSON: #"{"a":"1"}"#, dataJSON: #"{"d":"2"}"#, collapseKey: "c", threadID: "t", priority: "urgent",
                expiresAt: 7, inInbox: false, cursor: "ignored", planID: 3, createdAt: 5, readAt: 6))
            #expect(stored.cursor == nil && stored.readAt == nil && stored.planJSON == nil && stored.planID == 3)
            #expect(try NotificationStore.find(db, id: "n1") == stored)
            try NotificationStore.setCursor(db, sequence: stored.sequence, cursor: "e1-9")
            #expect(try NotificationStore.find(db, id: "n1")?.cursor == "e1-9")
        }
    }

    @Test func rowsAnOlderBuildLeftWithPlanJSONBecomeOnePlanPerCall() throws {
        try withMigratedDatabase { db in
            // Two calls of an older build: a run of three rows with one plan, a row with another,
            // then a planned row, then a row whose plan equals the first call's (a separate call).
            let first = try (0..<3).map { try NotificationStore.insert(db, new("a\($0)", planJSON: "P")) }
            let second = try NotificationStore.insert(db, new("b", planJSON: "Q"))
            _ = try NotificationStore.insert(db, new("planned"))
            let third = try NotificationStore.insert(db, new("c", planJSON: "P"))
            #expect(try NotificationStore.adoptLegacyPlans(db, now: 0) == 3)
            let plans = try NotificationStore.pendingPlans(db, limit: 10)
            #expect(plans.map { PendingPlan(planJSON: $0.planJSON, createdAt: $0.createdAt, claimedBy: $0.claimedBy, leaseUntil: $0.leaseUntil) } == [
                PendingPlan(planJSON: "P", createdAt: 1_000), PendingPlan(planJSON: "Q", createdAt: 1_000), PendingPlan(planJSON: "P", createdAt: 1_000),
            ], "one plan per call, with no owner")
            #expect(try NotificationStore.notifications(db, ofPlan: plans[0].id).map(\.id) == first.map(\.id))
            #expect(try NotificationStore.notifications(db, ofPlan: plans[1].id).map(\.id) == [second.id])
            #expect(try NotificationStore.notifications(db, ofPlan: plans[2].id).map(\.id) == [third.id])
            #expect(try db.queryOne("SELECT count(*) FROM notifications WHERE plan_json IS NOT NULL")?[0, as: Int.self] == 0)
            #expect(try NotificationStore.adoptLegacyPlans(db, now: 0) == 0)
        }
    }

    /// Whether a statement reads `notifications` by an index only (migration 17: no full scan).
    private func searchesOnly(_ db: SQLiteConnection, _ sql: String, _ values: [any SQLiteBindable]) throws -> Bool {
        let details = try db.query("EXPLAIN QUERY PLAN " + sql, values).map { try $0["detail", as: String.self] }
        return !details.isEmpty && !details.contains { $0.hasPrefix("SCAN notifications") }
    }

    @Test("issue 17: rows whose id carries their time are purged and found by plan through the id index, the others as before")
    func timedRowsAreFoundByTheirIDs() throws {
        try withMigratedDatabase { db in
            func timed(_ id: String) throws -> Int64 { try db.queryOne("SELECT timed FROM notifications WHERE id = ?", [id])?[0] ?? -1 }
            let t: Int64 = 1_764_000_000_000
            let plan = try NotificationStore.insertPlan(db, PendingPlan(planJSON: "{}", createdAt: t, claimedBy: "n", leaseUntil: t + 60_000))
            let other = try NotificationStore.insertPlan(db, PendingPlan(planJSON: "{}", createdAt: t + 1, claimedBy: "n", leaseUntil: t + 60_000))
            let ids = (0..<3).map { _ in Notifier.newID("ntf", now: t) }
            _ = try NotificationStore.insert(db, new(ids[0], at: t, plan: plan))
            _ = try NotificationStore.insert(db, new("legacy-shaped", at: t, plan: plan))         // an id without its time
            let late = Notifier.newID("ntf", now: t + 1)
            _ = try NotificationStore.insert(db, new(late, at: t + 1, plan: other))                  // the next millisecond's plan
            let mismatched = Notifier.newID("ntf", now: t + 1)
            _ = try NotificationStore.insert(db, new(mismatched, at: t + 1, plan: plan))             // a plan of another millisecond
            _ = try NotificationStore.insert(db, new(ids[1], at: t, plan: plan))
            _ = try NotificationStore.insert(db, new(ids[2], at: t))                                 // no plan
            #expect(try [ids[0], ids[1], ids[2], late].map(timed) == [1, 1, 1, 1])
            #expect(try ["legacy-shaped", mismatched].map(timed) == [0, 0])
            #expect(try NotificationStore.notifications(db, ofPlan: plan).map(\.id) == [ids[0], "legacy-shaped", mismatched, ids[1]])
            #expect(try NotificationStore.notifications(db, ofPlan: other).map(\.id) == [late])
            // Gone plans are still read (a scan: no recovery reads them).
            try NotificationStore.deletePlan(db, id: plan)
            #expect(try NotificationStore.notifications(db, ofPlan: plan).map(\.id) == [ids[0], "legacy-shaped", mismatched, ids[1]])

            for id in ids + ["legacy-shaped", late, mismatched] {
                try DeliveryStore.record(db, DeliveryEntry(notificationID: id, userID: "u1", outcome: .queued, at: t))
            }
            #expect(try NotificationStore.purge(db, createdBefore: t) == 0)
            #expect(try NotificationStore.purge(db, createdBefore: t + 1) == 4)   // ids[0...2] and legacy-shaped
            #expect(try NotificationStore.find(db, id: ids[1]) == nil)
            #expect(try NotificationStore.find(db, id: "legacy-shaped") == nil)
            #expect(try DeliveryStore.list(db, notificationID: ids[0]).isEmpty)
            #expect(try DeliveryStore.list(db, notificationID: late).count == 1)
            #expect(try NotificationStore.purge(db, createdBefore: t + 2) == 2)
            #expect(try db.queryOne("SELECT count(*) FROM notifications")?[0] == Int64(0))

            // Both reads stay index searches.
            let prefix = Notifier.idTimePrefix("ntf", at: t)
            #expect(try searchesOnly(db, "SELECT id FROM notifications WHERE id < ? AND created_at < ? AND timed = 1", [prefix, t]))
            #expect(try searchesOnly(db, "SELECT id FROM notifications WHERE created_at < ? AND timed = 0", [t]))
            #expect(try searchesOnly(db, "SELECT * FROM notifications WHERE id >= ? AND id < ? AND plan_id = ? AND timed = 1", [prefix, prefix, plan]))
            #expect(try searchesOnly(db, "SELECT * FROM notifications WHERE plan_id = ? AND timed = 0", [plan]))
        }
    }

    @Test("issue 17: an id's time prefix orders ids by their millisecond")
    func idTimePrefixesOrderIDs() {
        for t: Int64 in [0, 1, 31, 32, 1_764_000_000_000, (1 << 45) - 3] {
            let id = Notifier.newID("ntf", now: t)
            #expect(Notifier.idCarriesTime(id, prefix: "ntf", at: t))
            #expect(!Notifier.idCarriesTime(id, prefix: "ntf", at: t + 1))
            #expect(id >= Notifier.idTimePrefix("ntf", at: t) && id < Notifier.idTimePrefix("ntf", at: t + 1))
            if t > 0 { #expect(id >= Notifier.idTimePrefix("ntf", at: t - 1)) }
        }
        #expect(!Notifier.idCarriesTime(Notifier.newID("ntf", now: -1), prefix: "ntf", at: -1))
        #expect(!Notifier.idCarriesTime("ntf_short", prefix: "ntf", at: 0))
    }

    @Test func purgeDeletesOldNotificationsWithTheirDeliveries() throws {
        try withMigratedDatabase { db in
            _ = try NotificationStore.insert(db, new("old", at: 1_000))
            _ = try NotificationStore.insert(db, new("new", at: 5_000))
            for id in ["old", "new"] {
                try DeliveryStore.record(db, DeliveryEntry(notificationID: id, userID: "u1", outcome: .queued, at: 5_000))
            }
            #expect(try NotificationStore.purge(db, createdBefore: 5_000) == 1)
            #expect(try NotificationStore.find(db, id: "old") == nil)
            #expect(try DeliveryStore.list(db, notificationID: "old").isEmpty)
            #expect(try DeliveryStore.list(db, notificationID: "new").count == 1)
        }
    }
}
