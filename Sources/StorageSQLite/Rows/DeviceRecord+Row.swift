import HeraldCore

extension DeviceRecord {
    /// The columns `init(row:)` reads, in its order, from `devices d` joined to `sessions s`
    /// (`:now` bound, for `active`). By position: looking 15 names up hashed each one, about a
    /// quarter of a device read (issue 17).
    static let selectColumns = """
        d.id, d.app, d.user_id, d.sid, d.platform, d.provider, d.token, d.environment, d.installation_id, d.locale, d.app_version,
        d.device_name, d.created_at, d.last_seen_at,
        (s.sid IS NOT NULL AND s.ended_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > :now)) AS active
        """

    /// The current row of `SELECT \(selectColumns)`, read in place.
    init(columns row: Statement.Columns) throws(SQLiteError) {
        self.init(id: try row[0], app: try row[1], userID: try row[2], sessionID: try row[3],
                  platform: try row[4], provider: try row[5], token: try row[6],
                  environment: try row[7], installationID: try row[8], locale: try row[9],
                  appVersion: try row[10], deviceName: try row[11], createdAt: try row[12],
                  lastSeenAt: try row[13], sessionActive: (try row[14, as: Int64.self]) != 0)
    }
}
