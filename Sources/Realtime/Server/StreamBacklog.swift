import HeraldCore
/// What a stream must still write, in order, handed to the outbound queue only as the socket
/// drains. A resume's replay can be the whole history (hundreds of messages); writing it at once
/// would count every resuming client as a slow reader and cut it again, forever. Live messages
/// that arrive meanwhile queue behind it, bounded like the outbound queue (RT-8).
///
/// Owned by one connection, on its loop.
struct StreamBacklog {
    enum Item {
        /// A channel message (its SSE or WebSocket bytes are chosen when written).
        case message(ChannelMessage)
        /// Protocol bytes in sequence with the messages (`subscribed`, `reset`, retained, bare `id:`).
        case bytes([UInt8])
    }

    /// The waiting items, boxed and present only while something waits: every idle stream has a
    /// backlog, and inline its four words cost each one 24 bytes (issue 17: ≤ 1.2 KiB per idle
    /// SSE stream). Invariant: present ⇒ at least one item unread.
    private final class Queue {
        /// An item and, for a live message, its encoded size (0 for replay and protocol bytes).
        var items: [(item: Item, liveBytes: Int)] = []
        var head = 0
        var liveCount = 0
        var liveBytes = 0
    }

    private var queue: Queue?

    /// Live messages waiting behind the replay, and their bytes: bounded like the outbound queue.
    var liveCount: Int { queue?.liveCount ?? 0 }
    var liveBytes: Int { queue?.liveBytes ?? 0 }

    var isEmpty: Bool { queue == nil }

    /// - Parameter liveBytes: for a live message, its encoded size; 0 for replay items.
    mutating func append(_ item: Item, liveBytes: Int = 0) {
        let queue: Queue
        if let existing = self.queue {
            queue = existing
        } else {
            queue = Queue()
            self.queue = queue
        }
        queue.items.append((item, liveBytes))
        if liveBytes > 0 {
            queue.liveCount += 1
            queue.liveBytes += liveBytes
        }
    }

    mutating func popFirst() -> Item? {
        guard let queue else { return nil }
        let (item, size) = queue.items[queue.head]
        queue.head += 1
        if size > 0 {
            queue.liveCount -= 1
            queue.liveBytes -= size
        }
        // Drained: release the storage, the common state of a stream.
        if queue.head == queue.items.count { self.queue = nil }
        return item
    }
}
