import Glibc
import Synchronization
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

/// Memory as a test says it is, and the trims asked for. The process's own figures move with
/// every test running beside these, so the trimmer is driven by a script; what a real trim hands
/// back is measured by Benchmarks/idle.py (`--after-close`).
private final class ScriptedMemory: Sendable {
    private let state = Mutex<(slack: Int, trims: Int, slackAfterTrim: Int?)>((0, 0, nil))
    init(slack: Int) { state.withLock { $0.slack = slack } }
    /// The slack now, and what a trim leaves (nil: a trim changes nothing).
    func set(slack: Int, afterTrim: Int? = nil) {
        state.withLock {
            $0.slack = slack
            $0.slackAfterTrim = afterTrim
        }
    }
    var trims: Int { state.withLock { $0.trims } }
    func usage() -> HeapTrimmer.MemoryUsage {
        state.withLock { HeapTrimmer.MemoryUsage(residentAnonymousBytes: $0.slack + (10 << 20), heapUsedBytes: 10 << 20) }
    }
    func trim() {
        state.withLock { state in
            state.trims += 1
            if let after = state.slackAfterTrim { state.slack = after }
        }
    }
}

@Suite struct HeapTrimmerTests {
    private static let mib = 1 << 20

    private static func trimmer(_ memory: ScriptedMemory, interval: UInt64 = 10_000_000_000) -> HeapTrimmer {
        HeapTrimmer(intervalNanoseconds: interval, minimumGainBytes: 4 * mib, measure: { memory.usage() }, trim: { memory.trim() })
    }

    @Test func trimsWhenTheSlackIsTheMinimumAboveTheFloor() {
        #expect(HeapTrimmer.worthTrimming(slack: 9 * Self.mib, floor: 5 * Self.mib, minimumGainBytes: 4 * Self.mib))
        #expect(!HeapTrimmer.worthTrimming(slack: 9 * Self.mib - 1, floor: 5 * Self.mib, minimumGainBytes: 4 * Self.mib))
        #expect(!HeapTrimmer.worthTrimming(slack: 1 * Self.mib, floor: 5 * Self.mib, minimumGainBytes: 4 * Self.mib))
    }

    @Test func everyBurstIsTrimmedAndNothingElse() {
        let memory = ScriptedMemory(slack: 3 * Self.mib)          // the floor: stacks, relocated data
        let trimmer = Self.trimmer(memory)
        memory.set(slack: 6 * Self.mib)
        #expect(!trimmer.trimIfWorthIt(), "3 MiB above the floor: below the bar")
        // A burst ends: 20 MiB of free pages resident; the trim hands them back.
        memory.set(slack: 23 * Self.mib, afterTrim: 3 * Self.mib)
        #expect(trimmer.trimIfWorthIt())
        #expect(!trimmer.trimIfWorthIt(), "back at the floor")
        // A second burst right after: trimmed as well (a bar raised by the first trim missed it).
        memory.set(slack: 20 * Self.mib, afterTrim: 3 * Self.mib)
        #expect(trimmer.trimIfWorthIt())
        #expect(memory.trims == 2)
    }

    @Test func aTrimThatReleasesNothingIsTriedAgainAtTheNextCheck() {
        // Free blocks that still share pages with live ones: nothing goes back yet. The next
        // check tries again (it costs about 10 µs), and releases once the neighbours are freed.
        let memory = ScriptedMemory(slack: 3 * Self.mib)
        let trimmer = Self.trimmer(memory)
        memory.set(slack: 12 * Self.mib, afterTrim: 12 * Self.mib)
        #expect(trimmer.trimIfWorthIt())
        #expect(trimmer.trimIfWorthIt())
        memory.set(slack: 12 * Self.mib, afterTrim: 3 * Self.mib)
        #expect(trimmer.trimIfWorthIt())
        #expect(!trimmer.trimIfWorthIt())
        #expect(memory.trims == 3)
        #expect(trimmer.trimCount == 3)
    }

    @Test func theFloorFollowsTheLowestSlackSeen() {
        let memory = ScriptedMemory(slack: 10 * Self.mib)         // measured at start while busy
        let trimmer = Self.trimmer(memory)
        memory.set(slack: 2 * Self.mib)
        #expect(!trimmer.trimIfWorthIt())
        memory.set(slack: 7 * Self.mib)
        #expect(trimmer.trimIfWorthIt(), "5 MiB above the lower floor")
    }

    @Test func startedItTrimsOnItsTimer() {
        let memory = ScriptedMemory(slack: 3 * Self.mib)
        let trimmer = Self.trimmer(memory, interval: 20_000_000)
        memory.set(slack: 30 * Self.mib, afterTrim: 3 * Self.mib)
        trimmer.start()
        trimmer.start()   // a second call changes nothing
        // The timer is the event awaited: up to 5 s for a 20 ms timer on a loaded machine.
        var waited = 0
        while memory.trims == 0, waited < 500 {
            usleep(10_000)
            waited += 1
        }
        #expect(memory.trims == 1)
    }

    @Test func theProcessReadingsAreSane() throws {
        let statm = try #require(HeapTrimmer.residentAnonymousBytes())
        let status = residentAnonymousBytes()
        // Read a moment apart while other tests allocate: close, not equal.
        #expect(abs(statm - status) < 64 << 20, "statm \(statm), status \(status)")
        let usage = HeapTrimmer.usage()
        #expect(usage.residentAnonymousBytes > 0 && usage.heapUsedBytes > 0)
    }
}

/// The thresholds are pinned at start unless the operator gave glibc its own (issue 17).
@Suite struct AllocatorThresholdTests {
    @Test func anOperatorsThresholdInTheEnvironmentWins() {
        #expect(!HeapTrimmer.environmentSetsThresholds([:]))
        #expect(!HeapTrimmer.environmentSetsThresholds(["GLIBC_TUNABLES": "glibc.malloc.arena_max=2"]))
        #expect(HeapTrimmer.environmentSetsThresholds(["MALLOC_MMAP_THRESHOLD_": "65536"]))
        #expect(HeapTrimmer.environmentSetsThresholds(["MALLOC_TRIM_THRESHOLD_": "0"]))
        #expect(HeapTrimmer.environmentSetsThresholds(["GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.trim_threshold=1"]))
        #expect(HeapTrimmer.environmentSetsThresholds(["GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=262144"]))
        #expect(!HeapTrimmer.pinAllocatorThresholds(environment: ["MALLOC_TRIM_THRESHOLD_": "131072"]))
    }

    @Test func glibcTakesThePinnedThresholds() {
        #expect(HeapTrimmer.pinAllocatorThresholds(environment: [:]))
    }
}
