import CLinux
import Dispatch
import Glibc
import Synchronization

/// Hands the C heap's free pages back to the kernel after a burst (issue 17).
///
/// glibc returns freed memory on its own only from the top of an arena. After a burst (10,000
/// streams closed, a fan-out's queued events sent), the freed blocks sit below blocks that are
/// still live, so the process keeps the pages: about +14 MB of RSS that stayed after a fan-out
/// run. `malloc_trim(0)` releases every whole free page of every arena (`MADV_DONTNEED`); it
/// takes each arena's lock while it walks that arena, so it runs on a timer, only when the heap
/// has gained at least `minimumGainBytes` of free space since it last ran, never per request.
///
/// # Thread safety
/// `start` and `trimIfWorthIt` may be called from any thread; the checks run on a private queue.
/// Unchecked only for `timer`: a dispatch source is safe to use from any thread, it is just not
/// marked `Sendable`; the rest is guarded by its mutex or atomic.
public final class HeapTrimmer: @unchecked Sendable {
    /// What the heap held, from `mallinfo2` (bytes, summed over every arena).
    public struct HeapUsage: Sendable, Equatable {
        /// Bytes in free blocks (`fordblks`), the most a trim can hand back.
        public var freeBytes: Int
        /// Bytes in blocks in use (`uordblks`).
        public var usedBytes: Int
    }

    /// How often the heap is checked (nanoseconds).
    public let intervalNanoseconds: UInt64
    /// The free space a trim must be able to release for it to run (bytes).
    public let minimumGainBytes: Int
    /// Free bytes left after the last trim (or at start): only growth beyond it counts.
    private let freeAfterLastTrim: Mutex<Int>
    private let trims = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "herald.heap-trimmer", qos: .utility)
    private let timer: any DispatchSourceTimer
    private let started = Atomic<Bool>(false)

    /// - Parameters:
    ///   - intervalNanoseconds: time between checks (default 10 s).
    ///   - minimumGainBytes: free bytes gained since the last trim that make one worth its locks
    ///     (default 4 MiB).
    public init(intervalNanoseconds: UInt64 = 10_000_000_000, minimumGainBytes: Int = 4 << 20) {
        self.intervalNanoseconds = intervalNanoseconds
        self.minimumGainBytes = minimumGainBytes
        freeAfterLastTrim = Mutex(Self.usage().freeBytes)
        timer = DispatchSource.makeTimerSource(queue: queue)
    }

    deinit {
        timer.cancel()
        // A source that was never resumed must be resumed once to be released.
        if !started.load(ordering: .relaxed) { timer.resume() }
    }

    /// The heap's usage now (`mallinfo2`; it walks every arena's free lists under their locks).
    public static func usage() -> HeapUsage {
        let info = mallinfo2()
        return HeapUsage(freeBytes: Int(info.fordblks), usedBytes: Int(info.uordblks))
    }

    /// Trims whenever the free space grew by `minimumGainBytes` since the last trim; checks
    /// every `intervalNanoseconds` until the trimmer is released.
    /// Only the first call starts it.
    public func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let interval = DispatchTimeInterval.nanoseconds(Int(intervalNanoseconds))
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
        timer.setEventHandler { [weak self] in _ = self?.trimIfWorthIt() }
        timer.resume()
    }

    /// Trims now if the heap gained at least `minimumGainBytes` of free space since the last trim.
    /// - Returns: whether it trimmed.
    @discardableResult
    public func trimIfWorthIt() -> Bool {
        let before = Self.usage().freeBytes
        return freeAfterLastTrim.withLock { baseline in
            guard Self.worthTrimming(freeBytes: before, freeAfterLastTrim: baseline, minimumGainBytes: minimumGainBytes) else {
                // Free space that was used again moves the baseline down, so the next growth counts.
                baseline = min(baseline, before)
                return false
            }
            malloc_trim(0)
            // Free blocks stay free (only their pages go back), so the baseline is what is free now.
            baseline = Self.usage().freeBytes
            trims.add(1, ordering: .relaxed)
            return true
        }
    }

    /// Trims run so far.
    public var trimCount: Int { trims.load(ordering: .relaxed) }

    /// The policy, apart for tests: trim when the free bytes grew by `minimumGainBytes`.
    static func worthTrimming(freeBytes: Int, freeAfterLastTrim: Int, minimumGainBytes: Int) -> Bool {
        freeBytes - freeAfterLastTrim >= minimumGainBytes
    }
}
