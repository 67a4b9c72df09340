import HeraldCore

/// A channel's recent messages for resume (RT-5): at most `capacity` of them, none older than the
/// TTL. Remembers the newest sequence it has dropped, which is what tells a resuming client
/// whether its gap is still fully covered.
///
/// Storage grows with use up to `capacity`: most channels (a user's personal one) hold a few
/// messages or none, and a ring allocated whole would cost every idle subscriber kilobytes.
struct HistoryRing {
    private var slots: [ChannelMessage?] = []
    private var head = 0      // index of the oldest
    private(set) var count = 0
    let capacity: Int
    /// Sequence of the newest message evicted (by size or age); 0 when none was.
    private(set) var evictedThrough: UInt64 = 0

    init(capacity: Int) {
        self.capacity = max(capacity, 1)
    }

    mutating func append(_ message: ChannelMessage) {
        if count == capacity {
            if let oldest = slots[head] { evictedThrough = max(evictedThrough, oldest.sequence) }
            slots[head] = message
            head = (head + 1) % capacity
        } else {
            if count == slots.count {
                // Storage full but below capacity: grow, oldest-first so appending stays in order.
                if head != 0 { unwrap() }
                slots.append(message)
            } else {
                slots[(head + count) % slots.count] = message
            }
            count += 1
        }
    }

    /// Drops messages published before `cutoff` (monotonic ns).
    mutating func expire(olderThan cutoff: UInt64) {
        while count > 0, let oldest = slots[head], oldest.publishedAt < cutoff {
            evictedThrough = max(evictedThrough, oldest.sequence)
            slots[head] = nil
            head = (head + 1) % slots.count
            count -= 1
        }
        if count == 0 {
            // Give the storage back: an emptied ring is the common state of an idle channel.
            slots = []
            head = 0
        }
    }

    /// Messages with a sequence above `sequence`, oldest first.
    func messages(after sequence: UInt64) -> [ChannelMessage] {
        var out: [ChannelMessage] = []
        for i in 0..<count {
            if let message = slots[(head + i) % slots.count], message.sequence > sequence { out.append(message) }
        }
        return out
    }

    /// Rewrites a wrapped, not-yet-full ring in oldest-first order so it can grow by appending.
    private mutating func unwrap() {
        var ordered: [ChannelMessage?] = []
        ordered.reserveCapacity(min(capacity, max(count * 2, 4)))
        for i in 0..<count { ordered.append(slots[(head + i) % slots.count]) }
        slots = ordered
        head = 0
    }
}
