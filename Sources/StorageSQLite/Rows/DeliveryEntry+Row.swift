import HeraldCore

extension DeliveryEntry {
    init(row: Row) throws(SQLiteError) {
        let rawOutcome: String = try row["outcome"]
        guard let outcome = DeliveryOutcome(rawValue: rawOutcome) else {
            throw .decode(column: "outcome", expected: "DeliveryOutcome", found: rawOutcome)
        }
        self.init(id: try row["id"], notificationID: try row["notification_id"], userID: try row["user_id"],
                  deviceID: try row["device_id"], connectionID: try row["connection_id"], sessionID: try row["session_id"],
                  outcome: outcome, providerMessageID: try row["provider_message_id"], jobID: try row["job_id"],
                  deliveryID: try row["delivery_id"], detail: try row["detail"], at: try row["at"])
    }
}
