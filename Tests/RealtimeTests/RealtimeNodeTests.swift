import Dispatch
import Synchronization
import Testing
@testable import Realtime

@Suite struct RealtimeNodeTests {
    @Test func afterPendingDeliveriesWaitsForEveryLoop() throws {
        let group = try EventLoopGroup(count: 2)
        group.start()
        defer { group.stop() }
        let node = RealtimeNode(group: group, historyLimits: .init())
        let calls = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<100 {
            node.afterPendingDeliveries {
                calls.withLock { $0 += 1 }
                done.signal()
            }
        }
        for _ in 0..<100 { #expect(done.wait(timeout: .now() + 5) == .success) }
        #expect(calls.withLock { $0 } == 100)
    }

    @Test func aLoopThatNeverAnswersDoesNotHoldTheCallerPastTheTimeout() throws {
        let group = try EventLoopGroup(count: 1)   // never started: its queued work never runs
        let node = RealtimeNode(group: group, historyLimits: .init())
        let calls = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        let start = DispatchTime.now()
        node.afterPendingDeliveries(timeoutNanoseconds: 100_000_000) {
            calls.withLock { $0 += 1 }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
        let waited = DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds
        #expect(waited >= 100_000_000)
        #expect(waited < 1_000_000_000, "expired about a watchdog tick after the deadline")
        _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(200))
        #expect(calls.withLock { $0 } == 1, "once, not again when the watchdog ticks on")
    }
}
