import Foundation
import HeraldCore
import Testing

/// The cost of the notification retention purge (ADR 0012), measured on demand: set
/// `HERALD_PURGE_COST=1` (the figures are printed; docs/operations.md "Retention" holds the last
/// ones). 200,000 notifications with two delivery records each, half of them past the retention,
/// purged 1,000 a write: the time per batch, which must not grow with the rows kept.
@Suite struct NotificationPurgeCostTests {
    static let enabled = ProcessInfo.processInfo.environment["HERALD_PURGE_COST"] != nil

    @Test(.enabled(if: enabled), arguments: Engine.available)
    func timePerBatchOnTwoHundredThousandNotifications(engine: Engine) throws {
        try withStorage(engine) { storage in
            let day: Int64 = 86_400_000, now: Int64 = 1_764_547_200_000
            let total = 200_000, chunk = 5_000
            for start in stride(from: 0, to: total, by: chunk) {
                try storage.writeSync { tx in
                    for index in start..<(start + chunk) {
                        // The first half 40 days old, the second 10 days: one a millisecond, in id order.
                        let at = (index < total / 2 ? now - 40 * day : now - 10 * day) + Int64(index)
                        let record = try tx.notifications.insert(NotificationRecord(id: Notifier.newID("ntf", now: at), userID: "u\(index % 1_000)",
                                                                                   kind: "k", titleJSON: #"{"en":"Paid"}"#, createdAt: at))
                        try tx.deliveries.record(DeliveryEntry(notificationID: record.id, userID: record.userID, deviceID: "d", outcome: .queued, jobID: 1, at: at))
                        try tx.deliveries.record(DeliveryEntry(notificationID: record.id, userID: record.userID, deviceID: "d", outcome: .sent, at: at + 5))
                    }
                }
            }
            let cutoff = NotificationRetention(days: 30).cutoff(now: now)
            var times: [Double] = []
            var purged = 0
            while true {
                let started = DispatchTime.now().uptimeNanoseconds
                let count = try storage.writeSync { tx in try tx.notifications.purge(createdBefore: cutoff, limit: NotificationRetention.batch) }
                times.append(Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6)
                purged += count
                if count < NotificationRetention.batch { break }
            }
            #expect(purged == total / 2)
            let full = times.dropLast().sorted()
            let mean = full.reduce(0, +) / Double(full.count)
            print("purge cost \(engine): \(full.count) batches of 1,000 (with 2,000 records) over \(total) notifications: "
                  + "mean \(String(format: "%.1f", mean)) ms, median \(String(format: "%.1f", full[full.count / 2])) ms, "
                  + "p95 \(String(format: "%.1f", full[full.count * 95 / 100])) ms, first \(String(format: "%.1f", times[0])) ms, "
                  + "last full \(String(format: "%.1f", times[times.count - 2])) ms, final (empty) \(String(format: "%.1f", times[times.count - 1])) ms")
        }
    }
}
