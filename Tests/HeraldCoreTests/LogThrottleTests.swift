import HeraldCore
import Testing

/// One line per interval for a failure that repeats on a timer (the worker's claims on a full disk).
@Suite struct LogThrottleTests {
    @Test func oneLinePerIntervalWithTheCountHeldBack() {
        var throttle = LogThrottle(intervalNanoseconds: 1_000)
        #expect(throttle.admit(now: 10) == 0)          // the first occurrence is logged
        #expect(throttle.admit(now: 500) == nil)       // inside the interval: held back
        #expect(throttle.admit(now: 1_009) == nil)
        #expect(throttle.admit(now: 1_010) == 2)       // the next line says two were held back
        #expect(throttle.admit(now: 2_010) == 0)
    }

    @Test("an occurrence read on the clock before the last line's, admitted after it (threads racing for the lock), is held back")
    func anEarlierReadingAdmittedLateIsInsideTheInterval() {
        var throttle = LogThrottle(intervalNanoseconds: 1_000)
        #expect(throttle.admit(now: 5_000) == 0)
        #expect(throttle.admit(now: 4_990) == nil)     // wrapped around to a huge gap before
        #expect(throttle.admit(now: 6_000) == 1)
    }
}
