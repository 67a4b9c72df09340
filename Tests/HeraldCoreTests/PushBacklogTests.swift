import Foundation
@testable import HeraldCore
import Synchronization
import Testing

/// Issue 17: `POST /v1/notifications` waits for the worker when the push jobs it has not claimed
/// reach the limit, so what the API accepts is what gets pushed. Manual clock, SQLite in memory,
/// no sleeps: a wait ends at the claim that makes room (or at its bound, awaited as an answer).
@Suite struct PushBacklogTests {
    @Test("the estimate: queued adds, a claim takes off its first claims only, a short claim empties it")
    func theEstimate() {
        let backlog = PushBacklog(limit: 4)
        backlog.queued(5)
        backlog.queued(0)
        #expect(backlog.depth == 5)
        backlog.claimed(firstClaims: 2, drained: false)
        #expect(backlog.depth == 3)
        // Retries and jobs queued elsewhere are not counted: the figure never goes below 0.
        backlog.claimed(firstClaims: 10, drained: false)
        #expect(backlog.depth == 0)
        backlog.queued(7)
        backlog.claimed(firstClaims: 1, drained: true)
        #expect(backlog.depth == 0, "a claim that found fewer due jobs than it asked for took them all")
    }

    @Test("a waiter runs once, at the claim that makes room, not before")
    func waitersRunAtRoom() {
        let backlog = PushBacklog(limit: 2)
        let runs = Mutex(0)
        #expect(backlog.whenRoom { runs.withLock { $0 += 1 } }, "room: the caller goes on, nothing is kept")
        backlog.queued(3)
        let once = Once { runs.withLock { $0 += 1 } }
        #expect(!backlog.whenRoom(once.run))
        #expect(backlog.pauses == 1)
        backlog.claimed(firstClaims: 1, drained: false)     // 2 left: still at the limit
        #expect(runs.withLock { $0 } == 0)
        backlog.claimed(firstClaims: 1, drained: false)     // 1 left: room
        #expect(runs.withLock { $0 } == 1)
        once.run()                                          // the caller's own bound fires later
        backlog.claimed(firstClaims: 0, drained: true)
        #expect(runs.withLock { $0 } == 1, "run once, and not kept after it ran")
    }

    @Test("a call waits while the worker is behind and is stored at the claim that makes room")
    func aCallWaitsForTheWorker() async throws {
        let backlog = PushBacklog(limit: 1, maxWaitMilliseconds: 600_000)
        let h = try NotifierTests.Harness(backlog: backlog)
        try h.device(user: "u1", session: "phone")
        _ = try h.created(await h.send(h.call(["u1"])))
        #expect(backlog.depth == 1, "the planned push counts once its planning committed")

        let answer = Mutex<NotificationAnswer?>(nil)
        let answered = AsyncStream<Void>.makeStream()
        h.notifier.send(h.call(["u1"])) { result in
            answer.withLock { $0 = result }
            answered.continuation.yield()
        }
        // The gate is asked on the sending thread: the call is waiting now, and nothing is stored.
        #expect(backlog.pauses == 1)
        #expect(try h.storage.readSync { try $0.notifications.page(userID: "u1", unreadOnly: false, before: nil, limit: 10) }.count == 1)
        #expect(answer.withLock { $0 } == nil)

        backlog.claimed(firstClaims: 1, drained: false)
        var events = answered.stream.makeAsyncIterator()
        _ = await events.next()
        _ = try h.created(try #require(answer.withLock { $0 }))
        #expect(try h.storage.readSync { try $0.notifications.page(userID: "u1", unreadOnly: false, before: nil, limit: 10) }.count == 2)
        #expect(backlog.depth == 1 && h.queued.value == 2)
    }

    @Test("a wait ends at its bound when no claim comes (a paused worker does not stop the API)")
    func aWaitIsBounded() async throws {
        let backlog = PushBacklog(limit: 1, maxWaitMilliseconds: 1)
        let h = try NotifierTests.Harness(backlog: backlog)
        backlog.queued(5)
        _ = try h.created(await h.send(h.call(["u1"])))
        #expect(backlog.pauses == 1 && backlog.depth == 5)
    }

    @Test("the worker tells the backlog what each claim leased for the first time")
    func theWorkerReportsClaims() async throws {
        let backlog = PushBacklog(limit: 100)
        let h = try WorkerHarness(backlog: backlog)
        let device = try h.register(token: "tok-1")
        for _ in 0..<3 { try h.enqueue(device) }
        backlog.queued(3)
        #expect(try await h.worker.runDue(limit: 2).claimed == 2)
        #expect(backlog.depth == 1, "a full claim takes off what it leased")
        #expect(try await h.worker.runDue(limit: 2).claimed == 1)
        #expect(backlog.depth == 0)
        // Jobs the estimate did not count (queued by another path): a short claim empties it.
        backlog.queued(4)
        try h.enqueue(device)
        #expect(try await h.worker.runDue(limit: 10).claimed == 1)
        #expect(backlog.depth == 0)
    }
}
