/// When a hash table that grew for a peak gives its storage back.
///
/// A Swift `Dictionary` never shrinks: removing entries, or `removeValue` down to none, keeps
/// every bucket it grew to. The node's channel and connection tables grow with a peak of streams
/// (1,000 streams of 64 channels each: 65,000 channels in the fan-out, each loop's hub, the
/// broker and presence) and kept 12.6 MB of empty buckets after every stream closed
/// (Benchmarks/peak.py, issue 17). A table that has fallen to an eighth of its capacity is
/// rehashed into one sized for twice its entries.
///
/// Hysteresis: after a shrink at `count` entries the table holds at least `2 × count`, so it
/// grows again only past twice the entries it shrank at and shrinks again only below a quarter
/// of them; a load that moves within a factor of two never rehashes back and forth. The rehash
/// copies at most an eighth of the capacity, after at least seven eighths of it were removed, so
/// it adds O(1) per removal. Tables of up to `minimumCapacity` entries are never shrunk: they
/// cost little, and a small load that comes and goes would otherwise rehash each time.
public enum SparseStorage {
    /// Capacities up to this many entries are kept as they are.
    public static let minimumCapacity = 1_024
    /// A table shrinks when `count × shrinkRatio ≤ capacity`.
    public static let shrinkRatio = 8

    /// Whether a table of `count` entries and room for `capacity` should shrink.
    @inlinable
    public static func shouldShrink(count: Int, capacity: Int) -> Bool {
        capacity > minimumCapacity && count * shrinkRatio <= capacity
    }

    /// The room a shrunk table of `count` entries asks for.
    @inlinable
    public static func shrunkCapacity(count: Int) -> Int { 2 * count }
}

extension Dictionary {
    /// Rehashes into smaller storage when the table has fallen to an eighth of its capacity
    /// (`SparseStorage`); otherwise does nothing (two loads and a compare). Call it after
    /// removing entries.
    @inlinable
    public mutating func shrinkIfSparse() {
        guard SparseStorage.shouldShrink(count: count, capacity: capacity) else { return }
        var smaller = Dictionary(minimumCapacity: SparseStorage.shrunkCapacity(count: count))
        for (key, value) in self { smaller[key] = value }
        self = smaller
    }
}
