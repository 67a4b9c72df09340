import HeraldCore

extension PostgresJobQueue {
    /// As SQLite's adapter does (`JobQueue.movePushJobs`): the jobs in flight (through
    /// `jobs_state_id`) whose text names one of the devices are locked (`FOR UPDATE`: a claim on
    /// another node skips them, an outcome recorded there waits for this commit and then finds its
    /// lease unchanged), and `PushJobRotation` decides which to rewrite (only their `device_id`;
    /// a receipt job's is its push's, the `"device_id":"…"` text the search finds in it too).
    /// The text is searched, not cast to `jsonb`: a cast of one unreadable payload would fail the
    /// whole registration.
    func movePushJobs(fromDevices ids: [String], toDevice target: String) throws(StorageError) -> Int {
        let rotation = PushJobRotation(fromDevices: ids, toDevice: target)
        if rotation.isEmpty { return 0 }
        return try mapped {
            let rows = try connection.query("""
                SELECT id, kind, payload_json FROM jobs
                WHERE state IN ('queued', 'leased') AND kind = ANY($1::text[])
                  AND EXISTS (SELECT 1 FROM unnest($2::text[]) AS d(id)
                              WHERE strpos(payload_json, '"device_id":"' || d.id || '"') > 0)
                ORDER BY id FOR UPDATE
                """, [PostgresTextArray(elements: PushJobRotation.kinds), PostgresTextArray(elements: rotation.devicesToRead)])
            let jobs: [(id: Int64, kind: String, payloadText: String)] = try rows.map {
                (try $0.value("id"), try $0.value("kind", as: String.self), try $0.value("payload_json", as: String.self))
            }
            let moves = rotation.moves(of: jobs)
            if !moves.isEmpty { rotations.count() }
            var moved = 0
            for move in moves {
                moved += try connection.run("UPDATE jobs SET payload_json = $1::text WHERE id = $2::bigint", [move.payloadText, move.id])
            }
            return moved
        }
    }
}
