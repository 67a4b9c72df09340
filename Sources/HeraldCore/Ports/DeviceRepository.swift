/// Push devices (DV-1, DV-2, DV-4, DV-6). Times are unix ms; `now` decides `sessionActive`.
public protocol DeviceRepository {
    /// Registers a token (DV-1): creates or refreshes the session (an ended one refuses), updates
    /// a known (app, platform, token) device and moves it to the caller unless another user's
    /// installation holds it (seed 003), and deletes earlier devices of the same session and
    /// platform (token rotation).
    /// - Parameters:
    ///   - sessionExpiresAt: from the token's `session_exp`.
    ///   - newID: the id for a new device.
    /// - Returns: the device and whether it was created.
    /// - Throws: `DeviceRegistrationError` (nothing changed), or `StorageError`.
    func register(_ registration: DeviceRegistration, sessionExpiresAt: Int64?, newID: String,
                  now: Int64) throws -> (device: DeviceRecord, created: Bool)

    /// A device by id.
    func find(id: String, now: Int64) throws(StorageError) -> DeviceRecord?

    /// The devices of `ids` that exist, in any order (the delivery worker's claim reads its
    /// devices at once: one statement, not one per job; issue 17). A repeated id is found once.
    /// The default asks `find(id:now:)` for each.
    func find(ids: [String], now: Int64) throws(StorageError) -> [DeviceRecord]

    /// A user's devices, newest first (DV-2).
    func list(app: String, userID: String, now: Int64) throws(StorageError) -> [DeviceRecord]

    /// The devices of many users at once, for planning a batch (NO-2): grouped by user, each
    /// user's newest first.
    func list(app: String, userIDs: [String], now: Int64) throws(StorageError) -> [DeviceRecord]

    /// What planning a batch of one scope reads, at once (NO-2, NO-4, NO-5): the devices of
    /// `userIDs` as `list(app:userIDs:now:)` returns them, and for the users among them who
    /// have a device their profile language and their stored global and `scope` preferences.
    /// - Parameter scope: the batch's scope; nil: only the global switches.
    /// - Returns: nil when the adapter has no such read: ask `list`, `UserRepository.locales` and
    ///   `PreferenceRepository.list` instead (the default).
    func planningReads(app: String, userIDs: [String], scope: String?, now: Int64) throws(StorageError) -> PlanningReads?

    /// Deletes a device of `userID`. - Returns: false when the user has no such device.
    func delete(app: String, id: String, userID: String) throws(StorageError) -> Bool

    /// Deletes the user's devices holding `token`. - Returns: how many.
    @discardableResult
    func delete(app: String, token: String, userID: String) throws(StorageError) -> Int

    /// Deletes a device a provider reported invalid (DV-6) unless it registered again after
    /// `invalidSince` (the provider's verdict time, PU-5c). - Returns: true when deleted.
    func deleteInvalid(id: String, invalidSince: Int64?) throws(StorageError) -> Bool

    /// Deletes devices not registered since `cutoff` (DV-6). - Returns: how many.
    @discardableResult
    func purge(notSeenSince cutoff: Int64) throws(StorageError) -> Int
}

/// `DeviceRepository.planningReads`'s answer: only users with a device appear in it.
public struct PlanningReads: Sendable, Equatable {
    /// Grouped by user, each user's newest first, as `DeviceRepository.list(app:userIDs:now:)`.
    public var devices: [DeviceRecord]
    /// By user: the profile language (`PUT /v1/users/{id}`) of those who set one.
    public var userLocales: [String: String]
    /// The stored preferences asked for (global, and the scope's), in any order.
    public var preferences: [PushPreferenceRecord]

    public init(devices: [DeviceRecord], userLocales: [String: String], preferences: [PushPreferenceRecord]) {
        self.devices = devices
        self.userLocales = userLocales
        self.preferences = preferences
    }
}

extension DeviceRepository {
    /// Adapters without a combined read answer nil: the caller reads the three apart.
    public func planningReads(app: String, userIDs: [String], scope: String?, now: Int64) throws(StorageError) -> PlanningReads? { nil }

    public func find(ids: [String], now: Int64) throws(StorageError) -> [DeviceRecord] {
        var seen: Set<String> = []
        var found: [DeviceRecord] = []
        for id in ids where seen.insert(id).inserted {
            if let device = try find(id: id, now: now) { found.append(device) }
        }
        return found
    }

    /// `list(app:userID:now:)` for the default app.
    public func list(userID: String, now: Int64) throws(StorageError) -> [DeviceRecord] {
        try list(app: "default", userID: userID, now: now)
    }

    /// `list(app:userIDs:now:)` for the default app.
    public func list(userIDs: [String], now: Int64) throws(StorageError) -> [DeviceRecord] {
        try list(app: "default", userIDs: userIDs, now: now)
    }
}

extension DeviceRepository {
    /// `delete(app:id:userID:)` for the default app.
    public func delete(id: String, userID: String) throws(StorageError) -> Bool {
        try delete(app: "default", id: id, userID: userID)
    }

    /// `delete(app:token:userID:)` for the default app.
    @discardableResult
    public func delete(token: String, userID: String) throws(StorageError) -> Int {
        try delete(app: "default", token: token, userID: userID)
    }
}
