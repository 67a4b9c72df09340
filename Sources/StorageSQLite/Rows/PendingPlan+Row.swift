import HeraldCore

extension PendingPlan {
    init(row: Row) throws(StorageError) {
        self.init(firstSequence: try row["first_seq"], lastSequence: try row["last_seq"], planJSON: try row["plan_json"],
                  createdAt: try row["created_at"])
    }
}
