import HeraldCore
import Testing

/// The retention purge of notifications (ADR 0012) through the `Storage` port, the same on every
/// adapter: batches, the cutoff, the records and plans of a purged notification, and what the
/// inbox, the unread count and the delivery record read after it.
@Suite struct NotificationRetentionContractTests {
    private let day: Int64 = 86_400_000
    /// "Now" of the tests: 1 December 2025, 00:00 UTC.
    private let now: Int64 = 1_764_547_200_000

    /// Stores, oldest first, `old` notifications of u1 created 10 days before `now` (one a
    /// millisecond), one exactly 7 days before, `young` from 6 days before; each with a delivery
    /// record, the first with one more recorded today. - Returns: their ids and `seq`, in order.
    private func store(_ storage: any Storage, old: Int, young: Int) throws -> [(id: String, sequence: Int64)] {
        let times = (0..<old).map { now - 10 * day + Int64($0) } + [now - 7 * day] + (0..<young).map { now - 6 * day + Int64($0) }
        let today = now
        return try storage.writeSync { tx throws in
            var stored: [(id: String, sequence: Int64)] = []
            for at in times {
                let record = try tx.notifications.insert(NotificationRecord(id: Notifier.newID("ntf", now: at), userID: "u1", kind: "k", createdAt: at))
                try tx.deliveries.record(DeliveryEntry(notificationID: record.id, userID: "u1", outcome: .queued, at: at))
                stored.append((record.id, record.sequence))
            }
            try tx.deliveries.record(DeliveryEntry(notificationID: stored[0].id, userID: "u1", outcome: .opened, at: today))
            return stored
        }
    }

    @Test(arguments: Engine.available)
    func batchesDeleteEveryNotificationBeforeTheCutoffWithItsRecords(engine: Engine) throws {
        try withStorage(engine) { storage in
            let stored = try store(storage, old: 5, young: 2)
            let cutoff = now - 7 * day
            try storage.writeSync { tx throws in
                #expect(try tx.notifications.purge(createdBefore: cutoff, limit: 2) == 2)
                #expect(try tx.notifications.find(id: stored[0].id) == nil && tx.notifications.find(id: stored[2].id) != nil)
                #expect(try tx.deliveries.list(notificationID: stored[0].id).isEmpty)
            }
            #expect(try storage.writeSync { tx in try tx.notifications.purge(createdBefore: cutoff, limit: 2) } == 2)
            #expect(try storage.writeSync { tx in try tx.notifications.purge(createdBefore: cutoff, limit: 2) } == 1)
            #expect(try storage.writeSync { tx in try tx.notifications.purge(createdBefore: cutoff, limit: 2) } == 0)
            try storage.readSync { tx throws in
                for (id, _) in stored[..<5] {
                    #expect(try tx.notifications.find(id: id) == nil)
                    #expect(try tx.deliveries.list(notificationID: id).isEmpty)
                }
                // The one created exactly at the cutoff stays, and the younger ones, with their records.
                for (id, _) in stored[5...] {
                    #expect(try tx.notifications.find(id: id) != nil)
                    #expect(try tx.deliveries.list(notificationID: id).count == 1)
                }
                #expect(try tx.notifications.unreadCount(userID: "u1") == 3)
                // A cursor at a purged row: the rows older than it are gone, so the page is the last.
                #expect(try tx.notifications.page(userID: "u1", unreadOnly: false, before: stored[3].sequence, limit: 10).isEmpty)
                #expect(try tx.notifications.page(userID: "u1", unreadOnly: true, before: stored[6].sequence, limit: 1).map(\.id) == [stored[5].id])
            }
        }
    }

    @Test(arguments: Engine.available)
    func readPushOnlyAndOtherUsersNotificationsGoAlikeAndPlansAreLeftToRecovery(engine: Engine) throws {
        try withStorage(engine) { storage in
            let old = now - 30 * day
            try storage.writeSync { tx throws in
                let plan = try tx.plans.insert(PendingPlan(planJSON: "{}", createdAt: old))
                _ = try tx.notifications.insert(NotificationRecord(id: "read", userID: "u1", kind: "k", createdAt: old))
                _ = try tx.notifications.insert(NotificationRecord(id: "push-only", userID: "u1", kind: "k", inInbox: false, createdAt: old))
                _ = try tx.notifications.insert(NotificationRecord(id: "planned-later", userID: "u2", kind: "k", planID: plan, createdAt: old))
                _ = try tx.notifications.insert(NotificationRecord(id: "kept", userID: "u2", kind: "k", createdAt: now))
                #expect(try tx.notifications.markRead(userID: "u1", id: "read", now: old + 1) == .marked(at: old + 1))
                // SQLite keeps a one-recipient call's plan in its row: it goes with the row.
                _ = try tx.notifications.insert(NotificationRecord(id: Notifier.newID("ntf", now: old), userID: "u3", kind: "k", createdAt: old),
                                                carrying: PendingPlan(planJSON: "{}", createdAt: old))
                #expect(try tx.notifications.purge(createdBefore: now - day, limit: 1_000) >= 3)
                for id in ["read", "push-only", "planned-later"] { #expect(try tx.notifications.find(id: id) == nil) }
                #expect(try tx.notifications.unreadCount(userID: "u2") == 1)
                // The call's plan is left for recovery to claim: it finds no rows and plans nothing.
                #expect(try tx.plans.list(after: 0, limit: 10).map(\.id) == [plan])
                #expect(try tx.plans.notifications(ofPlan: plan).isEmpty)
                #expect(try tx.plans.adoptLegacyPlans(now: now) == 0)
            }
        }
    }

    @Test(arguments: Engine.available)
    func theRetentionPurgesInBatchesCountsThemAndStopsWhenAsked(engine: Engine) throws {
        try withStorage(engine) { storage in
            let stored = try store(storage, old: 5, young: 1)
            let off = NotificationRetention(days: 0)
            #expect(try off.purge(storage, now: now + 100 * day) == 0)
            let retention = NotificationRetention(days: 7)
            #expect(retention.cutoff(now: now) == now - 7 * day)
            // Stopped after its first batch: the rest waits for the next run.
            var batches = 0
            #expect(try retention.purge(storage, now: now, batch: 2) { defer { batches += 1 }; return batches == 1 } == 2)
            #expect(retention.metrics.purgedNotifications == 2)
            #expect(try retention.purge(storage, now: now, batch: 2) == 3)
            #expect(retention.metrics.purgedNotifications == 5)
            #expect(try retention.purge(storage, now: now, batch: 2) == 0)
            try storage.readSync { tx throws in
                #expect(try tx.notifications.page(userID: "u1", unreadOnly: false, before: nil, limit: 10).map(\.id) == [stored[6].id, stored[5].id])
            }
        }
    }
}
