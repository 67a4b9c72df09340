import HeraldCore
/// The SQL for push devices (DV-1, DV-2, DV-4, DV-6). Functions of a connection: callers run
/// writes on the `Database` writer.
enum DeviceStore {
    /// `active` as a column: the device's session is alive at `:now`. Internal for the
    /// many-users list in DeviceStore+Recipients.swift.
    static let selectWithActive = """
        SELECT \(DeviceRecord.selectColumns)
        FROM devices d LEFT JOIN sessions s ON s.app = d.app AND s.sid = d.sid
        """

    /// Registers a token (DV-1), in one transaction:
    /// - the session row is created or refreshed (an ended session refuses);
    /// - a known (app, provider, token) row is updated and moves to the caller, unless it is
    ///   another user's and its installation id differs from the caller's (seed 003). Keyed by
    ///   provider, not platform: the provider is what delivers to the token, so one FCM token
    ///   registered as `ios` and then as `android` is one device (pushed once), and the
    ///   installation check sees it;
    /// - any earlier device of the same session and platform is deleted (token rotation), and
    ///   the pushes still owed to it move to this device (`JobStore.movePushJobs`).
    ///
    /// A token moved to another user and any device deleted count in the storage's
    /// `PushAudienceChange` (`SQLiteConnection.pushAudience`).
    ///
    /// - Parameters:
    ///   - sessionExpiresAt: unix ms from the token's `session_exp`.
    ///   - newID: the id for a new row.
    ///   - now: unix ms.
    /// - Returns: the device and whether it was created.
    /// - Throws: `DeviceRegistrationError` (nothing changed), or `SQLiteError`.
    static func register(_ connection: SQLiteConnection, _ registration: DeviceRegistration, sessionExpiresAt: Int64?,
                                newID: String, now: Int64) throws -> (device: DeviceRecord, created: Bool) {
        try connection.transaction { connection in
            let session = try SessionStore.touch(connection, sid: registration.sessionID, userID: registration.userID,
                                                 app: registration.app, expiresAt: sessionExpiresAt, now: now)
            // A session is named by its app and sid (ADR 0019): a device under another user's sid
            // of the app would be ended by that user's logout (DELETE /v1/sessions/{sid}). Refuse
            // instead of sharing. Checked before the end: another user's ended session is not the
            // caller's to be told "sign in again" about (breaker10).
            if session.userID != registration.userID { throw DeviceRegistrationError.sessionConflict }
            if session.endedAt != nil { throw DeviceRegistrationError.sessionEnded }
            // The same provider's token first; else the same token on the same platform under
            // another provider (an iOS app moving from APNs to Firebase with a token string it
            // held before): that row is this device too, relabelled, not a second row that the
            // (app, platform, token) key would refuse.
            let existing = try connection.queryOne(
                """
                SELECT id, user_id, installation_id FROM devices
                WHERE app = ? AND token = ? AND (provider = ? OR platform = ?)
                ORDER BY provider = ? DESC LIMIT 1
                """,
                [registration.app, registration.token, registration.provider, registration.platform, registration.provider])
            let id: String
            let created: Bool
            if let existing {
                let ownerID: String = try existing["user_id"]
                let storedInstallation: String? = try existing["installation_id"]
                if ownerID != registration.userID, let storedInstallation, storedInstallation != registration.installationID {
                    throw DeviceRegistrationError.installationMismatch
                }
                id = try existing["id"]
                created = false
                // Relabelled onto a platform where another row holds the same token string: that
                // row names this install too; the registration being stored wins.
                try connection.run("DELETE FROM devices WHERE app = ? AND platform = ? AND token = ? AND id <> ?",
                                   [registration.app, registration.platform, registration.token, id])
                // A token moved to another user, or a device deleted: the pushes waiting for the
                // old owner must not go out from a read made before (ADR 0007's amendment).
                if ownerID != registration.userID || connection.changes > 0 { connection.pushAudience?.count() }
                try connection.run("""
                    UPDATE devices SET user_id = :user, sid = :sid, platform = :platform, provider = :provider, environment = :environment,
                        installation_id = COALESCE(:installation, installation_id), locale = COALESCE(:locale, locale),
                        app_version = COALESCE(:version, app_version), device_name = COALESCE(:name, device_name),
                        last_seen_at = :now
                    WHERE id = :id
                    """, [":user": registration.userID, ":sid": registration.sessionID, ":platform": registration.platform,
                          ":provider": registration.provider,
                          ":environment": registration.environment, ":installation": registration.installationID,
                          ":locale": registration.locale, ":version": registration.appVersion, ":name": registration.deviceName,
                          ":now": now, ":id": id])
            } else {
                id = newID
                created = true
                try connection.run("""
                    INSERT INTO devices (id, app, user_id, sid, platform, provider, token, environment, installation_id,
                                         locale, app_version, device_name, created_at, last_seen_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [id, registration.app, registration.userID, registration.sessionID, registration.platform,
                          registration.provider, registration.token, registration.environment, registration.installationID,
                          registration.locale, registration.appVersion, registration.deviceName, now, now])
            }
            var replaced: [String] = []
            if registration.bindsToUser {
                // AP-5: no session to rotate by; an install's earlier token is replaced when it
                // says which install it is.
                if let installation = registration.installationID {
                    replaced = try connection.query(
                        "DELETE FROM devices WHERE app = ? AND user_id = ? AND platform = ? AND installation_id = ? AND id <> ? RETURNING id",
                        [registration.app, registration.userID, registration.platform, installation, id]).map { row throws(SQLiteError) in try row[0, as: String.self] }
                }
            } else {
                replaced = try connection.query(
                    "DELETE FROM devices WHERE app = ? AND sid = ? AND user_id = ? AND platform = ? AND id <> ? RETURNING id",
                    [registration.app, registration.sessionID, registration.userID, registration.platform, id])
                    .map { row throws(SQLiteError) in try row[0, as: String.self] }
            }
            // The pushes still owed to the replaced tokens go to this one (DV-1), in this transaction.
            if !replaced.isEmpty {
                try JobStore.movePushJobs(connection, fromDevices: replaced, toDevice: id)
                connection.pushAudience?.count()
            }
            guard let device = try find(connection, id: id, now: now) else {
                throw SQLiteError.misuse(message: "device \(id) vanished inside its own transaction")
            }
            return (device, created)
        }
    }

    /// A device by id, with `active`.
    static func find(_ connection: SQLiteConnection, id: String, now: Int64) throws(SQLiteError) -> DeviceRecord? {
        try connection.prepare(findSQL).query([":id": id, ":now": now]) { row throws(SQLiteError) in try DeviceRecord(columns: row) }.first
    }

    /// A user's devices, newest first (DV-2).
    static func list(_ connection: SQLiteConnection, userID: String, app: String = "default", now: Int64) throws(SQLiteError) -> [DeviceRecord] {
        try connection.prepare(listSQL).query([":app": app, ":user": userID, ":now": now]) { row throws(SQLiteError) in
            try DeviceRecord(columns: row)
        }
    }

    /// `find(_:id:now:)`'s statement, built once (its text is the statement cache's key).
    private static let findSQL = selectWithActive + " WHERE d.id = :id"
    /// `list(_:userID:app:now:)`'s statement, built once.
    private static let listSQL = selectWithActive + " WHERE d.app = :app AND d.user_id = :user ORDER BY d.created_at DESC, d.id"

    /// Deletes a device of `userID` by id. - Returns: false when the user has no such device.
    static func delete(_ connection: SQLiteConnection, app: String = "default", id: String, userID: String) throws(SQLiteError) -> Bool {
        try connection.run("DELETE FROM devices WHERE id = ? AND user_id = ? AND app = ?", [id, userID, app])
        return connection.changes > 0
    }

    /// Deletes the user's devices holding `token` (any platform). - Returns: how many.
    @discardableResult
    static func delete(_ connection: SQLiteConnection, app: String = "default", token: String, userID: String) throws(SQLiteError) -> Int {
        try connection.run("DELETE FROM devices WHERE token = ? AND user_id = ? AND app = ?", [token, userID, app])
        return connection.changes
    }

    /// Deletes devices not registered since `cutoff` (unix ms) (DV-6). - Returns: how many.
    @discardableResult
    static func purge(_ connection: SQLiteConnection, notSeenSince cutoff: Int64) throws(SQLiteError) -> Int {
        try connection.run("DELETE FROM devices WHERE last_seen_at < ?", [cutoff])
        return connection.changes
    }
}

extension DeviceStore {
    /// Deletes a device a provider reported invalid (DV-6), unless it was registered again after
    /// the provider's verdict (PU-5c: APNs 410 carries the moment the token stopped being valid).
    ///
    /// - Parameter invalidSince: unix ms from the provider, if it gave one.
    /// - Returns: true when the device was deleted.
    static func deleteInvalid(_ connection: SQLiteConnection, id: String, invalidSince: Int64?) throws(SQLiteError) -> Bool {
        if let invalidSince {
            try connection.run("DELETE FROM devices WHERE id = ? AND last_seen_at <= ?", [id, invalidSince])
        } else {
            try connection.run("DELETE FROM devices WHERE id = ?", [id])
        }
        return connection.changes > 0
    }
}
