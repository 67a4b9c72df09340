import Dispatch
import Foundation
import Synchronization

/// Jobs leased at insert (ADR 0007): the slot or backlog place taken in the inserting unit, the
/// hand-over after its commit, and the sends of handed jobs as slots free up.
extension DeliveryWorker {
    // MARK: Jobs leased at insert (ADR 0007)

    /// Queues one `push.deliver` job in `tx` for `device`, leased to this worker at insert when
    /// it is polling, the job is due (`runAt <= now`) and a slot is free (taken now): then the
    /// job, its payload and `device` (read in `tx`) are handed to the worker once `tx` commits,
    /// with no claim and no device read. Otherwise (or when the storage cannot report the
    /// commit) the job is queued for a claim, as `JobQueue.enqueue` does.
    ///
    /// - Parameters:
    ///   - payload: the job; its text is what the row stores.
    ///   - device: the device `payload` names, as `tx` read it.
    ///   - app: the job's app (ADR 0006).
    ///   - runAt: unix ms at which it is due.
    ///   - now: unix ms.
    ///   - tx: the caller's write unit; the job commits or rolls back with it.
    ///   - handoff: the unit's hand-over (`handoff(in:)`), shared by every job the unit queues;
    ///     nil: one of its own.
    /// - Returns: the job's id.
    /// - Throws: `StorageError` from the insert.
    public func enqueue(_ payload: consuming DeliveryJobPayload, device: DeviceRecord, app: String, runAt: Int64, now: Int64,
                        in tx: any StorageTransaction, handoff: Handoff? = nil) throws(StorageError) -> Int64 {
        try enqueueReportingLease(payload, device: device, app: app, runAt: runAt, now: now, in: tx, handoff: handoff).id
    }

    /// `enqueue(_:device:app:runAt:now:in:)`, also telling whether the job was leased at insert
    /// (handed to this worker after the commit: no claim will take it) or queued for a claim.
    /// The `Notifier` counts only the latter in its `PushBacklog`.
    /// - Parameter handoff: the unit's hand-over (`handoff(in:)`), so that every job the unit
    ///   leases reaches the worker in one hop after the commit; nil: one of its own.
    /// - Returns: the job's id, and `leased`: true when it was leased at insert.
    /// - Throws: `StorageError` from the insert.
    /// (`payload` is consumed: the hand-over keeps it without a copy of its notification.)
    public func enqueueReportingLease(_ payload: consuming DeliveryJobPayload, device: DeviceRecord, app: String, runAt: Int64, now: Int64,
                                      in tx: any StorageTransaction, handoff: Handoff? = nil) throws(StorageError) -> (id: Int64, leased: Bool) {
        guard runAt <= now, handoffOpen.load(ordering: .relaxed), let handoff = handoff ?? self.handoff(in: tx),
              let slotted = reserve() else {
            return (try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: payload.jsonText(), app: app, runAt: runAt, now: now), false)
        }
        // Its sender gets the payload as a value: the text is only stored. A claim reads it
        // back only after this process lost the job (a restart, a lease run out, a retry),
        // by then long out of the cache's memo.
        let text = payload.jsonTextHandedOver()
        // Before the commit, so after the caller's read of `device`: a rotation that moves this
        // job reads it after the commit and counts after that (ADR 0014).
        let generation = pushRotations.current
        let audience = pushAudience?.current
        let job: JobRecord
        do {
            job = try tx.jobs.enqueueLeased(kind: DeliveryJobPayload.kind, payloadJSON: text, app: app,
                                            leaseUntil: now + configuration.leaseMilliseconds, now: now)
        } catch {
            // No row: nothing to send, whether or not the caller goes on.
            unreserve(slotted: slotted)
            throw error
        }
        handoff.items.append(Handed(job: job, payload: payload, device: device, generation: generation, audience: audience,
                                    slotted: slotted))
        return (job.id, true)
    }

    /// The jobs one unit of work leases at insert, handed to the worker together once it commits:
    /// one hop to the worker's queue and one burst of sends for the unit, instead of a hop per
    /// job that the worker would take one at a time while the unit's end actions still run.
    /// Confined to the unit's thread (filled by its body, read by its end action).
    public final class Handoff: @unchecked Sendable {
        var items: [Handed] = []
    }

    /// A hand-over for the jobs `tx` leases at insert (pass it to each `enqueueReportingLease`
    /// of the unit); nil when the worker is not polling or the storage cannot report the unit's
    /// end (the jobs are then queued for a claim).
    public func handoff(in tx: any StorageTransaction) -> Handoff? {
        guard handoffOpen.load(ordering: .relaxed) else { return nil }
        let handoff = Handoff()
        let kept = tx.whenEnded { [self] committed in
            let items = handoff.items
            handoff.items = []
            guard !items.isEmpty else { return }
            // Rolled back: the rows are gone, nothing to send.
            guard committed else { return items.forEach { unreserve(slotted: $0.slotted) } }
            handOver(items)
        }
        return kept ? handoff : nil
    }

    /// A job leased at insert, with what its sender needs.
    ///
    /// A class: it passes through four lists between the insert and its send (the unit's
    /// hand-over, the worker's inbox, the waiting list, the send), and as a struct each move
    /// copied its job, payload and device field by field, ~40 string retains and releases a
    /// copy (issue 17: ~5k instructions a push).
    final class Handed: Sendable {
        let job: JobRecord
        let payload: DeliveryJobPayload
        let device: DeviceRecord
        /// `pushRotations.current` in the inserting unit: a change by the send means
        /// a rotation may have moved the job to another device (ADR 0014).
        let generation: UInt64
        /// `pushAudience`'s count in the inserting unit: unchanged by a backlogged send, `device`
        /// is still the one to push; nil: no counter, read again.
        let audience: UInt64?
        /// It holds a send slot since its insert; else it waits for one (`backlogged`).
        let slotted: Bool

        init(job: JobRecord, payload: DeliveryJobPayload, device: DeviceRecord, generation: UInt64, audience: UInt64?, slotted: Bool) {
            self.job = job
            self.payload = payload
            self.device = device
            self.generation = generation
            self.audience = audience
            self.slotted = slotted
        }
    }

    /// Reserves room for a job leased at insert: a send slot when one is free (true), else a
    /// place in the backlog (false); nil when both are full.
    func reserve() -> Bool? {
        if takeSlot() { return true }
        return Self.increment(backlogged, below: configuration.leasedAtInsertBacklog) ? false : nil
    }

    /// Adds one to `counter` unless that would reach `limit`, atomically.
    /// - Returns: whether it added one.
    static func increment(_ counter: borrowing Atomic<Int>, below limit: Int) -> Bool {
        var current = counter.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, found) = counter.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = found
        }
        return false
    }

    /// Gives back what `reserve` took, for a job that will not be sent here.
    func unreserve(slotted: Bool) {
        if slotted { releaseSlot() } else { backlogged.subtract(1, ordering: .relaxed) }
    }

    /// Takes a send slot for a job leased at insert, if one is free.
    func takeSlot() -> Bool {
        Self.increment(sending, below: configuration.maxInFlight)
    }

    /// Gives back a slot taken for a job that will not be sent here.
    func releaseSlot() {
        sending.subtract(1, ordering: .relaxed)
    }

    /// Called after the commit, on the storage's thread: the jobs of one unit (and of others
    /// not yet taken) go to `queue` in one hop.
    func handOver(_ items: [Handed]) {
        let first = handed.withLock { list in
            list.append(contentsOf: items)
            return list.count == items.count
        }
        if first { queue.async { [self] in sendHanded() } }
    }

    /// Sends the jobs handed over since the last call, each holding the slot taken at insert. A
    /// stopped worker sends none: they stay leased, and the next start releases them.
    func sendHanded() {
        dispatchPrecondition(condition: .onQueue(queue))
        let items = handed.withLock { list in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
        guard !items.isEmpty else { return }
        guard state == .polling else {
            for item in items { unreserve(slotted: item.slotted) }
            return
        }
        for item in items {
            if item.slotted { sendOne(item) } else { waitingHanded.append(item) }
        }
        startWaiting()
    }

    /// Sends the jobs waiting for a slot while slots are free, oldest first. One that waited
    /// past half its lease is not sent: a claim takes it once its lease has run out (sending it
    /// this late could race that claim).
    func startWaiting() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard waitingHead < waitingHanded.count else { return }
        let now = clock.unixMilliseconds, margin = configuration.leaseMilliseconds / 2
        var waited: [Handed] = []
        while waitingHead < waitingHanded.count, takeSlot() {
            let item = waitingHanded[waitingHead]
            waitingHead += 1
            backlogged.subtract(1, ordering: .relaxed)
            if let until = item.job.leaseUntil, until - now <= margin {
                releaseSlot()
                continue
            }
            waited.append(item)
        }
        sendWaited(waited)
        // Shifting the rest after each start was ~3k instructions a push with a call of 1,000 waiting.
        if waitingHead == waitingHanded.count {
            waitingHanded.removeAll(keepingCapacity: true)
            waitingHead = 0
        } else if waitingHead >= 256 {
            waitingHanded.removeFirst(waitingHead)
            waitingHead = 0
        }
    }

    /// Sends one job leased at insert that holds a slot, to the device its inserting unit read.
    func sendOne(_ item: Handed) {
        dispatchPrecondition(condition: .onQueue(queue))
        inFlight += 1
        if let prepared = screen(item.job, payload: item.payload, generation: item.generation, owner: item.device.userID, done: handedDone) {
            deliver(prepared, device: item.device, audience: item.audience)
        }
    }

    /// Sends jobs leased at insert that waited in the backlog for a slot (each holds one now),
    /// reading their devices again first, as a claim does, unless nothing could have changed them.
    ///
    /// The device their inserting unit read may be gone by now (the user deleted it or logged
    /// out: `DELETE /v1/me/devices/{id}`, `DELETE /v1/sessions/{sid}`), or its user may have
    /// turned push off: a backlog waits seconds under load (up to half the lease), and sending
    /// from the insert's read pushed to a device its user had let go of (breaker11). A job sent
    /// at once (`sendOne`) keeps the insert's read: it is milliseconds old. So does a waited one
    /// when no such write was counted since its insert (`Storage.pushAudience`: a token moved to
    /// another user counts too; a storage without one does not serialise writes), its device's session has not
    /// passed the expiry the insert read (no write marks that: the clock does), and no earlier
    /// waited job is still being read (oldest first, ADR 0007). Whatever is read, a device that
    /// is now another user's does not get the push (`Prepared.owner`).
    func sendWaited(_ items: [Handed]) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !items.isEmpty else { return }
        let audience = pushAudience?.current
        for item in items {
            if let audience, item.audience == audience, !waitedReading, waitedToRead.isEmpty, inSession(item) {
                sendOne(item)
                continue
            }
            inFlight += 1
            if let prepared = screen(item.job, payload: item.payload, generation: item.generation, owner: item.device.userID,
                                     done: handedDone) { waitedToRead.append(prepared) }
        }
        readWaited()
    }

    /// Whether the session of the device `item`'s insert read has not passed the expiry that read
    /// saw; the clock is read only for a session that has one.
    private func inSession(_ item: Handed) -> Bool {
        guard let expiry = item.device.sessionExpiresAt else { return true }
        return expiry > clock.unixMilliseconds
    }

    /// Reads the devices of the jobs in `waitedToRead` and sends them, unless a read for earlier
    /// ones still runs (then after it, with what was added meanwhile).
    private func readWaited() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !waitedReading, !waitedToRead.isEmpty else { return }
        let batch = waitedToRead
        waitedToRead.removeAll(keepingCapacity: true)
        waitedReading = true
        deliverReadingDevices(batch) { [self] in
            queue.async { [self] in
                waitedReading = false
                readWaited()
            }
        }
    }

    /// The `done` of a job leased at insert: its slot is freed once its outcome is recorded (a
    /// held outcome keeps it until written).
    private var handedDone: @Sendable (Recorded) -> Void {
        { [self] result in
            if case .held = result {} else { finished() }
        }
    }

}
