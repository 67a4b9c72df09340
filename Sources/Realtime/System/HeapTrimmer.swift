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
/// the heap has in use. Stacks and relocated library data make a constant part of it (the floor:
/// the lowest slack seen); free heap pages that are still resident make the rest. A trim runs
/// whenever the slack is `minimumGainBytes` above the floor. Whether a trim can release anything
/// is known only by trying (free blocks that share pages with live ones cannot go back until
/// those are freed too), and a trim that finds nothing costs about 10 µs, so it simply tries again
/// at the next check. Policies that wait instead missed bursts: on free bytes (they do not fall
/// when a trim hands pages back), on the slack's growth since the last trim (raised for good by a
/// trim when little could be released), and with a hold-off after a trim that released little
/// (the close of 10,000 streams came within it): RSS stayed 6 MB above what `malloc_trim` by hand
/// then reached.
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
    /// How far the slack must be above the floor for a trim to run (bytes).
    public let minimumGainBytes: Int
    /// The lowest slack seen (bytes).
    private let floor: Mutex<Int>
    /// Where usage is read and what a trim does (the process's own, or a test's script).
    private let measure: @Sendable () -> MemoryUsage
    private let trim: @Sendable () -> Void
    private let trims = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "herald.heap-trimmer", qos: .utility)
    private let timer: any DispatchSourceTimer
    private let started = Atomic<Bool>(false)

    /// - Parameters:
    ///   - intervalNanoseconds: time between checks (default 10 s).
    ///   - minimumGainBytes: slack above the floor that makes a trim worth its locks (default 4 MiB).
    ///   - measure: reads the memory (default `usage()`; tests script it, since the process's
    ///     memory moves with every test running beside them).
    ///   - trim: hands free pages back (default `malloc_trim(0)`).
    public init(intervalNanoseconds: UInt64 = 10_000_000_000, minimumGainBytes: Int = 4 << 20,
                measure: @escaping @Sendable () -> MemoryUsage = HeapTrimmer.usage,
                trim: @escaping @Sendable () -> Void = { _ = malloc_trim(0) }) {
        self.intervalNanoseconds = intervalNanoseconds
        self.minimumGainBytes = minimumGainBytes
        self.measure = measure
        self.trim = trim
        floor = Mutex(measure().slackBytes)
        timer = DispatchSource.makeTimerSource(queue: queue)
    }

    deinit {
        timer.cancel()
        // A source that was never resumed must be resumed once to be released.
        if !started.load(ordering: .relaxed) { timer.resume() }
    }

    /// Pins glibc's thresholds (`mallopt`): a block from `mmapThresholdBytes` (128 KiB, glibc's
    /// start value) up gets a mapping of its own, returned to the kernel when freed; an arena's
    /// free top is unmapped by a free only beyond `trimThresholdBytes` (64 MiB, the most glibc's
    /// own would rise to), and otherwise by the trimmer's `malloc_trim`.
    ///
    /// Unpinned, glibc raises both for good the first time it frees a block it had mapped: to that
    /// block's size, and twice that, up to 32 and 64 MiB. A peak grows the channel tables through
    /// such blocks (a 65,000-entry table is 3–5 MB), so after one the tables that follow were
    /// carved from the arenas, and each thread arena kept a free top of up to twice the largest
    /// table resident: `malloc_trim` releases free pages inside every arena but never a thread
    /// arena's top (glibc's `mtrim`). After 1,000 streams of 64 channels closed, 12 MiB of free
    /// pages stayed resident (Benchmarks/peak.py, issue 17). The mmap threshold alone keeps the
    /// tables out of the arenas. The trim threshold stays high: both at 128 KiB cost the push
    /// path +11k (APNs) to +17k (FCM) instructions a push (callgrind, Benchmarks/push.py), and
    /// a trim threshold of 64 MiB leaves no more memory after a peak (Benchmarks/RESULTS.md
    /// "memory10", the lead's re-run).
    /// Call it once at start. An operator's own choice wins: with either threshold set in the
    /// environment (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`, or `malloc.mmap_threshold`
    /// / `malloc.trim_threshold` in `GLIBC_TUNABLES`) glibc already keeps them fixed, and nothing
    /// is changed.
    /// - Returns: whether both were pinned (false when the environment set one, or glibc refused).
    @discardableResult
    public static func pinAllocatorThresholds(environment: [String: String], mmapThresholdBytes: Int32 = 128 << 10,
                                              trimThresholdBytes: Int32 = 64 << 20) -> Bool {
        guard !environmentSetsThresholds(environment) else { return false }
        let mmap = mallopt(M_MMAP_THRESHOLD, mmapThresholdBytes)
        let trim = mallopt(M_TRIM_THRESHOLD, trimThresholdBytes)
        return mmap == 1 && trim == 1
    }

    /// Whether `environment` gives glibc an mmap or trim threshold of its own.
    static func environmentSetsThresholds(_ environment: [String: String]) -> Bool {
        if environment["MALLOC_MMAP_THRESHOLD_"] != nil || environment["MALLOC_TRIM_THRESHOLD_"] != nil { return true }
        // "glibc.malloc.mmap_threshold=…:glibc.malloc.trim_threshold=…"
        let tunables = environment["GLIBC_TUNABLES"]?.split(separator: ":") ?? []
        return tunables.contains { $0.hasPrefix("glibc.malloc.mmap_threshold=") || $0.hasPrefix("glibc.malloc.trim_threshold=") }
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

    /// Trims now if the slack is `minimumGainBytes` above the floor.
    /// - Returns: whether it trimmed.
    @discardableResult
    public func trimIfWorthIt() -> Bool {
        let slack = measure().slackBytes
        return floor.withLock { floor in
            floor = min(floor, slack)
            guard Self.worthTrimming(slack: slack, floor: floor, minimumGainBytes: minimumGainBytes) else { return false }
            trim()
            trims.add(1, ordering: .relaxed)
            return true
        }
    }

    /// Trims run so far.
    public var trimCount: Int { trims.load(ordering: .relaxed) }

    /// The policy, apart for tests: the slack is `minimumGainBytes` above the floor.
    static func worthTrimming(slack: Int, floor: Int, minimumGainBytes: Int) -> Bool {
        slack - floor >= minimumGainBytes
    }
}
