import HeraldCore

extension SessionRecord {
    init(row: Row) throws(SQLiteError) {
        self.init(sid: try row["sid"], app: try row["app"], userID: try row["user_id"], createdAt: try row["created_at"],
                  lastSeenAt: try row["last_seen_at"], expiresAt: try row["expires_at"], endedAt: try row["ended_at"])
    }
}
