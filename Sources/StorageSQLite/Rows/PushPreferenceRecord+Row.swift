import HeraldCore

extension PushPreferenceRecord {
    init(row: Row) throws(SQLiteError) {
        let scope: String = try row["scope"]
        let events: String? = try row["enabled_events_json"]
        self.init(app: try row["app"], userID: try row["user_id"], scope: PreferenceStore.scope(fromColumn: scope),
                  isEnabled: try row["is_enabled"],
                  enabledEvents: try events.map { text throws(SQLiteError) in try JSONStringArray.decode(text, column: "enabled_events_json") },
                  updatedAt: try row["updated_at"])
    }
}
