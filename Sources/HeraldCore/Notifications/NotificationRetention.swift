import Synchronization

/// What this node's retention purge deleted since start, for `/metrics`
/// (`herald_notifications_purged_total`). Every node of a cluster purges (ADR 0012): a
/// cluster's total is the sum over its nodes.
public final class RetentionMetrics: Sendable {
    private let notifications = Atomic<UInt64>(0)

    public init() {}

    /// Notifications purged since start (each with its delivery records).
    public var purgedNotifications: UInt64 { notifications.load(ordering: .relaxed) }

    func addPurged(notifications count: Int) {
        notifications.add(UInt64(count), ordering: .relaxed)
    }
}

/// The retention of notifications and their delivery records (ADR 0012):
/// `HERALD_NOTIFICATION_RETENTION_DAYS`, 0 (the default) keeps them for ever.
public struct NotificationRetention: Sendable {
    /// Notifications deleted per write: each batch is a short write, so calls and pushes go between.
    public static let batch = 1_000
    /// The longest retention the setting takes (100 years).
    public static let maximumDays = 36_500

    /// Days a notification is kept after its creation; 0 keeps it for ever.
    public let days: Int
    public let metrics: RetentionMetrics

    /// - Parameter days: 0 (keep for ever) or 1...`maximumDays`.
    public init(days: Int, metrics: RetentionMetrics = RetentionMetrics()) {
        precondition((0...Self.maximumDays).contains(days), "a retention is 0 (none) or 1...\(Self.maximumDays) days")
        self.days = days
        self.metrics = metrics
    }

    /// Whether anything is ever purged.
    public var isOn: Bool { days > 0 }

    /// The creation time (unix ms) before which a notification goes at `now`: a row created
    /// exactly `days` days before `now` stays until the next millisecond.
    public func cutoff(now: Int64) -> Int64 { now - Int64(days) * 86_400_000 }

    /// A purge that stopped on a storage error: the batches before it are deleted (and counted).
    public typealias Failure = BatchedPurgeFailure

    /// Deletes the notifications created before `cutoff(now:)`, with their delivery records,
    /// `batch` a write transaction, until a write deletes fewer than `batch` or `stopping` answers
    /// true (checked before each batch: a stop waits for one batch at most). Nothing when off.
    /// - Returns: notifications deleted.
    /// - Throws: `Failure` on the first storage error; the next run goes on from there.
    @discardableResult
    public func purge(_ database: any Storage, now: Int64, batch: Int = Self.batch,
                      stopping: () -> Bool = { false }) throws(Failure) -> Int {
        guard isOn else { return 0 }
        let cutoff = self.cutoff(now: now), metrics = self.metrics
        return try database.purgeInBatches(of: batch, stopping: stopping, counted: { metrics.addPurged(notifications: $0) }) { tx in
            try tx.notifications.purge(createdBefore: cutoff, limit: batch)
        }
    }
}
