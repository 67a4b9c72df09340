/// A channel's recent messages for resume (RT-5): at most `capacity` of them, none older than the
/// TTL. Remembers the newest sequence it has dropped, which is what tells a resuming client
/// whether its gap is still fully covered.
struct HistoryRing {
    private var slots: [ChannelMessage?]
    private var head = 0      // index of the oldest
    private(set) var count = 0
    /// Sequence of the newest message evicted (by size or age); 0 when none was.
    private(set) var evictedThrough: UInt64 = 0

    init(capacity: Int) {
        slots = Array(repeating: nil, count: max(capacity, 1))
    }

    var capacity: Int { slots.count }

    mutating func append(_ message: ChannelMessage) {
        if count == slots.count {
            if let oldest = slots[head] { evictedThrough = max(evictedThrough, oldest.sequence) }
            slots[head] = message
            head = (head + 1) % slots.count
        } else {
            slots[(head + count) % slots.count] = message
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
    }

    /// Messages with a sequence above `sequence`, oldest first.
    func messages(after sequence: UInt64) -> [ChannelMessage] {
        var out: [ChannelMessage] = []
        for i in 0..<count {
            if let message = slots[(head + i) % slots.count], message.sequence > sequence { out.append(message) }
        }
        return out
    }
}
