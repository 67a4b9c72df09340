import Foundation
import HeraldCore
import StorageSQLite
import Testing

/// DV-1's token rotation and the pushes it leaves owed (`JobQueue.movePushJobs`, ADR 0014), the
/// same on every adapter.
@Suite struct RotationContractTests {
    private func payload(_ device: String, notification: String?, id: PushID = .random()) -> DeliveryJobPayload {
        DeliveryJobPayload(deviceID: device, apnsID: id, notification: PushNotification(title: "t", body: "b"),
                           origin: notification.map { .init(notificationID: $0, userID: "u1", sessionID: "s1") })
    }

    private func device(_ tx: any StorageTransaction, token: String, session: String = "s1", platform: String = "ios",
                        id: String, now: Int64) throws -> DeviceRecord {
        try tx.devices.register(DeviceRegistration(userID: "u1", sessionID: session, platform: platform, provider: "apns", token: token),
                                sessionExpiresAt: nil, newID: id, now: now).device
    }

    @Test(arguments: Engine.available)
    func onlyTheJobsInFlightOfTheReplacedDevicesMoveWithTheirPushIDAndLease(engine: Engine) throws {
        try withStorage(engine) { storage in
            let pushID = try #require(PushID("EABEAE54-14A8-11E5-B60B-1697F925EC7B"))
            let kind = DeliveryJobPayload.kind
            let ids = try storage.writeSync { tx in
                let queued = try tx.jobs.enqueue(kind: kind, payloadJSON: payload("old", notification: "n1", id: pushID).jsonText(),
                                                 runAt: 5_000, now: 1_000)
                let leased = try tx.jobs.enqueueLeased(kind: kind, payloadJSON: payload("old", notification: "n2").jsonText(),
                                                       app: "default", leaseUntil: 60_000, now: 1_000).id
                let dead = try tx.jobs.enqueue(kind: kind, payloadJSON: payload("old", notification: "n4").jsonText(), runAt: 0, now: 1_000)
                let done = try tx.jobs.enqueue(kind: kind, payloadJSON: payload("old", notification: "n5").jsonText(), runAt: 0, now: 1_000)
                let other = try tx.jobs.enqueue(kind: kind, payloadJSON: payload("older", notification: "n6").jsonText(), runAt: 9_000, now: 1_000)
                // The new device has its own job for n3: the old one's for n3 is not moved onto it.
                _ = try tx.jobs.enqueue(kind: kind, payloadJSON: payload("new", notification: "n3").jsonText(), runAt: 9_000, now: 1_000)
                let twice = try tx.jobs.enqueue(kind: kind, payloadJSON: payload("old", notification: "n3").jsonText(), runAt: 9_000, now: 1_000)
                // Owed to both replaced devices, a notification moves once (the older job).
                let sameNote = try tx.jobs.enqueue(kind: kind, payloadJSON: payload("older", notification: "n1").jsonText(), runAt: 9_000, now: 1_000)
                let plain = try tx.jobs.enqueue(kind: kind, payloadJSON: payload("old", notification: nil).jsonText(), runAt: 9_000, now: 1_000)
                let unreadable = try tx.jobs.enqueue(kind: kind, payloadJSON: #"{"device_id":"old""#, runAt: 9_000, now: 1_000)
                let otherKind = try tx.jobs.enqueue(kind: "push.receipt", payloadJSON: #"{"device_id":"old"}"#, runAt: 9_000, now: 1_000)
                return (queued: queued, leased: leased, dead: dead, done: done, other: other, twice: twice, sameNote: sameNote, plain: plain,
                        unreadable: unreadable, otherKind: otherKind)
            }
            // `dead` and `done` finish through a claim (both were due at 0; `queued` is due at 5 000).
            try storage.writeSync { tx in
                for job in try tx.jobs.claim(kind: kind, limit: 10, leaseMilliseconds: 1_000, now: 2_000) {
                    if job.id == ids.dead { #expect(try tx.jobs.deadLetter(job.lease, error: "BadDeviceToken", now: 2_000)) }
                    if job.id == ids.done { #expect(try tx.jobs.complete(job.lease)) }
                }
            }
            let before = try storage.readSync { tx in try tx.jobs.find(id: ids.leased) }
            let moved = try storage.writeSync { tx in try tx.jobs.movePushJobs(fromDevices: ["old", "older"], toDevice: "new") }
            #expect(moved == 4)   // queued, leased, other, plain
            try storage.readSync { tx in
                func device(_ id: Int64) throws -> String? {
                    try tx.jobs.find(id: id).flatMap { try? DeliveryJobPayload.decode($0.payloadJSON).deviceID }
                }
                let queued = try #require(try tx.jobs.find(id: ids.queued))
                let decoded = try DeliveryJobPayload.decode(queued.payloadJSON)
                #expect(decoded.deviceID == "new" && decoded.apnsID == pushID.value && decoded.origin?.notificationID == "n1")
                #expect(queued.state == .queued && queued.runAt == 5_000 && queued.attempts == 0)
                let leased = try #require(try tx.jobs.find(id: ids.leased))
                #expect(try device(ids.leased) == "new" && leased.state == .leased && leased.lease == before?.lease
                        && leased.leaseUntil == 60_000)
                #expect(try device(ids.other) == "new" && device(ids.plain) == "new")
                #expect(try device(ids.dead) == "old" && device(ids.done) == "old" && device(ids.twice) == "old"
                        && device(ids.sameNote) == "older")
                #expect(try tx.jobs.find(id: ids.unreadable)?.payloadJSON == #"{"device_id":"old""#)
                #expect(try tx.jobs.find(id: ids.otherKind)?.payloadJSON == #"{"device_id":"old"}"#)
            }
            // The send in flight under the lease still records its outcome: the move is no new lease.
            let lease = try #require(before?.lease)
            #expect(try storage.writeSync { tx in try tx.jobs.retry(lease, runAt: 3_000, error: "503") })
            #expect(try storage.writeSync { tx in try tx.jobs.movePushJobs(fromDevices: ["gone"], toDevice: "new") } == 0)
            #expect(try storage.writeSync { tx in try tx.jobs.movePushJobs(fromDevices: ["new"], toDevice: "new") } == 0)
        }
    }

    @Test(arguments: Engine.available)
    func aRotatedTokenTakesTheJobsOwedToTheDeviceItReplaced(engine: Engine) throws {
        try withStorage(engine) { storage in
            let kind = DeliveryJobPayload.kind
            let (job, untouched) = try storage.writeSync { tx in
                let old = try device(tx, token: "t1", id: "d1", now: 100)
                let web = try device(tx, token: "w1", platform: "android", id: "d9", now: 100)
                let job = try tx.jobs.enqueue(kind: kind, payloadJSON: payload(old.id, notification: "n1").jsonText(), runAt: 0, now: 100)
                let untouched = try tx.jobs.enqueue(kind: kind, payloadJSON: payload(web.id, notification: "n1").jsonText(), runAt: 0, now: 100)
                return (job, untouched)
            }
            // One attempt failed (a 503): the job is queued again with its attempt counted.
            try storage.writeSync { tx in
                for claimed in try tx.jobs.claim(kind: kind, limit: 10, leaseMilliseconds: 1_000, now: 200) where claimed.id == job {
                    #expect(try tx.jobs.retry(claimed.lease, runAt: 5_000, error: "503 ServiceUnavailable"))
                }
            }
            let before = try storage.readSync { tx in try tx.jobs.find(id: job) }
            let rotated = try storage.writeSync { tx in try device(tx, token: "t2", id: "d2", now: 300) }
            try storage.readSync { tx in
                #expect(try tx.devices.find(id: "d1", now: 300) == nil)
                let after = try #require(try tx.jobs.find(id: job))
                let payload = try DeliveryJobPayload.decode(after.payloadJSON)
                #expect(payload.deviceID == rotated.id)
                #expect(try payload.apnsID == DeliveryJobPayload.decode(before?.payloadJSON ?? "").apnsID)
                #expect(after.attempts == 1 && after.state == .queued && after.runAt == 5_000 && after.lastError == "503 ServiceUnavailable")
                // Another platform's device of the same session is no rotation.
                #expect(try DeliveryJobPayload.decode(try #require(try tx.jobs.find(id: untouched)).payloadJSON).deviceID == "d9")
            }
        }
    }

    @Test(arguments: Engine.available)
    func aUserBoundInstallsNewTokenTakesItsJobsAndAnotherInstallsDoNot(engine: Engine) throws {
        try withStorage(engine) { storage in
            @Sendable func bound(_ token: String, installation: String) -> DeviceRegistration {
                var value = DeviceRegistration(userID: "u1", sessionID: DeviceRegistration.userSessionID(app: "default", userID: "u1"),
                                               platform: "ios", provider: "apns", token: token, installationID: installation)
                value.bindsToUser = true   // AP-5: no session to rotate by, the install replaces its token
                return value
            }
            let job = try storage.writeSync { tx in
                _ = try tx.devices.register(bound("t1", installation: "i1"), sessionExpiresAt: nil, newID: "d1", now: 1)
                return try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: payload("d1", notification: "n1").jsonText(),
                                           runAt: 0, now: 1)
            }
            func device() throws -> String? {
                try storage.readSync { tx in try tx.jobs.find(id: job).map { try DeliveryJobPayload.decode($0.payloadJSON).deviceID } }
            }
            _ = try storage.writeSync { tx in try tx.devices.register(bound("t2", installation: "i2"), sessionExpiresAt: nil, newID: "d2", now: 2) }
            #expect(try device() == "d1")
            _ = try storage.writeSync { tx in try tx.devices.register(bound("t3", installation: "i1"), sessionExpiresAt: nil, newID: "d3", now: 3) }
            #expect(try device() == "d3")
        }
    }

    /// rotation10: a receipt check (`push.receipt`, PU-8a) queued or leased for a replaced device
    /// moves too, so the push its receipt may send again goes to the new device; it keeps the
    /// device the push went to (`sent_device_id`), whose token the receipt judges.
    @Test(arguments: Engine.available)
    func receiptChecksMoveAndKeepTheDeviceTheirPushWentTo(engine: Engine) throws {
        try withStorage(engine) { storage in
            @Sendable func receipt(_ device: String, _ notification: String) -> String {
                PushReceiptJobPayload(provider: .expo, receiptID: "r-\(notification)", sentAt: 900,
                                      delivery: payload(device, notification: notification)).jsonText()
            }
            let kind = PushReceiptJobPayload.kind
            let ids = try storage.writeSync { tx in
                let queued = try tx.jobs.enqueue(kind: kind, payloadJSON: receipt("old", "n1"), runAt: 5_000, now: 1_000)
                let leased = try tx.jobs.enqueueLeased(kind: kind, payloadJSON: receipt("old", "n2"), app: "default",
                                                       leaseUntil: 60_000, now: 1_000).id
                // The new device has a push of n3 in flight: n3's receipt stays, its resend would be a second.
                _ = try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: payload("new", notification: "n3").jsonText(),
                                        runAt: 9_000, now: 1_000)
                let owned = try tx.jobs.enqueue(kind: kind, payloadJSON: receipt("old", "n3"), runAt: 9_000, now: 1_000)
                let other = try tx.jobs.enqueue(kind: kind, payloadJSON: receipt("other", "n4"), runAt: 9_000, now: 1_000)
                return (queued: queued, leased: leased, owned: owned, other: other)
            }
            let before = try storage.readSync { tx in try tx.jobs.find(id: ids.leased) }
            #expect(try storage.writeSync { tx in try tx.jobs.movePushJobs(fromDevices: ["old"], toDevice: "new") } == 2)
            func stored(_ id: Int64) throws -> (job: JobRecord, payload: PushReceiptJobPayload) {
                let job = try #require(try storage.readSync { tx in try tx.jobs.find(id: id) })
                return (job, try PushReceiptJobPayload.decode(job.payloadJSON))
            }
            let queued = try stored(ids.queued)
            #expect(queued.payload.delivery.deviceID == "new" && queued.payload.sentDeviceID == "old")
            #expect(queued.payload.receiptID == "r-n1" && queued.payload.sentAt == 900 && queued.job.runAt == 5_000)
            let leased = try stored(ids.leased)
            #expect(leased.payload.delivery.deviceID == "new" && leased.payload.sentDeviceID == "old")
            #expect(leased.job.state == .leased && leased.job.lease == before?.lease)
            #expect(try stored(ids.owned).payload.delivery.deviceID == "old" && stored(ids.owned).payload.sentDeviceID == nil)
            #expect(try stored(ids.other).payload.delivery.deviceID == "other")
            // Moved again, the receipt still judges the first device's token.
            #expect(try storage.writeSync { tx in try tx.jobs.movePushJobs(fromDevices: ["new"], toDevice: "newer") } == 3)
            #expect(try stored(ids.queued).payload.delivery.deviceID == "newer" && stored(ids.queued).payload.sentDeviceID == "old")
        }
    }

    /// A rotation that moves jobs counts once in its storage's `pushRotations` before its commit
    /// (the delivery worker's sign to look at a job row again); one that moves none does not
    /// count, and another storage's rotation is not this one's (each storage keeps its own count,
    /// so other suites rotating in parallel leave it alone).
    @Test(arguments: Engine.available)
    func aRotationThatMovesJobsCountsAGeneration(engine: Engine) throws {
        try withStorage(engine) { storage in
            _ = try storage.writeSync { tx in
                try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: payload("g-old", notification: "n1").jsonText(),
                                    runAt: 9_000, now: 1_000)
            }
            let before = storage.pushRotations.current
            #expect(try storage.writeSync { tx in try tx.jobs.movePushJobs(fromDevices: ["g-none"], toDevice: "g-new") } == 0)
            #expect(storage.pushRotations.current == before, "nothing moved, nothing counted")
            let other = try SQLiteStorage.open(path: ":memory:")
            defer { other.close() }
            _ = try other.writeSync { tx in
                try tx.jobs.enqueue(kind: DeliveryJobPayload.kind, payloadJSON: payload("g-old", notification: "n1").jsonText(),
                                    runAt: 9_000, now: 1_000)
            }
            #expect(try other.writeSync { tx in try tx.jobs.movePushJobs(fromDevices: ["g-old"], toDevice: "g-new") } == 1)
            #expect(other.pushRotations.current == 1)
            #expect(storage.pushRotations.current == before, "another storage's rotation is not this one's")
            #expect(try storage.writeSync { tx in try tx.jobs.movePushJobs(fromDevices: ["g-old"], toDevice: "g-new") } == 1)
            #expect(storage.pushRotations.current == before + 1)
        }
    }
}
