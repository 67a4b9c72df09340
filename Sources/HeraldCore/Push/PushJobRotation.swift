import Synchronization

/// Which push jobs a token rotation moves, and how (DV-1, ADR 0014): the decision both storage
/// adapters apply to the jobs in flight they read (`JobQueue.movePushJobs`), made once here.
///
/// A `push.deliver` job queued or leased for a replaced device moves to the device that replaced
/// it, only its payload's `device_id` rewritten (push id, attempts, due time and lease stay). A
/// `push.receipt` job (PU-8a) moves too: the push its receipt may send again (`delivery`) names
/// the new device, and `sent_device_id` keeps the device the push went to, whose token the
/// receipt is about. One job per notification reaches the new device, oldest first: a
/// notification that already has a job for it, or whose job for another replaced device moved
/// first, keeps the rest where they are.
public struct PushJobRotation: Sendable {
    /// The job kinds a rotation moves.
    public static let kinds = [DeliveryJobPayload.kind, PushReceiptJobPayload.kind]

    /// Rotations that moved jobs, counted by the storage that moved them (`Storage.pushRotations`)
    /// when their jobs are decided (inside the registration's transaction, after its read of the
    /// jobs and before its commit): the `DeliveryWorker` reads it before it reads a job's device
    /// (the claim's write, the insert of a job leased at insert) and again before the send; a
    /// change sends it back to the job row, which names the device the job goes to now (ADR 0014).
    /// A counter, not a lock: the worker's common path reads one word. The storage's, not the
    /// process's: another storage's rotations (another suite's, run in parallel) move none of
    /// this worker's jobs, and counting them sent its pushes to read their rows again.
    public final class Count: Sendable {
        private let generation = Atomic<UInt64>(0)

        public init() {}

        /// The rotations counted so far: a job whose device is read after this may have been
        /// moved since iff it changes.
        public var current: UInt64 { generation.load(ordering: .acquiring) }

        /// Counts one rotation that moved jobs; call it inside the registration's transaction.
        public func count() {
            generation.add(1, ordering: .sequentiallyConsistent)
        }
    }

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

    /// The rewrites to make, oldest job first; the adapter counts a non-empty answer in its
    /// storage's `Count` before its commit.
    /// - Parameter jobs: the jobs in flight of `kinds` naming any of `devicesToRead` (`payloadText`:
    ///   `payload_json`); payloads this version cannot read, and jobs of other kinds, stay.
    /// - Returns: each job to move with its new `payload_json`.
    public func moves(of jobs: [(id: Int64, kind: String, payloadText: String)]) -> [(id: Int64, payloadText: String)] {
        var owed: [(id: Int64, job: MovableJob)] = []
        var targetNotifications: Set<String> = []
        for job in jobs {
            guard let movable = MovableJob(kind: job.kind, payloadText: job.payloadText) else { continue }
            if movable.delivery.deviceID == target {
                if let notification = movable.delivery.origin?.notificationID { targetNotifications.insert(notification) }
            } else if replaced.contains(movable.delivery.deviceID) {
                owed.append((job.id, movable))
            }
        }
        var moves: [(id: Int64, payloadText: String)] = []
        for (id, job) in owed.sorted(by: { $0.id < $1.id }) {
            if let notification = job.delivery.origin?.notificationID, !targetNotifications.insert(notification).inserted { continue }
            moves.append((id, job.moved(to: target)))
        }
        return moves
    }
}

/// A job a rotation can move: a push, or the receipt check of one.
private enum MovableJob {
    case deliver(DeliveryJobPayload)
    case receipt(PushReceiptJobPayload)

    init?(kind: String, payloadText: String) {
        switch kind {
        case DeliveryJobPayload.kind:
            guard let payload = try? DeliveryJobPayload.decode(payloadText) else { return nil }
            self = .deliver(payload)
        case PushReceiptJobPayload.kind:
            guard let payload = try? PushReceiptJobPayload.decode(payloadText) else { return nil }
            self = .receipt(payload)
        default:
            return nil
        }
    }

    /// The push the job sends (or may send again).
    var delivery: DeliveryJobPayload {
        switch self {
        case .deliver(let payload): payload
        case .receipt(let payload): payload.delivery
        }
    }

    /// Names `target` instead. - Returns: the new `payload_json`.
    func moved(to target: String) -> String {
        switch self {
        case .deliver(var payload):
            payload.deviceID = target
            return payload.jsonText()
        case .receipt(var payload):
            // The receipt stays about the token the push went to (its first device, if moved twice).
            payload.sentDeviceID = payload.sentDeviceID ?? payload.delivery.deviceID
            payload.delivery.deviceID = target
            return payload.jsonText()
        }
    }
}
