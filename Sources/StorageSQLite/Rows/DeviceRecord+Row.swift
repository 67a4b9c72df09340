import HeraldCore

extension DeviceRecord {
    init(row: Row) throws(SQLiteError) {
        self.init(id: try row["id"], app: try row["app"], userID: try row["user_id"], sessionID: try row["sid"],
                  platform: try row["platform"], provider: try row["provider"], token: try row["token"],
                  environment: try row["environment"], installationID: try row["installation_id"], locale: try row["locale"],
                  appVersion: try row["app_version"], deviceName: try row["device_name"], createdAt: try row["created_at"],
                  lastSeenAt: try row["last_seen_at"], sessionActive: (try row["active", as: Int64.self]) != 0)
    }
}
