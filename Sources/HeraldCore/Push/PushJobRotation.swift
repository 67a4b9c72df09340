/// Which `push.deliver` jobs a token rotation moves, and how (DV-1, ADR 0014): the decision both
/// storage adapters apply to the jobs in flight they read (`JobQueue.movePushJobs`), made once here.
///
/// A job queued or leased for a replaced device moves to the device that replaced it, only its
/// payload's `device_id` rewritten (push id, attempts, due time and lease stay). One job per
/// notification reaches the new device, oldest first: a notification that already has a job for
/// it, or whose job for another replaced device moved first, keeps the rest where they are.
public struct PushJobRotation: Sendable {
    /// The devices the rotation replaced, the new one left out.
    public let replaced: Set<String>
    /// The device that replaced them.
    public let target: String

    public init(fromDevices ids: [String], toDevice target: String) {
        replaced = Set(ids).subtracting([target])
        self.target = target
    }

    /// Nothing to move: no device other than the target was replaced.
    public var isEmpty: Bool { replaced.isEmpty }

    /// The device ids whose jobs in flight the adapter reads: the replaced ones and the target
    /// (whose own jobs tell which notifications it already has).
    public var devicesToRead: [String] { Array(replaced) + [target] }

    /// The rewrites to make, oldest job first.
    /// - Parameter jobs: the jobs in flight of `DeliveryJobPayload.kind` naming any of
    ///   `devicesToRead` (`payloadText`: `payload_json`); payloads this version cannot read stay.
    /// - Returns: each job to move with its new `payload_json`.
    public func moves(of jobs: [(id: Int64, payloadText: String)]) -> [(id: Int64, payloadText: String)] {
        var owed: [(id: Int64, payload: DeliveryJobPayload)] = []
        var targetNotifications: Set<String> = []
        for job in jobs {
            guard let payload = try? DeliveryJobPayload.decode(job.payloadText) else { continue }
            if payload.deviceID == target {
                if let notification = payload.origin?.notificationID { targetNotifications.insert(notification) }
            } else if replaced.contains(payload.deviceID) {
                owed.append((job.id, payload))
            }
        }
        var moves: [(id: Int64, payloadText: String)] = []
        for var job in owed.sorted(by: { $0.id < $1.id }) {
            if let notification = job.payload.origin?.notificationID, !targetNotifications.insert(notification).inserted { continue }
            job.payload.deviceID = target
            moves.append((job.id, job.payload.jsonText()))
        }
        return moves
    }
}
