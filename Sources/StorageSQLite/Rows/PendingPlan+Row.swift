import HeraldCore

extension PendingPlan {
    init(row: Row) throws(SQLiteError) {
        self.init(id: try row["id"], planJSON: try row["plan_json"], createdAt: try row["created_at"],
                  claimedBy: try row["claimed_by"], leaseUntil: try row["lease_until"])
    }
}
