import HeraldCore
import StorageSQLite
import Testing

/// `NotificationRetention` (ADR 0012): the cutoff, the batches, the count `/metrics` shows, and a
/// purge that a storage error stops (the engines' own behaviour: StoragePostgresTests).
@Suite struct NotificationRetentionTests {
    private let day: Int64 = 86_400_000
    private let now: Int64 = 1_764_547_200_000

    @Test func theCutoffIsTheRetentionBeforeNowAndARowAtItIsKept() {
        #expect(NotificationRetention(days: 30).cutoff(now: now) == now - 30 * day)
        #expect(NotificationRetention(days: 36_500).cutoff(now: now) == now - 36_500 * day)
        #expect(!NotificationRetention(days: 0).isOn && NotificationRetention(days: 1).isOn)
    }

    @Test func aStorageErrorStopsThePurgeAndTheBatchesBeforeItStayDeletedAndCounted() throws {
        let storage = try SQLiteStorage.open(path: ":memory:")
        defer { storage.close() }
        let faults = StorageFaults()
        let database = FaultyStorage(base: storage, faults: faults)
        let old = now - 31 * day
        try storage.writeSync { tx in
            for index in 0..<5 {
                _ = try tx.notifications.insert(NotificationRecord(id: Notifier.newID("ntf", now: old + Int64(index)), userID: "u", kind: "k",
                                                                   createdAt: old + Int64(index)))
            }
        }
        let retention = NotificationRetention(days: 30)
        var batches = 0
        do {
            // The second batch fails: armed as it is about to start.
            try retention.purge(database, now: now, batch: 2) {
                batches += 1
                if batches == 2 { faults.fail(.purging, times: 1) }
                return false
            }
            Issue.record("the purge did not fail")
        } catch {
            #expect(error.purged == 2)
            #expect(error.error as? StorageError == .diskFull(message: "database or disk is full"))
        }
        #expect(retention.metrics.purgedNotifications == 2)
        // The next run goes on from there.
        #expect(try retention.purge(database, now: now, batch: 2) == 3)
        #expect(retention.metrics.purgedNotifications == 5)
        #expect(try storage.readSync { tx in try tx.notifications.unreadCount(userID: "u") } == 0)
    }
}
