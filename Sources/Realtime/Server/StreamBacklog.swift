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

    /// An item and, for a live message, its encoded size (0 for replay and protocol bytes).
    private var items: [(item: Item, liveBytes: Int)] = []
    private var head = 0
    /// Live messages waiting behind the replay, and their bytes: bounded like the outbound queue.
    private(set) var liveCount = 0
    private(set) var liveBytes = 0

    var isEmpty: Bool { head == items.count }

    /// - Parameter liveBytes: for a live message, its encoded size; 0 for replay items.
    mutating func append(_ item: Item, liveBytes: Int = 0) {
        items.append((item, liveBytes))
        if liveBytes > 0 {
            liveCount += 1
            self.liveBytes += liveBytes
        }
    }

    mutating func popFirst() -> Item? {
        guard head < items.count else { return nil }
        let (item, size) = items[head]
        head += 1
        if size > 0 {
            liveCount -= 1
            liveBytes -= size
        }
        if head == items.count {
            // Drained: release the storage, the common state of a stream.
            items = []
            head = 0
        }
        return item
    }
}
