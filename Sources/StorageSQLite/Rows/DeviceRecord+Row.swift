import HeraldCore

extension DeviceRecord {
    /// The columns `init(row:)` reads, in its order, from `devices d` joined to `sessions s`
    /// (`:now` bound, for `active`; the session's `expires_at` after it). By position: looking
    /// 15 names up hashed each one, about a quarter of a device read (issue 17).
    static let selectColumns = """
        d.id, d.app, d.user_id, d.sid, d.platform, d.provider, d.token, d.environment, d.installation_id, d.locale, d.app_version,
        d.device_name, d.created_at, d.last_seen_at,
        (s.sid IS NOT NULL AND s.ended_at IS NULL AND (s.expires_at IS NULL OR s.expires_at > :now)) AS active, s.expires_at
        """

    /// How many columns `selectColumns` names: a statement's own columns come after them.
    static let selectColumnCount: Int32 = 16

    /// The current row of `SELECT \(selectColumns)`, read in place.
    /// Each column through its typed reader: the generic subscript made, matched and dropped a
    /// `SQLiteValue` per column (issue 17: ~6.2k instructions a device of `POST /v1/push`).
    init(columns row: Statement.Columns) throws(SQLiteError) {
        self.init(id: try row.text(0), app: try row.text(1), userID: try row.text(2), sessionID: try row.optionalText(3),
                  platform: try row.text(4), provider: try row.text(5), token: try row.text(6),
                  environment: try row.optionalText(7), installationID: try row.optionalText(8), locale: try row.optionalText(9),
                  appVersion: try row.optionalText(10), deviceName: try row.optionalText(11), createdAt: try row.integer(12),
                  lastSeenAt: try row.integer(13), sessionActive: try row.integer(14) != 0,
                  sessionExpiresAt: try row.optionalInteger(15))
    }
}
