/// A channel's subscriber count on each event loop.
///
/// 16 bytes: the node keeps one per channel, so one per idle stream on its personal channel, in a
/// dictionary whose buckets are paid for whether used or not (10,000 streams: 16,384 buckets).
/// Almost every channel has its subscribers on one loop (a personal channel, a user's one
/// stream), so that loop and its count are stored inline; a channel with subscribers on two loops
/// or more keeps a count per loop in an array. The earlier layout, four loops inline as a
/// `SIMD4<UInt32>` plus an array for the rest, was 32 bytes a bucket (issue 17: ≤ 1.2 KiB per
/// idle SSE stream).
///
/// Guarded like the fan-out state that holds it.
struct LoopCounts {
    private enum Storage {
        /// Subscribers on `loop` only, or none when `count` is 0.
        case one(loop: UInt32, count: UInt32)
        /// Index: loop; 0 for a loop past the end.
        case many([Int])
    }

    private var storage = Storage.one(loop: 0, count: 0)

    /// True when no loop has a subscriber.
    var isZero: Bool {
        switch storage {
        case .one(_, let count): count == 0
        case .many(let counts): counts.allSatisfy { $0 == 0 }
        }
    }

    /// The count on `loop` (0-based); 0 for a loop that never had one.
    subscript(loop: Int) -> Int {
        get {
            switch storage {
            case .one(let only, let count): Int(only) == loop ? Int(count) : 0
            case .many(let counts): loop < counts.count ? counts[loop] : 0
            }
        }
        set {
            precondition(newValue >= 0, "a subscriber count cannot be negative")
            precondition(loop >= 0 && loop <= Int(UInt32.max), "a loop index fits in 32 bits")
            switch storage {
            case .one(let only, let count):
                if Int(only) == loop || count == 0 {
                    precondition(newValue <= Int(UInt32.max), "a subscriber count on one loop fits in 32 bits")
                    storage = .one(loop: UInt32(loop), count: UInt32(newValue))
                } else if newValue > 0 {
                    var counts = [Int](repeating: 0, count: max(Int(only), loop) + 1)
                    counts[Int(only)] = Int(count)
                    counts[loop] = newValue
                    storage = .many(counts)
                }
            case .many(var counts):
                storage = .one(loop: 0, count: 0)   // keep `counts` uniquely referenced while it changes
                if loop >= counts.count { counts.append(contentsOf: repeatElement(0, count: loop + 1 - counts.count)) }
                counts[loop] = newValue
                storage = .many(counts)
            }
        }
    }
}
