import Dispatch
import HeraldCore
import Realtime

/// Deletes devices not registered again within the retention period (DV-6: 90 days by default),
/// at start and then every hour, on the database writer.
final class RetentionPurge {
    private let database: any Storage
    private let retentionMilliseconds: Int64
    private let timer: DispatchSourceTimer

    init(database: any Storage, retentionDays: Int) {
        self.database = database
        self.retentionMilliseconds = Int64(retentionDays) * 86_400_000
        self.timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "herald.retention-purge"))
    }

    func start() {
        let database = self.database
        let retention = retentionMilliseconds
        timer.setEventHandler {
            database.write({ tx in
                try tx.devices.purge(notSeenSince: unixMilliseconds() - retention)
            }) { result in
                switch result {
                case .success(let count) where count > 0:
                    Log.info("purged devices not seen within the retention period", ["count": String(count)])
                case .success:
                    break
                case .failure(let error):
                    Log.error("device purge failed", ["error": "\(error)"])
                }
            }
        }
        timer.schedule(deadline: .now(), repeating: .seconds(3600))
        timer.resume()
    }

    func stop() {
        timer.cancel()
    }
}
