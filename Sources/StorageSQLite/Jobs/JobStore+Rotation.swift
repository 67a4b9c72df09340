import HeraldCore

extension JobStore {
    /// Moves the `push.deliver` and `push.receipt` jobs queued or leased for `ids` (devices a
    /// token rotation replaced, DV-1) to `target`: only the payload's `device_id` changes, so the push id,
    /// attempts, due time and lease stay, and a send in flight under the lease is still fenced by
    /// it (`JobQueue.movePushJobs`). A job whose notification already has a job queued or leased
    /// for `target` stays, as do payloads this version cannot read (`PushJobRotation` decides).
    ///
    /// Reads the jobs in flight of each kind through `jobs_due` (one range per state and kind)
    /// and, for the jobs leased at insert, a walk from the lease floor (ADR 0017), each
    /// payload's device read by `json_extract`: a rotation is rare, and a column for the device
    /// would be written by every push. Run inside the registration's transaction on the writer.
    /// - Returns: how many jobs were moved.
    static func movePushJobs(_ connection: SQLiteConnection, fromDevices ids: [String], toDevice target: String) throws(SQLiteError) -> Int {
        let rotation = PushJobRotation(fromDevices: ids, toDevice: target)
        if rotation.isEmpty { return 0 }
        let devices = JSONStringArray.encode(rotation.devicesToRead)
        var jobs: [(id: Int64, kind: String, payloadText: String)] = []
        let floor = try LeaseFloor.walkStart(connection)
        for (kind, devicePath) in movableKinds {
            var reads: [(sql: String, values: [any SQLiteBindable])] = movableSQL.map { ($0, [kind, devices, devicePath]) }
            if let floor {
                reads.append((movableLeasedAtInsertSQL, [kind, devices, devicePath, floor]))
            }
            for read in reads {
                for row in try connection.query(read.sql, read.values) {
                    jobs.append((try row[0], kind, try row[1, as: String.self]))
                }
            }
        }
        let moves = rotation.moves(of: jobs)
        if !moves.isEmpty { connection.pushRotations?.count() }
        var moved = 0
        for move in moves {
            try connection.run("UPDATE jobs SET payload_json = ? WHERE id = ?", [move.payloadText, move.id])
            moved += connection.changes
        }
        return moved
    }

    /// `movePushJobs`' reads (kind, JSON array of device ids, the payload's device path, lease
    /// floor), one per state it moves: a state written in lets SQLite use the partial `jobs_due`
    /// (see `inDueIndex`); the jobs leased at insert, out of it, from the floor up.
    private static let movableSQL = ["state = 'queued' AND \(indexed)", "state = 'leased' AND \(indexed)"].map(movable)
    private static let movableLeasedAtInsertSQL = movable(leasedAtInsert(from: 4))
    private static func movable(_ rows: String) -> String {
        """
        SELECT id, payload_json FROM jobs
        WHERE \(rows) AND kind = ?1 AND json_valid(payload_json)
          AND json_extract(payload_json, ?3) IN (SELECT value FROM json_each(?2))
        """
    }

    /// The kinds a rotation moves (`PushJobRotation.kinds`), each with where its payload names the device.
    private static let movableKinds = [(DeliveryJobPayload.kind, "$.device_id"), (PushReceiptJobPayload.kind, "$.delivery.device_id")]
}
