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
