/// A job whose device a token rotation replaced between the read of its device and its send
/// (ADR 0014): the rotation moved the job row to the device that replaced it, so the row, not
/// the device read earlier, says where the push goes now.
extension DeliveryWorker {
    /// What the job row says now, read with its device in one snapshot.
    enum Current: Sendable {
        /// The job is no longer leased under this claim: another's to send and record.
        case leaseLost
        /// The job as stored (its device may have changed), that device (nil: gone) and whether
        /// its user has push switched off.
        case payload(DeliveryJobPayload, DeviceRecord?, pushDisabled: Bool)
    }

    /// Reads the job row again (fenced by comparing its lease with the claim's) and its device
    /// now, then sends through `deliver(_:device:pushDisabled:resolved:)`: to the device the row
    /// names, so a push moved by a rotation goes to the new token and never to both (nothing was
    /// sent under this lease yet, and the outcome is still recorded under it). Called only when the
    /// device was not found or a rotation counted since it was read: the rare path.
    ///
    /// A job no longer under this lease is not sent; its skip record fails the fence, as any
    /// outcome of a lost lease does. When the read fails, the job goes on with what was read
    /// before (`found`), as it did before this look.
    func resolveRotation(_ prepared: Prepared, device found: DeviceRecord?, pushDisabled: Bool) {
        let job = prepared.job, now = clock.unixMilliseconds
        let audience = pushAudience?.current
        storage.read({ tx -> Current in
            guard let stored = try tx.jobs.find(id: job.id, app: job.app), stored.state == .leased, stored.lease == job.lease else {
                return .leaseLost
            }
            // A payload this version cannot read again is the one it read at the claim.
            let payload = (try? DeliveryJobPayload.decode(stored.payloadJSON)) ?? prepared.payload
            guard let device = try tx.devices.find(id: payload.deviceID, now: now) else { return .payload(payload, nil, pushDisabled: false) }
            let off = try tx.preferences.switchedOff(app: device.app, userIDs: [device.userID]).contains(device.userID)
            return .payload(payload, device, pushDisabled: off)
        }) { [self] result in
            switch result {
            case .failure:
                deliver(prepared, device: found, pushDisabled: pushDisabled, resolved: true)
            case .success(.leaseLost):
                skip(job, origin: prepared.payload.origin, deviceID: prepared.payload.deviceID, outcome: .skippedSession,
                     note: "lease_lost", done: prepared.done)
            case .success(.payload(let payload, let device, let off)):
                let current = payload.deviceID == prepared.payload.deviceID
                    ? prepared
                    : Prepared(job: job, payload: payload, generation: prepared.generation, owner: prepared.owner, rechecked: prepared.rechecked,
                               done: prepared.done)
                deliver(current, device: device, pushDisabled: off, resolved: true, audience: audience)
            }
        }
    }
}
