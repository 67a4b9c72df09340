import HeraldCore

extension NotificationRecord {
    init(row: Row) throws(SQLiteError) {
        self.init(sequence: try row["seq"], id: try row["id"], app: try row["app"], userID: try row["user_id"],
                  kind: try row["kind"], scope: try row["scope"], titleJSON: try row["title_json"], bodyJSON: try row["body_json"],
                  argsJSON: try row["args_json"], dataJSON: try row["data_json"], collapseKey: try row["collapse_key"],
                  threadID: try row["thread_id"], priority: try row["priority"], expiresAt: try row["expires_at"],
                  inInbox: try row["in_inbox"], cursor: try row["cursor"],
                  planID: try row["plan_id"], planJSON: try row["plan_json"],
                  createdAt: try row["created_at"], readAt: try row["read_at"], 
                  // Absent before migration 19 (tests read rows of older schemas).
                  planLeaseUntil: (try? row["plan_lease_until", as: Int64?.self]) ?? nil)
    }
}
