import HeraldCore

/// `DeviceRepository` on PostgreSQL (DV-1, DV-2, DV-4, DV-6), as `DeviceStore` does it on SQLite.
struct PostgresDeviceRepository: DeviceRepository {
    let connection: PostgresConnection
    /// Where a registration's token rotation that moves push jobs counts (`Storage.pushRotations`).
    let rotations: PushJobRotation.Count

    /// `active`: the device's session is alive at `$now` (the statement's parameter named).
    /// - Parameter columns: more of the select list, after `active` (`, x.locale AS …`).
    private static func selectWithActive(now parameter: String, also columns: String = "") -> String {
        """
        SELECT d.*, (s.sid IS NOT NULL AND s.ended_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > \(parameter)::bigint)) AS active,
            s.expires_at AS session_expires_at\(columns)
        FROM devices d LEFT JOIN sessions s ON s.app = d.app AND s.sid = d.sid
        """
    }

    func register(_ registration: DeviceRegistration, sessionExpiresAt: Int64?, newID: String,
                  now: Int64) throws -> (device: DeviceRecord, created: Bool) {
        do {
            // Two nodes registering one token at once would both find no row and one insert would
            // break the unique key: the token's lock makes the second wait and find the first's row.
            _ = try connection.query("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 7))",
                                     [registration.app + "\u{1F}" + registration.token])
            let session = try PostgresSessionRepository(connection: connection)
                .touch(sid: registration.sessionID, userID: registration.userID, app: registration.app,
                       expiresAt: sessionExpiresAt, now: now)
            // A session is named by its app and sid (ADR 0019); another user's of the app is not
            // shared. Checked before the end: another user's ended session is not the caller's (breaker10).
            if session.userID != registration.userID { throw DeviceRegistrationError.sessionConflict }
            if session.endedAt != nil { throw DeviceRegistrationError.sessionEnded }
            let existing = try connection.queryOne("""
                SELECT id, user_id, installation_id FROM devices
                WHERE app = $1::text AND token = $2::text AND (provider = $3::text OR platform = $4::text)
                ORDER BY provider = $3::text DESC LIMIT 1
                """, [registration.app, registration.token, registration.provider, registration.platform])
            let id: String
            let created: Bool
            if let existing {
                let ownerID: String = try existing.value("user_id")
                let storedInstallation: String? = try existing.nullable("installation_id")
                if ownerID != registration.userID, let storedInstallation, storedInstallation != registration.installationID {
                    throw DeviceRegistrationError.installationMismatch
                }
                id = try existing.value("id")
                created = false
                try connection.run("DELETE FROM devices WHERE app = $1::text AND platform = $2::text AND token = $3::text AND id <> $4::text",
                                   [registration.app, registration.platform, registration.token, id])
                try connection.run("""
                    UPDATE devices SET user_id = $1::text, sid = $2::text, platform = $3::text, provider = $4::text, environment = $5::text,
                        installation_id = COALESCE($6::text, installation_id), locale = COALESCE($7::text, locale),
                        app_version = COALESCE($8::text, app_version), device_name = COALESCE($9::text, device_name),
                        last_seen_at = $10::bigint
                    WHERE id = $11::text
                    """, [registration.userID, registration.sessionID, registration.platform, registration.provider,
                          registration.environment, registration.installationID, registration.locale, registration.appVersion,
                          registration.deviceName, now, id])
            } else {
                id = newID
                created = true
                try connection.run("""
                    INSERT INTO devices (id, app, user_id, sid, platform, provider, token, environment, installation_id,
                                         locale, app_version, device_name, created_at, last_seen_at)
                    VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text,
                            $10::text, $11::text, $12::text, $13::bigint, $13::bigint)
                    """, [id, registration.app, registration.userID, registration.sessionID, registration.platform,
                          registration.provider, registration.token, registration.environment, registration.installationID,
                          registration.locale, registration.appVersion, registration.deviceName, now])
            }
            var replaced: [PostgresRow] = []
            if registration.bindsToUser {
                // AP-5: no session to rotate by; an install's earlier token is replaced when it
                // says which install it is.
                if let installation = registration.installationID {
                    replaced = try connection.query("""
                        DELETE FROM devices WHERE app = $1::text AND user_id = $2::text AND platform = $3::text
                            AND installation_id = $4::text AND id <> $5::text RETURNING id
                        """, [registration.app, registration.userID, registration.platform, installation, id])
                }
            } else {
                replaced = try connection.query("""
                    DELETE FROM devices WHERE app = $1::text AND sid = $2::text AND user_id = $3::text AND platform = $4::text
                        AND id <> $5::text RETURNING id
                    """, [registration.app, registration.sessionID, registration.userID, registration.platform, id])
            }
            // The pushes still owed to the replaced tokens go to this one (DV-1), in this transaction.
            if !replaced.isEmpty {
                _ = try PostgresJobQueue(connection: connection, node: "", rotations: rotations).movePushJobs(fromDevices: try replaced.map { try $0.value("id") },
                                                                                   toDevice: id)
            }
            guard let device = try find(id: id, now: now) else {
                throw StorageError.misuse(message: "device \(id) vanished inside its own transaction")
            }
            return (device, created)
        } catch {
            throw StorageError.mapped(error)
        }
    }

    func find(id: String, now: Int64) throws(StorageError) -> DeviceRecord? {
        try mapped {
            try connection.queryOne(Self.selectWithActive(now: "$2") + " WHERE d.id = $1::text", [id, now]).map(DeviceRecord.init(row:))
        }
    }

    /// One statement for a claim's devices (issue 17), as SQLite's adapter does.
    func find(ids: [String], now: Int64) throws(StorageError) -> [DeviceRecord] {
        if ids.isEmpty { return [] }
        return try mapped {
            try connection.query(Self.selectWithActive(now: "$2") + " WHERE d.id = ANY($1::text[])",
                                 [PostgresTextArray(elements: Array(Set(ids))), now]).map(DeviceRecord.init(row:))
        }
    }

    func list(app: String, userID: String, now: Int64) throws(StorageError) -> [DeviceRecord] {
        try mapped {
            try connection.query(Self.selectWithActive(now: "$3") + " WHERE d.app = $1::text AND d.user_id = $2::text ORDER BY d.created_at DESC, d.id",
                                 [app, userID, now]).map(DeviceRecord.init(row:))
        }
    }

    func list(app: String, userIDs: [String], now: Int64) throws(StorageError) -> [DeviceRecord] {
        if userIDs.isEmpty { return [] }
        let devices = try mapped {
            try connection.query(Self.selectWithActive(now: "$3") + " WHERE d.app = $1::text AND d.user_id = ANY($2::text[])",
                                 [app, PostgresTextArray(elements: Array(Set(userIDs))), now]).map(DeviceRecord.init(row:))
        }
        return Self.sorted(devices)
    }

    /// The order SQLite's adapter gives: user ids byte by byte, each user's newest first.
    private static func sorted(_ devices: [DeviceRecord]) -> [DeviceRecord] {
        devices.sorted { a, b in
            if a.userID != b.userID { return a.userID.utf8.lexicographicallyPrecedes(b.userID.utf8) }
            if a.createdAt != b.createdAt { return a.createdAt > b.createdAt }
            return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }
    }

    /// The devices with their user's language in one statement (a device's own language may
    /// lack a text its user's has, NO-5: every owner's is read, and a separate read of the
    /// languages would be a third statement per batch), then the preferences in a second.
    func planningReads(app: String, userIDs: [String], scope: String?, now: Int64) throws(StorageError) -> PlanningReads? {
        if userIDs.isEmpty { return PlanningReads(devices: [], userLocales: [:], preferences: []) }
        var locales: [String: String] = [:]
        let devices = try mapped {
            try connection.query(Self.selectWithActive(now: "$3", also: ", x.locale AS user_locale")
                                 + " LEFT JOIN users x ON x.app = d.app AND x.user_id = d.user_id"
                                 + " WHERE d.app = $1::text AND d.user_id = ANY($2::text[])",
                                 [app, PostgresTextArray(elements: Array(Set(userIDs))), now]).map { row in
                let device = try DeviceRecord(row: row)
                if let locale: String = try row.nullable("user_locale") { locales[device.userID] = locale }
                return device
            }
        }
        let owners = Array(Set(devices.map(\.userID)))
        let preferences = try PostgresPreferenceRepository(connection: connection).list(app: app, userIDs: owners, scopes: scope.map { [$0] } ?? [])
        return PlanningReads(devices: Self.sorted(devices), userLocales: locales, preferences: preferences)
    }

    func delete(app: String, id: String, userID: String) throws(StorageError) -> Bool {
        try mapped { try connection.run("DELETE FROM devices WHERE id = $1::text AND user_id = $2::text AND app = $3::text", [id, userID, app]) > 0 }
    }

    func delete(app: String, token: String, userID: String) throws(StorageError) -> Int {
        try mapped { try connection.run("DELETE FROM devices WHERE token = $1::text AND user_id = $2::text AND app = $3::text", [token, userID, app]) }
    }

    func deleteInvalid(id: String, invalidSince: Int64?) throws(StorageError) -> Bool {
        try mapped {
            if let invalidSince {
                return try connection.run("DELETE FROM devices WHERE id = $1::text AND last_seen_at <= $2::bigint", [id, invalidSince]) > 0
            }
            return try connection.run("DELETE FROM devices WHERE id = $1::text", [id]) > 0
        }
    }

    func purge(notSeenSince cutoff: Int64) throws(StorageError) -> Int {
        try mapped { try connection.run("DELETE FROM devices WHERE last_seen_at < $1::bigint", [cutoff]) }
    }
}

extension DeviceRecord {
    init(row: PostgresRow) throws {
        self.init(id: try row.value("id"), app: try row.value("app"), userID: try row.value("user_id"), sessionID: try row.nullable("sid"),
                  platform: try row.value("platform"), provider: try row.value("provider"), token: try row.value("token"),
                  environment: try row.nullable("environment"), installationID: try row.nullable("installation_id"),
                  locale: try row.nullable("locale"), appVersion: try row.nullable("app_version"),
                  deviceName: try row.nullable("device_name"), createdAt: try row.value("created_at"),
                  lastSeenAt: try row.value("last_seen_at"), sessionActive: try row.value("active"),
                  sessionExpiresAt: try row.nullable("session_expires_at"))
    }
}
