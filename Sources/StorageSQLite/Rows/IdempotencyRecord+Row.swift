import HeraldCore

extension IdempotencyRecord {
    init(row: Row) throws(SQLiteError) {
        self.init(app: try row["app"], key: try row["key"], requestHash: try row["request_hash"],
                  responseJSON: try row["response_json"], complete: try row["complete"], createdAt: try row["created_at"])
    }
}
