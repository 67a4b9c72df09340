/// Idempotency keys of `POST /v1/notifications` (NO-1). Expiry is a read-time cutoff, so a key is
/// usable again the moment it expires, whenever the purge runs. Times are unix ms.
public protocol IdempotencyRepository {
    /// The record for `key` if created at or after `notBefore`; an older one counts as absent.
    func find(app: String, key: String, notBefore: Int64) throws(StorageError) -> IdempotencyRecord?

    /// Stores the record, replacing a stored one of the same key.
    /// - Important: Call `find` first in the same unit of work: a live record must be answered,
    ///   not replaced.
    func reserve(_ record: IdempotencyRecord) throws(StorageError)

    /// Stores the answer for `key` and marks it complete.
    func complete(app: String, key: String, responseJSON: String) throws(StorageError)

    /// Deletes keys created before `cutoff`. - Returns: how many.
    @discardableResult
    func purge(createdBefore cutoff: Int64) throws(StorageError) -> Int
}

extension IdempotencyRepository {
    /// `find(app:…)` for the default app.
    public func find(key: String, notBefore: Int64) throws(StorageError) -> IdempotencyRecord? {
        try find(app: "default", key: key, notBefore: notBefore)
    }

    /// `complete(app:…)` for the default app.
    public func complete(key: String, responseJSON: String) throws(StorageError) {
        try complete(app: "default", key: key, responseJSON: responseJSON)
    }
}
