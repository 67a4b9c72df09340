import Dispatch
import HeraldCore
import Realtime
import Synchronization

/// Deletes what outlived its retention, at start and then every hour, on the database writer:
/// devices not registered again within `HERALD_DEVICE_RETENTION_DAYS` (DV-6: 90 days by
/// default), and done push jobs older than `HERALD_PUSH_JOB_RETENTION_DAYS` (7), which every push
/// leaves behind (`GET /v1/jobs?state=done`) and which would otherwise grow the database without
/// end. Dead letters and jobs still to send are kept whatever their age. With
/// `HERALD_NOTIFICATION_RETENTION_DAYS` set, notifications older than that, with their delivery
/// records (ADR 0012: off by default, an inbox is user data).
final class RetentionPurge {
    /// Done jobs deleted per write: each batch is a short write, so calls and pushes go between.
    static let jobBatch = 1_000

    private let database: any Storage
    private let deviceRetentionMilliseconds: Int64
    private let jobRetentionMilliseconds: Int64
    private let notifications: NotificationRetention
    private let timer: DispatchSourceTimer
    /// Set by `stop`: a purge of many batches ends at the next one, before the database closes.
    private let stopping = Flag()

    private final class Flag: Sendable {
        let raised = Atomic(false)
    }

    init(database: any Storage, deviceRetentionDays: Int, jobRetentionDays: Int, notifications: NotificationRetention) {
        self.database = database
        self.notifications = notifications
        self.deviceRetentionMilliseconds = Int64(deviceRetentionDays) * 86_400_000
        self.jobRetentionMilliseconds = Int64(jobRetentionDays) * 86_400_000
        self.timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "herald.retention-purge"))
    }

    func start() {
        let database = self.database, stopping = self.stopping
        let devices = deviceRetentionMilliseconds, jobs = jobRetentionMilliseconds, notifications = self.notifications
        timer.setEventHandler {
            Self.purgeDevices(database, retention: devices)
            Self.purgeDoneJobs(database, retention: jobs, stopping: stopping)
            Self.purgeNotifications(database, notifications, stopping: stopping)
        }
        timer.schedule(deadline: .now(), repeating: .seconds(3600))
        timer.resume()
    }

    func stop() {
        stopping.raised.store(true, ordering: .relaxed)
        timer.cancel()
    }

    private static func purgeDevices(_ database: any Storage, retention: Int64) {
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

    private static func purgeDoneJobs(_ database: any Storage, retention: Int64, stopping: Flag) {
        let cutoff = unixMilliseconds() - retention
        do {
            let purged = try database.purgeInBatches(of: Self.jobBatch, stopping: { stopping.raised.load(ordering: .relaxed) }) { tx in
                try tx.jobs.purgeDone(createdBefore: cutoff, limit: Self.jobBatch)
            }
            if purged > 0 { Log.info("purged done push jobs past their retention", ["count": String(purged)]) }
        } catch {
            // The next hour's run takes up where this one stopped.
            Log.error("done push job purge failed", ["error": "\(error.error)", "purged": String(error.purged)])
        }
    }

    private static func purgeNotifications(_ database: any Storage, _ retention: NotificationRetention, stopping: Flag) {
        guard retention.isOn else { return }
        do {
            let purged = try retention.purge(database, now: unixMilliseconds()) { stopping.raised.load(ordering: .relaxed) }
            if purged > 0 {
                Log.info("purged notifications past their retention", ["count": String(purged), "days": String(retention.days)])
            }
        } catch {
            // The next hour's run takes up where this one stopped.
            Log.error("notification purge failed", ["error": "\(error.error)", "purged": String(error.purged)])
        }
    }
}
