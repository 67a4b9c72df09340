import Dispatch
import Foundation
import Synchronization
import Testing

@testable import HeraldCore

/// ADR 0014: a push still owed when its device's token rotates (DV-1) goes to the device that
/// replaced it, once, as the same push (PU-5b) with its attempts counted on, and its delivery
/// record (NO-8) names the device each outcome was for.
@Suite struct DeliveryWorkerRotationTests {
    @Test func aPushRetryingWhenItsTokenRotatesIsSentToTheNewTokenOnce() async throws {
        let h = try WorkerHarness()
        let old = try h.register(token: "tok-1")
        h.provider.script("tok-1", .classify(.unavailable))
        let id = try h.enqueue(old)
        #expect(try await h.worker.runDue() == DeliveryWorker.Round(claimed: 1))
        #expect(try h.job(id).state == .queued)
        // The app registers a new token for the same session and platform: it replaces the device.
        let new = try h.register(token: "tok-2")
        #expect(try h.device(old.id) == nil)
        h.clock.advance(byMilliseconds: h.backoff(afterAttempt: 1))
        #expect(try await h.worker.runDue() == DeliveryWorker.Round(claimed: 1))
        let sent = h.provider.sent
        #expect(sent.map(\.token) == ["tok-1", "tok-2"] && sent[0].pushID == sent[1].pushID)
        let job = try h.job(id)
        #expect(job.state == .done && job.attempts == 2)
        let record = try h.record(old)   // the notification planned for the old device
        #expect(record.map(\.outcome) == [.retrying, .sent])
        #expect(record.map(\.deviceID) == [old.id, new.id])
        #expect(try await h.drain() == 1 && h.provider.sent.count == 2)
    }

    @Test(arguments: [true, false])
    func aSendInFlightWhenTheTokenRotatesEndsFirstAndOnlyItsRetryGoesToTheNewToken(delivered: Bool) async throws {
        let h = try WorkerHarness()
        let id = try #require(try h.enqueueHeld(1).first)   // user u-0, session s-0, token tok-0
        let old = try #require(try h.device("d-tok-0"))
        var held = h.provider.held.makeAsyncIterator()
        async let round = h.worker.runDue()
        let answer = try #require(await held.next())
        // Rotated while the push is on the wire to the old token.
        let new = try h.register(user: "u-0", session: "s-0", token: "tok-2")
        DispatchQueue.global().async { answer(delivered ? .delivered("apns-old") : .unavailable) }
        #expect(try await round == DeliveryWorker.Round(claimed: 1))
        try await h.drain()
        let sent = h.provider.sent
        let job = try h.job(id)
        #expect(job.state == .done)
        if delivered {
            // The old token took it: the new one never gets it.
            #expect(sent.map(\.token) == ["tok-0"] && job.attempts == 1)
            #expect(try h.record(old).map(\.outcome) == [.sent])
        } else {
            #expect(sent.map(\.token) == ["tok-0", "tok-2"] && sent[0].pushID == sent[1].pushID && job.attempts == 2)
            #expect(try h.record(old).map(\.deviceID) == [old.id, new.id])
        }
    }

    /// rotation10: a claim reads its jobs' devices after it commits; a rotation committed in that
    /// gap moved the job, but the send had looked for the old device and ended `device_gone`.
    @Test func aRotationBetweenTheClaimAndItsDeviceReadSendsToTheNewToken() async throws {
        let h = try WorkerHarness()
        let old = try h.register(token: "tok-1")
        let id = try h.enqueue(old)
        let rotated = Mutex<DeviceRecord?>(nil)
        h.faults.beforeNextRead { rotated.withLock { $0 = try? h.register(token: "tok-2") } }
        #expect(try await h.worker.runDue() == DeliveryWorker.Round(claimed: 1))
        let new = try #require(rotated.withLock { $0 })
        #expect(h.provider.sent.map(\.token) == ["tok-2"])
        let job = try h.job(id)
        #expect(job.state == .done && job.attempts == 1)
        #expect(try DeliveryJobPayload.decode(job.payloadJSON).deviceID == new.id)
        let record = try h.record(old)
        #expect(record.map(\.outcome) == [.sent] && record.map(\.deviceID) == [new.id])
        #expect(h.faults.jobReads == 1, "the job row read once again, before the send")
    }

    /// Issue 17's hot path: without a rotation, neither a claimed job nor one leased at insert
    /// reads its job row again (the look costs a read only after a rotation moved jobs).
    @Test(.timeLimit(.minutes(1)))
    func withoutARotationNoSendReadsItsJobAgain() async throws {
        let h = try WorkerHarness(configure: { $0.pollMilliseconds = 3_600_000 })
        let devices = try (0..<4).map { i in try h.register(user: "u-\(i)", session: "s-\(i)", token: "tok-\(i)") }
        for device in devices[..<2] { try h.enqueue(device) }
        #expect(try await h.worker.runDue().claimed == 2)
        h.worker.start()
        while h.faults.claims.count < 2 { await Task.yield() }
        _ = try h.enqueueThroughWorker(Array(devices[2...]))
        while h.worker.outcomeCounts.delivered < 4 { await Task.yield() }
        #expect(h.worker.stop(deadline: 10) == 0)
        #expect(h.provider.sent.count == 4)
        // The count is this storage's (other suites' rotations run in parallel in their own).
        #expect(h.storage.pushRotations.current == 0)
        #expect(h.faults.jobReads == 0)
    }

    /// A job that another claim took while the first looked its device up again is not sent by
    /// the first: the look is fenced by the lease, as the outcome is.
    @Test func aClaimWhoseLeaseWasTakenOverMeanwhileSendsNothing() async throws {
        let h = try WorkerHarness()
        let old = try h.register(token: "tok-1")
        let id = try h.enqueue(old)
        let lease = h.worker.configuration.leaseMilliseconds
        h.faults.beforeNextRead {
            _ = try? h.register(token: "tok-2")
            // The lease runs out and another worker's claim takes the job.
            h.clock.advance(byMilliseconds: lease + 1)
            let now = h.now
            _ = try? h.storage.writeSync { tx in try tx.jobs.claim(kind: DeliveryJobPayload.kind, limit: 1, leaseMilliseconds: lease, now: now) }
        }
        #expect(try await h.worker.runDue() == DeliveryWorker.Round(claimed: 1, unrecorded: 1))
        #expect(h.provider.sent.isEmpty)
        let job = try h.job(id)
        #expect(job.state == .leased && job.attempts == 2)
    }

    /// rotation10: a job leased at insert (ADR 0007) carried the device the inserting transaction
    /// read, so its send went to the old token even after a rotation had moved it.
    @Test(.timeLimit(.minutes(1)))
    func aJobLeasedAtInsertThatARotationMovedBeforeItsSendGoesToTheNewToken() async throws {
        // One slot, one place in the backlog, and no timer: the start's poll is the only one.
        let h = try WorkerHarness(configure: { $0.maxInFlight = 1; $0.leasedAtInsertBacklog = 1; $0.pollMilliseconds = 3_600_000 })
        h.provider.script("tok-0", .hold)
        let busy = try h.register(user: "u-0", session: "s-0", token: "tok-0")
        let old = try h.register(user: "u-1", session: "s-1", token: "tok-1")
        var held = h.provider.held.makeAsyncIterator()
        h.worker.start()
        while h.faults.claims.isEmpty { await Task.yield() }
        // The first takes the one slot; the second waits in the backlog, leased, its device read.
        let ids = try h.enqueueThroughWorker([busy, old])
        #expect(try h.job(ids[1]).state == .leased)
        let first = try #require(await held.next())
        let new = try h.register(user: "u-1", session: "s-1", token: "tok-2")
        #expect(try DeliveryJobPayload.decode(h.job(ids[1]).payloadJSON).deviceID == new.id)
        first(.delivered("apns-0"))
        while h.worker.outcomeCounts.delivered < 2 { await Task.yield() }
        #expect(h.worker.stop(deadline: 10) == 0)
        #expect(h.provider.sent.map(\.token) == ["tok-0", "tok-2"], "the moved job once, to the new token only")
        let job = try h.job(ids[1])
        #expect(job.state == .done && job.attempts == 1, "sent from the hand-over, not claimed again")
    }
}
