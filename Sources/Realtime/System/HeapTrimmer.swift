import CLinux
import Dispatch
import Glibc
import Synchronization

/// Hands the C heap's free pages back to the kernel after a burst (issue 17).
///
/// glibc returns freed memory on its own only from the top of an arena. After a burst (10,000
/// streams closed, a fan-out's queued events sent), the freed blocks sit below blocks that are
/// still live, so the process keeps the pages: RSS stayed about 17 MB above its start after
/// 10,000 streams closed. `malloc_trim(0)` releases every whole free page of every arena
/// (`MADV_DONTNEED`); it takes each arena's lock while it walks that arena, so it runs on a timer
/// and only when it can matter, never per request.
///
/// When it matters: the trimmer watches the *slack*, resident anonymous memory minus the bytes
/// the heap has in use. Stacks, relocated library data and trimmed-but-reusable bookkeeping make
/// a constant part of it; free heap pages that are still resident make the rest. A trim runs when
/// the slack grew by `minimumGainBytes` since the last trim (or since start). The free-bytes
/// count alone is no guide: it does not fall when a trim hands pages back, and it does not say
/// which free blocks still hold resident pages.
///
/// # Thread safety
/// `start` and `trimIfWorthIt` may be called from any thread; the checks run on a private queue.
/// Unchecked only for `timer`: a dispatch source is safe to use from any thread, it is just not
/// marked `Sendable`; the rest is guarded by its mutex or atomic.
public final class HeapTrimmer: @unchecked Sendable {
    /// What the process holds (bytes).
    public struct MemoryUsage: Sendable, Equatable {
        /// Resident anonymous memory (`/proc/self/statm`: resident − shared pages).
        public var residentAnonymousBytes: Int
        /// Heap bytes in use, in arenas and in blocks mapped on their own (`mallinfo2`
        /// `uordblks` + `hblkhd`, over every arena).
        public var heapUsedBytes: Int
        /// Resident memory the heap does not use.
        public var slackBytes: Int { residentAnonymousBytes - heapUsedBytes }
    }

    /// How often the process is checked (nanoseconds).
    public let intervalNanoseconds: UInt64
    /// How much the slack must have grown since the last trim for a trim to run (bytes).
    public let minimumGainBytes: Int
    /// Slack right after the last trim (or at start); lowered when a check finds less.
    private let slackAfterLastTrim: Mutex<Int>
    private let trims = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "herald.heap-trimmer", qos: .utility)
    private let timer: any DispatchSourceTimer
    private let started = Atomic<Bool>(false)

    /// - Parameters:
    ///   - intervalNanoseconds: time between checks (default 10 s).
    ///   - minimumGainBytes: slack gained since the last trim that makes one worth its locks
    ///     (default 4 MiB).
    public init(intervalNanoseconds: UInt64 = 10_000_000_000, minimumGainBytes: Int = 4 << 20) {
        self.intervalNanoseconds = intervalNanoseconds
        self.minimumGainBytes = minimumGainBytes
        slackAfterLastTrim = Mutex(Self.usage().slackBytes)
        timer = DispatchSource.makeTimerSource(queue: queue)
    }

    deinit {
        timer.cancel()
        // A source that was never resumed must be resumed once to be released.
        if !started.load(ordering: .relaxed) { timer.resume() }
    }

    /// The process's memory now. `mallinfo2` walks every arena's free lists under their locks;
    /// `/proc/self/statm` is one small read. A file that cannot be read counts as no slack.
    public static func usage() -> MemoryUsage {
        let info = mallinfo2()
        let used = Int(info.uordblks) + Int(info.hblkhd)
        return MemoryUsage(residentAnonymousBytes: residentAnonymousBytes() ?? used, heapUsedBytes: used)
    }

    /// Resident minus shared pages from `/proc/self/statm`, in bytes; nil if it cannot be read.
    static func residentAnonymousBytes() -> Int? {
        let fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { return nil }
        // "size resident shared text lib data dt", in pages.
        let fields = buffer[0..<count].split(separator: UInt8(ascii: " ")).prefix(3).map { Int(String(decoding: $0, as: UTF8.self)) }
        guard fields.count == 3, let resident = fields[1], let shared = fields[2] else { return nil }
        return (resident - shared) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Checks every `intervalNanoseconds` until the trimmer is released. Only the first call
    /// starts it.
    public func start() {
        guard !started.exchange(true, ordering: .relaxed) else { return }
        let interval = DispatchTimeInterval.nanoseconds(Int(intervalNanoseconds))
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .seconds(1))
        timer.setEventHandler { [weak self] in _ = self?.trimIfWorthIt() }
        timer.resume()
    }

    /// Trims now if the slack grew by at least `minimumGainBytes` since the last trim.
    /// - Returns: whether it trimmed.
    @discardableResult
    public func trimIfWorthIt() -> Bool {
        let slack = Self.usage().slackBytes
        return slackAfterLastTrim.withLock { baseline in
            guard Self.worthTrimming(slack: slack, slackAfterLastTrim: baseline, minimumGainBytes: minimumGainBytes) else {
                // Free pages reused (or given back by glibc itself) lower the bar for the next growth.
                baseline = min(baseline, slack)
                return false
            }
            malloc_trim(0)
            baseline = Self.usage().slackBytes
            trims.add(1, ordering: .relaxed)
            return true
        }
    }

    /// Trims run so far.
    public var trimCount: Int { trims.load(ordering: .relaxed) }

    /// The policy, apart for tests: trim when the slack grew by `minimumGainBytes`.
    static func worthTrimming(slack: Int, slackAfterLastTrim: Int, minimumGainBytes: Int) -> Bool {
        slack - slackAfterLastTrim >= minimumGainBytes
    }
}
