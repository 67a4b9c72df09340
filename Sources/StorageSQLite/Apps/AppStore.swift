import Foundation
import HeraldCore

/// The SQL of the apps table (AP-1, ADR 0006) and of deleting an app's rows everywhere.
enum AppStore {
    /// Also removes what an earlier app of the same id left: a request authorised before that app
    /// was deleted may have written after the delete, and a new app must not inherit it.
    static func create(_ connection: SQLiteConnection, _ app: AppRecord) throws(SQLiteError) {
        try purgeData(connection, app.id.rawValue)
        try connection.run("INSERT INTO apps (id, settings_json, secrets_json, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                           [app.id.rawValue, try encode(app.settings), try encode(secrets(app)), app.createdAt, app.updatedAt])
        try insertKeys(connection, app)
    }

    static func update(_ connection: SQLiteConnection, _ app: AppRecord) throws(SQLiteError) -> Bool {
        try connection.run("UPDATE apps SET settings_json = ?, secrets_json = ?, updated_at = ? WHERE id = ?",
                           [try encode(app.settings), try encode(secrets(app)), app.updatedAt, app.id.rawValue])
        guard connection.changes > 0 else { return false }
        try connection.run("DELETE FROM app_server_keys WHERE app = ?", [app.id.rawValue])
        try insertKeys(connection, app)
        return true
    }

    static func find(_ connection: SQLiteConnection, _ id: AppID) throws(SQLiteError) -> AppRecord? {
        guard let row = try connection.queryOne("SELECT * FROM apps WHERE id = ?", [id.rawValue]) else { return nil }
        return try record(connection, row)
    }

    static func list(_ connection: SQLiteConnection) throws(SQLiteError) -> [AppRecord] {
        var apps: [AppRecord] = []
        for row in try connection.query("SELECT * FROM apps ORDER BY id") { apps.append(try record(connection, row)) }
        return apps
    }

    /// Tenant tables and how their rows name the app. Deliveries carry no app: they go with the
    /// app's notifications, before those rows. Jobs carry it since schema 13; those of its devices
    /// also go by device, for jobs of another app's name queued before.
    static func delete(_ connection: SQLiteConnection, _ id: AppID) throws(SQLiteError) -> Bool {
        let app = id.rawValue
        try connection.run("DELETE FROM apps WHERE id = ?", [app])
        guard connection.changes > 0 else { return false }
        try purgeData(connection, app)
        return true
    }

    /// Every row of app `app` outside the apps table.
    private static func purgeData(_ connection: SQLiteConnection, _ app: String) throws(SQLiteError) {
        // Before the devices: it finds their jobs by device id. It keeps the done jobs' count.
        try JobStore.delete(connection, app: app)
        try connection.run("DELETE FROM deliveries WHERE notification_id IN (SELECT id FROM notifications WHERE app = ?)", [app])
        try connection.run("""
            DELETE FROM notification_plans WHERE id IN (SELECT plan_id FROM notifications WHERE app = ? AND plan_id IS NOT NULL)
            """, [app])
        for table in ["devices", "notifications", "sessions", "push_preferences", "scope_members", "idempotency_keys", "users",
                      "app_server_keys"] {
            // The table names are this list's literals, not input.
            try connection.run("DELETE FROM \(table) WHERE app = ?", [app])
        }
    }

    private static func insertKeys(_ connection: SQLiteConnection, _ app: AppRecord) throws(SQLiteError) {
        for key in app.serverKeys {
            try connection.run("INSERT INTO app_server_keys (hash, app, created_at) VALUES (?, ?, ?)",
                               [key.hash, app.id.rawValue, key.createdAt])
        }
    }

    private static func record(_ connection: SQLiteConnection, _ row: Row) throws(SQLiteError) -> AppRecord {
        let idText: String = try row["id"]
        guard let id = AppID(idText) else { throw .decode(column: "id", expected: "AppID", found: idText) }
        let settings = try decode(AppSettings.self, try row["settings_json"], column: "settings_json")
        let sealed = try decode([String: SealedSecret].self, try row["secrets_json"], column: "secrets_json")
        var secrets: [AppSecretField: SealedSecret] = [:]
        for (name, value) in sealed {
            guard let field = AppSecretField(rawValue: name) else { throw .decode(column: "secrets_json", expected: "AppSecretField", found: name) }
            secrets[field] = value
        }
        var keys: [ServerKeyEntry] = []
        for key in try connection.query("SELECT hash, created_at FROM app_server_keys WHERE app = ? ORDER BY created_at, hash", [idText]) {
            keys.append(ServerKeyEntry(hash: try key["hash"], createdAt: try key["created_at"]))
        }
        return AppRecord(id: id, settings: settings, secrets: secrets, serverKeys: keys,
                         createdAt: try row["created_at"], updatedAt: try row["updated_at"])
    }

    private static func secrets(_ app: AppRecord) -> [String: SealedSecret] {
        Dictionary(uniqueKeysWithValues: app.secrets.map { ($0.key.rawValue, $0.value) })
    }

    private static func encode<T: Encodable>(_ value: T) throws(SQLiteError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(value) else { throw .misuse(message: "cannot encode \(T.self) as JSON") }
        return String(decoding: data, as: UTF8.self)
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ text: String, column: String) throws(SQLiteError) -> T {
        guard let value = try? JSONDecoder().decode(T.self, from: Data(text.utf8)) else {
            throw .decode(column: column, expected: "\(T.self) JSON", found: String(text.prefix(40)))
        }
        return value
    }
}
