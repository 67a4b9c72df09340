import Foundation
import HeraldCore

/// `AppRepository` on PostgreSQL (AP-1, ADR 0006), as `AppStore` does it on SQLite: the same
/// tables, the same JSON in `settings_json` and `secrets_json` (sorted keys), the same deletes.
struct PostgresAppRepository: AppRepository {
    let connection: PostgresConnection

    /// Also removes what an earlier app of the same id left (see `AppStore.create`).
    func create(_ app: AppRecord) throws(StorageError) {
        try mapped {
            try purgeData(app.id.rawValue)
            try connection.run("""
                INSERT INTO apps (id, settings_json, secrets_json, created_at, updated_at)
                VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::bigint)
                """, [app.id.rawValue, try Self.encode(app.settings), try Self.encode(Self.secrets(app)), app.createdAt, app.updatedAt])
            try insertKeys(app)
        }
    }

    func update(_ app: AppRecord) throws(StorageError) -> Bool {
        try mapped {
            let changed = try connection.run("""
                UPDATE apps SET settings_json = $1::text, secrets_json = $2::text, updated_at = $3::bigint WHERE id = $4::text
                """, [try Self.encode(app.settings), try Self.encode(Self.secrets(app)), app.updatedAt, app.id.rawValue])
            guard changed > 0 else { return false }
            try connection.run("DELETE FROM app_server_keys WHERE app = $1::text", [app.id.rawValue])
            try insertKeys(app)
            return true
        }
    }

    func find(_ id: AppID) throws(StorageError) -> AppRecord? {
        try mapped {
            guard let row = try connection.queryOne("SELECT * FROM apps WHERE id = $1::text", [id.rawValue]) else { return nil }
            return try record(row)
        }
    }

    func list() throws(StorageError) -> [AppRecord] {
        try mapped { try connection.query("SELECT * FROM apps ORDER BY id").map(record) }
    }

    /// Deliveries carry no app column: they go with the app's notifications, before those rows.
    /// Jobs carry it since migration 12; those of its devices also go by device (jobs queued
    /// before under another app's name). A job names its device in its payload's top-level
    /// `device_id`; payloads are read here rather than cast to `jsonb` in SQL, so one malformed
    /// payload (which SQLite's `json_valid` skips) cannot fail the whole delete.
    func delete(_ id: AppID) throws(StorageError) -> Bool {
        let app = id.rawValue
        return try mapped {
            guard try connection.run("DELETE FROM apps WHERE id = $1::text", [app]) > 0 else { return false }
            try purgeData(app)
            return true
        }
    }

    /// Every row of app `app` outside the apps table.
    private func purgeData(_ app: String) throws {
        let devices = Set(try connection.query("SELECT id FROM devices WHERE app = $1::text", [app]).map { try $0.value("id", as: String.self) })
        if !devices.isEmpty {
            var jobs: [String] = []
            for row in try connection.query("SELECT id::text AS id, payload_json FROM jobs WHERE payload_json LIKE '%device\\_id%'") {
                let payload: String = try row.value("payload_json")
                guard let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
                      let device = object["device_id"] as? String, devices.contains(device) else { continue }
                jobs.append(try row.value("id"))
            }
            if !jobs.isEmpty {
                try connection.run("DELETE FROM jobs WHERE id::text = ANY($1::text[])", [PostgresTextArray(elements: jobs)])
            }
        }
        try connection.run("DELETE FROM deliveries WHERE notification_id IN (SELECT id FROM notifications WHERE app = $1::text)", [app])
        try connection.run("""
            DELETE FROM notification_plans WHERE id IN (SELECT plan_id FROM notifications WHERE app = $1::text AND plan_id IS NOT NULL)
            """, [app])
        for table in ["jobs", "devices", "notifications", "sessions", "push_preferences", "scope_members", "idempotency_keys", "users",
                      "app_server_keys"] {
            // The table names are this list's literals, not input.
            try connection.run("DELETE FROM \(table) WHERE app = $1::text", [app])
        }
    }

    private func insertKeys(_ app: AppRecord) throws {
        for key in app.serverKeys {
            try connection.run("INSERT INTO app_server_keys (hash, app, created_at) VALUES ($1::text, $2::text, $3::bigint)",
                               [key.hash, app.id.rawValue, key.createdAt])
        }
    }

    private func record(_ row: PostgresRow) throws -> AppRecord {
        let idText: String = try row.value("id")
        guard let id = AppID(idText) else { throw PostgresError.decode(column: "id", expected: "AppID", found: idText) }
        let settings = try Self.decode(AppSettings.self, try row.value("settings_json"), column: "settings_json")
        let sealed = try Self.decode([String: SealedSecret].self, try row.value("secrets_json"), column: "secrets_json")
        var secrets: [AppSecretField: SealedSecret] = [:]
        for (name, value) in sealed {
            guard let field = AppSecretField(rawValue: name) else {
                throw PostgresError.decode(column: "secrets_json", expected: "AppSecretField", found: name)
            }
            secrets[field] = value
        }
        // `COLLATE "C"`: ties in time ordered by byte, as SQLite orders them.
        let keys = try connection.query("""
            SELECT hash, created_at FROM app_server_keys WHERE app = $1::text ORDER BY created_at, hash COLLATE "C"
            """, [idText]).map { key in ServerKeyEntry(hash: try key.value("hash"), createdAt: try key.value("created_at")) }
        return AppRecord(id: id, settings: settings, secrets: secrets, serverKeys: keys,
                         createdAt: try row.value("created_at"), updatedAt: try row.value("updated_at"))
    }

    private static func secrets(_ app: AppRecord) -> [String: SealedSecret] {
        Dictionary(uniqueKeysWithValues: app.secrets.map { ($0.key.rawValue, $0.value) })
    }

    private static func encode<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(value) else { throw PostgresError.misuse(message: "cannot encode \(T.self) as JSON") }
        return String(decoding: data, as: UTF8.self)
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ text: String, column: String) throws -> T {
        guard let value = try? JSONDecoder().decode(T.self, from: Data(text.utf8)) else {
            throw PostgresError.decode(column: column, expected: "\(T.self) JSON", found: String(text.prefix(40)))
        }
        return value
    }
}
