import HeraldCore

extension PostgresJobQueue {
    /// As SQLite's adapter does (`JobQueue.movePushJobs`): the jobs in flight (through
    /// `jobs_state_id`) whose text names one of the devices are locked (`FOR UPDATE`: a claim on
    /// another node skips them, an outcome recorded there waits for this commit and then finds its
    /// lease unchanged), each payload read and checked here, and only its `device_id` rewritten.
    /// The text is searched, not cast to `jsonb`: a cast of one unreadable payload would fail the
    /// whole registration.
    func movePushJobs(fromDevices ids: [String], toDevice target: String) throws(StorageError) -> Int {
        let replaced = Set(ids).subtracting([target])
        if replaced.isEmpty { return 0 }
        return try mapped {
            let rows = try connection.query("""
                SELECT id, payload_json FROM jobs
                WHERE state IN ('queued', 'leased') AND kind = $1::text
                  AND EXISTS (SELECT 1 FROM unnest($2::text[]) AS d(id)
                              WHERE strpos(payload_json, '"device_id":"' || d.id || '"') > 0)
                ORDER BY id FOR UPDATE
                """, [DeliveryJobPayload.kind, PostgresTextArray(elements: Array(replaced) + [target])])
            var owed: [(id: Int64, payload: DeliveryJobPayload)] = []
            var targetNotifications: Set<String> = []
            for row in rows {
                guard let payload = try? DeliveryJobPayload.decode(try row.value("payload_json", as: String.self)) else { continue }
                if payload.deviceID == target {
                    if let notification = payload.origin?.notificationID { targetNotifications.insert(notification) }
                } else if replaced.contains(payload.deviceID) {
                    owed.append((try row.value("id"), payload))
                }
            }
            var moved = 0
            // Oldest first; one job per notification reaches the device, whichever device it was owed to.
            for var job in owed.sorted(by: { $0.id < $1.id }) {
                if let notification = job.payload.origin?.notificationID, !targetNotifications.insert(notification).inserted { continue }
                job.payload.deviceID = target
                moved += try connection.run("UPDATE jobs SET payload_json = $1::text WHERE id = $2::bigint", [job.payload.jsonText(), job.id])
            }
            return moved
        }
    }
}
