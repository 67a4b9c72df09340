import HeraldCore
import Testing

/// A hash table that grew for a peak gives its storage back once the peak has passed, and a load
/// that moves within a factor of two never rehashes it back and forth (issue 17, Benchmarks/peak.py).
@Suite struct SparseStorageTests {
    @Test func shrinksAtAnEighthOfTheCapacityAndNotAbove() {
        #expect(SparseStorage.shouldShrink(count: 1_024, capacity: 8_192))
        #expect(!SparseStorage.shouldShrink(count: 1_025, capacity: 8_192))
        #expect(SparseStorage.shouldShrink(count: 0, capacity: 8_192))
    }

    @Test func smallTablesKeepTheirStorage() {
        #expect(!SparseStorage.shouldShrink(count: 0, capacity: SparseStorage.minimumCapacity))
        #expect(SparseStorage.shouldShrink(count: 0, capacity: SparseStorage.minimumCapacity + 1))
    }

    @Test func aPeakThatPassedGivesItsBucketsBackAndKeepsTheEntries() {
        var table = [Int: String](minimumCapacity: 65_000)
        for i in 0..<65_000 { table[i] = "v\(i)" }
        let peak = table.capacity
        for i in 100..<65_000 { table[i] = nil }
        table.shrinkIfSparse()
        #expect(table.capacity < peak / 16)
        #expect(table.capacity >= 2 * 100)
        #expect(table.count == 100)
        #expect((0..<100).allSatisfy { table[$0] == "v\($0)" })
    }

    @Test func anEmptyTableGivesEverythingBack() {
        var table = [Int: Int]()
        for i in 0..<10_000 { table[i] = i }
        for i in 0..<10_000 { table[i] = nil }
        table.shrinkIfSparse()
        #expect(table.capacity == 0)
    }

    @Test func aTableAboveAnEighthIsLeftAlone() {
        var table = [Int: Int](minimumCapacity: 8_000)
        let capacity = table.capacity
        for i in 0..<(capacity / 8 + 1) { table[i] = i }
        table.shrinkIfSparse()
        #expect(table.capacity == capacity)
    }

    @Test func aLoadMovingWithinAFactorOfTwoNeverRehashesBackAndForth() {
        // Shrunk at 1,000 entries, the table then swings between 1,000 and 2,000 (a steady load's
        // connects and closes): its capacity never changes, so nothing is rehashed.
        var table = [Int: Int](minimumCapacity: 16_000)
        for i in 0..<1_000 { table[i] = i }
        table.shrinkIfSparse()
        let shrunk = table.capacity
        #expect(shrunk >= 2_000)
        for _ in 0..<3 {
            for i in 1_000..<2_000 { table[i] = i }
            table.shrinkIfSparse()
            #expect(table.capacity == shrunk)
            for i in 1_000..<2_000 {
                table[i] = nil
                table.shrinkIfSparse()
            }
            #expect(table.capacity == shrunk)
        }
        // Down to a quarter of where it shrank, it shrinks once more.
        for i in 250..<1_000 {
            table[i] = nil
            table.shrinkIfSparse()
        }
        #expect(table.capacity < shrunk)
        #expect(table.count == 250)
    }
}
