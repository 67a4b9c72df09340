import Glibc
import Testing
@testable import Realtime

/// Anonymous resident memory of this process (`RssAnon` in /proc/self/status), in bytes.
private func residentAnonymousBytes() -> Int {
    guard let file = fopen("/proc/self/status", "r") else { return -1 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(cString: line)
        if text.hasPrefix("RssAnon:") {
            let kib = text.dropFirst("RssAnon:".count).trimmingPrefix(while: { $0 == " " || $0 == "\t" }).prefix { $0.isNumber }
            return (Int(kib) ?? -1) * 1024
        }
    }
    return -1
}

@Suite(.serialized) struct HeapTrimmerTests {
    @Test func trimsWhenTheSlackIsTheMinimumAboveTheFloor() {
        #expect(HeapTrimmer.worthTrimming(slack: 9 << 20, floor: 5 << 20, minimumGainBytes: 4 << 20))
        #expect(!HeapTrimmer.worthTrimming(slack: 9 << 20 - 1, floor: 5 << 20, minimumGainBytes: 4 << 20))
        #expect(!HeapTrimmer.worthTrimming(slack: 1 << 20, floor: 5 << 20, minimumGainBytes: 4 << 20))
    }

    @Test func statmAgreesWithProcStatus() throws {
        let statm = try #require(HeapTrimmer.residentAnonymousBytes())
        let status = residentAnonymousBytes()
        // Read a moment apart while other tests allocate: close, not equal.
        #expect(abs(statm - status) < 16 << 20, "statm \(statm), status \(status)")
        #expect(statm > 0)
    }

    @Test func aTrimAfterAnEarlierTrimStillRunsWhenNewPagesAreFreed() {
        // The free-bytes count does not fall when a trim hands pages back, so a policy on it
        // skipped the second burst.
        let trimmer = HeapTrimmer(minimumGainBytes: 16 << 20)
        for burst in 1...2 {
            // 64 MiB against a 16 MiB bar: other suites allocate and free in parallel.
            let blocks = (0..<(64 * 1024)).map { _ in
                let block = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
                block.initializeMemory(as: UInt8.self, repeating: 1, count: 1024)
                return block
            }
            let pin = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
            for block in blocks { block.deallocate() }
            #expect(trimmer.trimIfWorthIt(), "burst \(burst): 64 MiB freed below a live block")
            pin.deallocate()
        }
        #expect(trimmer.trimCount == 2)
    }

    @Test func aTrimHandsBackThePagesOfBlocksFreedBelowALiveOne() {
        let trimmer = HeapTrimmer(minimumGainBytes: 16 << 20)
        // 48 MiB in 1 KiB blocks (below the mmap threshold, so in an arena), touched, then one
        // block after them that stays live: glibc cannot give the freed ones back from the top.
        let blocks = (0..<(48 * 1024)).map { _ in
            let block = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
            block.initializeMemory(as: UInt8.self, repeating: 1, count: 1024)
            return block
        }
        let pin = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
        defer { pin.deallocate() }
        for block in blocks { block.deallocate() }
        let before = residentAnonymousBytes()
        #expect(trimmer.trimIfWorthIt(), "48 MiB were freed")
        let after = residentAnonymousBytes()
        #expect(before - after >= 24 << 20, "RssAnon \(before) -> \(after) bytes")
        #expect(trimmer.trimCount == 1)
        #expect(!trimmer.trimIfWorthIt(), "nothing left above the floor: no second trim")
        #expect(trimmer.trimCount == 1)
    }

    @Test func startedItTrimsOnItsTimer() {
        let trimmer = HeapTrimmer(intervalNanoseconds: 20_000_000, minimumGainBytes: 4 << 20)
        let blocks = (0..<(16 * 1024)).map { _ in
            let block = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
            block.initializeMemory(as: UInt8.self, repeating: 1, count: 1024)
            return block
        }
        let pin = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
        defer { pin.deallocate() }
        for block in blocks { block.deallocate() }
        trimmer.start()
        trimmer.start()   // a second call changes nothing
        // The timer is the event awaited: up to 5 s for a 20 ms timer on a loaded machine.
        var waited = 0
        while trimmer.trimCount == 0, waited < 500 {
            usleep(10_000)
            waited += 1
        }
        #expect(trimmer.trimCount == 1)
    }
}
