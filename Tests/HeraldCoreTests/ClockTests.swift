import HeraldCore
import Testing

@Suite struct ClockTests {
    @Test func manualClockMovesOnlyWhenTold() {
        let clock = ManualClock(unixMilliseconds: 5_000)
        let start = clock.monotonicNanoseconds
        #expect(clock.unixMilliseconds == 5_000)
        clock.advance(byMilliseconds: 1_500)
        #expect(clock.unixMilliseconds == 6_500)
        #expect(clock.unixSeconds == 6)
        #expect(clock.monotonicNanoseconds - start == 1_500_000_000)
        clock.set(unixMilliseconds: 1_000)
        #expect(clock.unixMilliseconds == 1_000)
        #expect(clock.monotonicNanoseconds - start == 1_500_000_000)
    }

    @Test func systemClockIsNearWallTime() {
        let clock = SystemClock()
        // After 2025-01-01 and monotonic time that does not go back.
        #expect(clock.unixMilliseconds > 1_735_689_600_000)
        let a = clock.monotonicNanoseconds, b = clock.monotonicNanoseconds
        #expect(b >= a)
    }
}
