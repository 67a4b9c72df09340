import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct DeliveryStoreTests {
    @Test func theRecordKeepsWriteOrderAndEveryField() throws {
        try withMigratedDatabase { db in
            let queued = DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d1", sessionID: "s1", outcome: .queued,
                                       jobID: 7, deliveryID: "dl-1", at: 2_000)
            let firstID = try DeliveryStore.record(db, queued)
            // Written later with an earlier time: the record still lists it second.
            try DeliveryStore.record(db, DeliveryEntry(notificationID: "n1", userID: "u1", connectionID: "c1", sessionID: "s2",
                                                       outcome: .liveDelivered, at: 1_000))
            try DeliveryStore.record(db, DeliveryEntry(notificationID: "n2", userID: "u2", outcome: .skippedPreferences, at: 1_000))
            let entries = try DeliveryStore.list(db, notificationID: "n1")
            #expect(entries.map(\.outcome) == [.queued, .liveDelivered])
            var expected = queued
            expected.id = firstID
            #expect(entries.first == expected)
        }
    }

    /// Issue 17 (migration 19): a push's outcome written into its queued row reads back as the
    /// two entries appending would have written.
    @Test func anOutcomeWrittenIntoItsQueuedRowReadsAsTwoEntries() throws {
        try withMigratedDatabase { db in
            let queued = DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d1", sessionID: "s1", outcome: .queued,
                                       jobID: 7, deliveryID: "dl-1", detail: "sent at 5 unless the session acknowledges e1", at: 2_000)
            let id = try DeliveryStore.record(db, queued)
            let sent = DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d1", sessionID: "s1", outcome: .sent,
                                     providerMessageID: "apns-1", jobID: 7, deliveryID: "dl-1", at: 2_100)
            #expect(try DeliveryStore.record(db, sent) == id)
            #expect(try db.queryOne("SELECT count(*) FROM deliveries")?[0, as: Int.self] == 1, "one row")
            var expected = [queued, sent]
            expected[0].id = id
            expected[1].id = id
            #expect(try DeliveryStore.list(db, notificationID: "n1") == expected)
            #expect(try DeliveryStore.queued(db, deliveryID: "dl-1") == expected[0], "the open beacon still finds its queued entry")
            #expect(try DeliveryStore.exists(db, deliveryID: "dl-1", outcome: .queued))
            #expect(try DeliveryStore.exists(db, deliveryID: "dl-1", outcome: .sent))

            // A later outcome of the same job is appended: the row holds one outcome at most.
            try DeliveryStore.record(db, DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d1", sessionID: "s1", outcome: .opened,
                                                       jobID: 7, deliveryID: "dl-1", at: 2_200))
            #expect(try DeliveryStore.list(db, notificationID: "n1").map(\.outcome) == [.queued, .sent, .opened])
        }
    }

    @Test func anOutcomeIsAppendedWhenItsQueuedRowIsNotTheLastOrNamesAnotherPush() throws {
        try withMigratedDatabase { db in
            func queued(_ device: String, job: Int64, at: Int64) -> DeliveryEntry {
                DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: device, sessionID: "s1", outcome: .queued, jobID: job, at: at)
            }
            try DeliveryStore.record(db, queued("d1", job: 1, at: 1_000))
            try DeliveryStore.record(db, queued("d2", job: 2, at: 1_000))
            // d1's outcome after d2's queued entry: appended, so it stays after it.
            try DeliveryStore.record(db, DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d1", sessionID: "s1", outcome: .retrying,
                                                       jobID: 1, detail: "timeout", at: 1_100))
            // Another job's outcome for d2 (a recovery that queued it again), and a live entry: appended.
            try DeliveryStore.record(db, queued("d2", job: 3, at: 1_200))
            try DeliveryStore.record(db, DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d2", sessionID: "s1", outcome: .sent,
                                                       jobID: 2, at: 1_300))
            #expect(try db.queryOne("SELECT count(*) FROM deliveries")?[0, as: Int.self] == 5)
            #expect(try DeliveryStore.list(db, notificationID: "n1").map { "\($0.deviceID ?? "")/\($0.outcome.rawValue)/\($0.jobID ?? 0)" } == [
                "d1/queued/1", "d2/queued/2", "d1/retrying/1", "d2/queued/3", "d2/sent/2",
            ])
            // Job 3's queued row is no longer the last either: its dead letter is appended after job 2's outcome.
            try DeliveryStore.record(db, DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d2", sessionID: "s1", outcome: .dead,
                                                       jobID: 3, detail: "unregistered", at: 1_400))
            #expect(try db.queryOne("SELECT count(*) FROM deliveries")?[0, as: Int.self] == 6)
            let entries = try DeliveryStore.list(db, notificationID: "n1")
            #expect(entries.suffix(2).map { "\($0.outcome.rawValue)/\($0.detail ?? "")/\($0.at)" } == ["sent//1300", "dead/unregistered/1400"])
        }
    }

    @Test func theOpenBeaconFindsItsQueuedEntry() throws {
        try withMigratedDatabase { db in
            try DeliveryStore.record(db, DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d1", outcome: .queued,
                                                       deliveryID: "dl-1", at: 1_000))
            try DeliveryStore.record(db, DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d1", outcome: .sent,
                                                       providerMessageID: "apns-1", deliveryID: "dl-1", at: 1_100))
            #expect(try DeliveryStore.queued(db, deliveryID: "dl-1")?.deviceID == "d1")
            #expect(try DeliveryStore.queued(db, deliveryID: "dl-unknown") == nil)
            #expect(!(try DeliveryStore.exists(db, deliveryID: "dl-1", outcome: .opened)))
            try DeliveryStore.record(db, DeliveryEntry(notificationID: "n1", userID: "u1", deviceID: "d1", outcome: .opened,
                                                       deliveryID: "dl-1", at: 1_200))
            #expect(try DeliveryStore.exists(db, deliveryID: "dl-1", outcome: .opened))
            #expect(!(try DeliveryStore.exists(db, deliveryID: "dl-2", outcome: .opened)))
            let plan = try db.query("EXPLAIN QUERY PLAN SELECT 1 FROM deliveries WHERE delivery_id = 'x' AND outcome = 'opened'")
            #expect(try plan.contains { try $0["detail", as: String.self].contains("deliveries_delivery_id") })
        }
    }

    @Test func theOutcomeCheckTakesEveryCaseAndNothingElse() throws {
        try withMigratedDatabase { db in
            for outcome in DeliveryOutcome.allCases {
                try DeliveryStore.record(db, DeliveryEntry(notificationID: "n1", userID: "u1", outcome: outcome, at: 1))
            }
            #expect(try DeliveryStore.list(db, notificationID: "n1").map(\.outcome) == DeliveryOutcome.allCases)
            let error = #expect(throws: SQLiteError.self) {
                try db.run("INSERT INTO deliveries (notification_id, user_id, outcome, at) VALUES ('n1', 'u1', 'delivered', 1)")
            }
            guard case .constraint(.check, _)? = error else { Issue.record("got \(String(describing: error))"); return }
        }
    }
}
