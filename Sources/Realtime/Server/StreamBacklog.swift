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

    private var items: [Item] = []
    private var head = 0
    /// Live messages waiting behind the replay.
    private(set) var liveCount = 0

    var isEmpty: Bool { head == items.count }

    mutating func append(_ item: Item, live: Bool = false) {
        items.append(item)
        if live { liveCount += 1 }
    }

    mutating func popFirst() -> Item? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head == items.count {
            // Drained: release the storage, the common state of a stream.
            items = []
            head = 0
            liveCount = 0
        }
        return item
    }
}
