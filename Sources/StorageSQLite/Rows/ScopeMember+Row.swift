import HeraldCore

extension ScopeMember {
    init(row: Row) throws(SQLiteError) {
        self.init(app: try row["app"], scope: try row["scope"], userID: try row["user_id"],
                  permissions: try JSONStringArray.decode(try row["permissions_json"], column: "permissions_json"),
                  updatedAt: try row["updated_at"])
    }
}
