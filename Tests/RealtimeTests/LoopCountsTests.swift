import Testing
@testable import Realtime

@Suite struct LoopCountsTests {
    @Test func aChannelOnOneLoopKeepsItsCountInline() {
        var counts = LoopCounts()
        #expect(counts.isZero)
        counts[5] += 1
        counts[5] += 1
        #expect(counts[5] == 2)
        #expect(counts[0] == 0)
        #expect(counts[6] == 0)
        #expect(!counts.isZero)
        counts[5] -= 2
        #expect(counts.isZero)
        // Once empty, another loop may take the inline place.
        counts[1] = 3
        #expect(counts[1] == 3)
        #expect(counts[5] == 0)
        #expect(MemoryLayout<LoopCounts>.stride == 16)
    }

    @Test func aSecondLoopMovesTheCountsToAnArrayThatKeepsBoth() {
        var counts = LoopCounts()
        counts[2] = 4
        counts[0] += 1
        #expect(counts[2] == 4)
        #expect(counts[0] == 1)
        #expect(counts[1] == 0)
        counts[9] = 7
        #expect(counts[9] == 7)
        #expect(counts[40] == 0)
        counts[2] = 0
        counts[0] = 0
        #expect(!counts.isZero)
        counts[9] = 0
        #expect(counts.isZero)
    }

    @Test func aZeroOnAnotherLoopChangesNothing() {
        var counts = LoopCounts()
        counts[3] = 2
        counts[1] = 0
        #expect(counts[3] == 2)
        #expect(counts[1] == 0)
    }

    @Test func copiesAreIndependent() {
        var first = LoopCounts()
        first[0] = 1
        first[1] = 1
        var second = first
        second[1] = 5
        second[0] = 0
        #expect(first[0] == 1)
        #expect(first[1] == 1)
        #expect(second[1] == 5)
        #expect(second[0] == 0)
    }
}
