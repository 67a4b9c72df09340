/// The apps table (SPEC AP-1, ADR 0006). The `default` app is the environment's and never stored.
public protocol AppRepository {
    /// Stores a new app with its server keys.
    /// - Throws: `StorageError.constraint(.unique, …)` when the id, or one of its server keys, exists.
    func create(_ app: AppRecord) throws(StorageError)

    /// Replaces an app's settings, secrets and server keys (its `createdAt` is kept).
    /// - Returns: false when there is no such app.
    /// - Throws: `StorageError.constraint(.unique, …)` when a server key belongs to another app.
    func update(_ app: AppRecord) throws(StorageError) -> Bool

    /// One app, if stored.
    func find(_ id: AppID) throws(StorageError) -> AppRecord?

    /// Every stored app, by id.
    func list() throws(StorageError) -> [AppRecord]

    /// Deletes the app and every row of it in every tenant table (devices, sessions, notifications
    /// and their deliveries, plans, preferences, members, idempotency keys, its devices' jobs).
    /// - Returns: false when there was no such app.
    func delete(_ id: AppID) throws(StorageError) -> Bool
}

/// For storage adapters without an apps table yet: every call fails as a misuse, so the admin API
/// answers 500 instead of pretending.
public struct UnsupportedAppRepository: AppRepository {
    public init() {}
    private var error: StorageError { .misuse(message: "this storage adapter keeps no apps table") }
    public func create(_ app: AppRecord) throws(StorageError) { throw error }
    public func update(_ app: AppRecord) throws(StorageError) -> Bool { throw error }
    public func find(_ id: AppID) throws(StorageError) -> AppRecord? { throw error }
    public func list() throws(StorageError) -> [AppRecord] { throw error }
    public func delete(_ id: AppID) throws(StorageError) -> Bool { throw error }
}
