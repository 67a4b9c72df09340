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
/// the heap has in use. Stacks and relocated library data make a constant part of it, measured at
/// start (the floor); free heap pages that are still resident make the rest. A trim runs when the
/// slack is `minimumGainBytes` above the floor. Whether a trim can release them is known only by
/// trying (free blocks that share pages with live ones cannot go back until those are freed too),
/// so after a trim that released less than a quarter of `minimumGainBytes` the next one waits
/// `retryNanoseconds`, unless the slack has grown by `minimumGainBytes` since (a burst ended
/// meanwhile). Neither the free-bytes count nor the slack's growth since the last trim is
/// a guide: the first does not fall when a trim hands pages back, and the second is raised for
/// good by a trim at a moment when little could be released (both missed the close of 10,000
/// streams in a fan-out run; a trim by hand then released 6 MB).
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
    /// How long a trim that released little holds the next one back (nanoseconds).
    public let retryNanoseconds: UInt64
    /// The floor (the lowest slack seen), and the last trim: when (uptime ns), what it released
    /// and the slack it left.
    private let state: Mutex<(floor: Int, lastTrimAt: UInt64?, lastReleased: Int, slackAfterLastTrim: Int)>
    private let trims = Atomic<Int>(0)
    private let queue = DispatchQueue(label: "herald.heap-trimmer", qos: .utility)
    private let timer: any DispatchSourceTimer
    private let started = Atomic<Bool>(false)

    /// - Parameters:
    ///   - intervalNanoseconds: time between checks (default 10 s).
    ///   - minimumGainBytes: slack above the floor that makes a trim worth its locks (default 4 MiB).
    ///   - retryNanoseconds: the wait after a trim that released little (default 30 s).
    public init(intervalNanoseconds: UInt64 = 10_000_000_000, minimumGainBytes: Int = 4 << 20,
                retryNanoseconds: UInt64 = 30_000_000_000) {
        self.intervalNanoseconds = intervalNanoseconds
        self.minimumGainBytes = minimumGainBytes
        self.retryNanoseconds = retryNanoseconds
        let slack = Self.usage().slackBytes
        state = Mutex((slack, nil, 0, slack))
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

    /// Trims now if the slack is `minimumGainBytes` above the floor, unless the last trim
    /// released little, was less than `retryNanoseconds` ago and the slack has not grown by
    /// `minimumGainBytes` since.
    /// - Returns: whether it trimmed.
    @discardableResult
    public func trimIfWorthIt() -> Bool {
        let slack = Self.usage().slackBytes
        let now = DispatchTime.now().uptimeNanoseconds
        return state.withLock { state in
            state.floor = min(state.floor, slack)
            guard Self.worthTrimming(slack: slack, floor: state.floor, minimumGainBytes: minimumGainBytes,
                                     lastReleased: state.lastReleased, slackAfterLastTrim: state.slackAfterLastTrim,
                                     sinceLastTrim: state.lastTrimAt.map { now &- $0 }, retryNanoseconds: retryNanoseconds) else {
                return false
            }
            malloc_trim(0)
            let after = Self.usage().slackBytes
            state.lastReleased = slack - after
            state.slackAfterLastTrim = after
            state.lastTrimAt = now
            trims.add(1, ordering: .relaxed)
            return true
        }
    }

    /// Trims run so far.
    public var trimCount: Int { trims.load(ordering: .relaxed) }

    /// The policy, apart for tests: the slack is `minimumGainBytes` above the floor, and the last
    /// trim (if any) released at least a quarter of that, or was `retryNanoseconds` ago, or the
    /// slack grew by `minimumGainBytes` since it.
    static func worthTrimming(slack: Int, floor: Int, minimumGainBytes: Int, lastReleased: Int, slackAfterLastTrim: Int,
                              sinceLastTrim: UInt64?, retryNanoseconds: UInt64) -> Bool {
        guard slack - floor >= minimumGainBytes else { return false }
        guard let since = sinceLastTrim else { return true }
        return lastReleased >= minimumGainBytes / 4 || since >= retryNanoseconds || slack - slackAfterLastTrim >= minimumGainBytes
    }
}
