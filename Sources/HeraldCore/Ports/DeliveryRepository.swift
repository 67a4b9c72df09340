/// The delivery record (NO-8): an append-only log per notification, written by planning, the
/// delivery worker and the open beacon.
public protocol DeliveryRepository {
    /// Appends an entry (its `id` is ignored). - Returns: the id assigned.
    @discardableResult
    func record(_ entry: DeliveryEntry) throws(StorageError) -> Int64

    /// A notification's record in the order written.
    func list(notificationID: String) throws(StorageError) -> [DeliveryEntry]

    /// The first `queued` entry carrying `deliveryID` (the open beacon's key, seed 004).
    func queued(deliveryID: String) throws(StorageError) -> DeliveryEntry?

    /// Whether an entry with this delivery id and outcome exists.
    func exists(deliveryID: String, outcome: DeliveryOutcome) throws(StorageError) -> Bool
}
