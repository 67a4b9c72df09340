import Dispatch
import Foundation
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
}
