/// Bytes waiting for the socket to accept them, oldest first. Chunks are `[UInt8]` values, so a
/// shared message's bytes are queued by reference (a retain), never copied per subscriber.
/// Owned by one connection, on its loop; not copyable, because its chunks may live in a shared box.
///
/// One chunk is held without an array (the common case: one event, or one response); several are
/// sent with one `send` by gathering them into the loop's scratch buffer, so a burst of events
/// for one reader costs one system call instead of one per event (issue 8, writes coalesced).
struct OutboundQueue: ~Copyable {
    private enum Storage {
        case empty
        case one([UInt8])
        case many(Chunks)
    }

    /// Several queued chunks. A class, so appending and dropping sent chunks mutate the one array
    /// in place: an array held in an enum payload is copied out by `switch`, and its growth then
    /// copied every element (a retain each) on every append: a third of all instructions
    /// of a 1,000-subscriber burst (callgrind, issue 13).
    private final class Chunks {
        // Unchecked like the connection's own queue (see `HTTPConnection.outbound`): one owner, one loop.
        @exclusivity(unchecked) var chunks: [[UInt8]]
        /// Chunks from `head` on are unsent.
        @exclusivity(unchecked) var head = 0
        init(_ first: [UInt8], _ second: [UInt8]) {
            // Room for a burst: a queue that becomes two chunks usually becomes more in this turn.
            chunks = []
            chunks.reserveCapacity(8)
            chunks.append(first)
            chunks.append(second)
        }
        var unsent: Int { chunks.count - head }
    }

    private var storage = Storage.empty
    /// Bytes of the oldest chunk already sent.
    private var sentInHead = 0
    /// Unsent bytes in the queue.
    private(set) var byteCount = 0

    var isEmpty: Bool {
        if case .empty = storage { return true }
        return false
    }

    /// Chunks (events) still queued.
    var count: Int {
        switch storage {
        case .empty: 0
        case .one: 1
        case .many(let queued): queued.unsent
        }
    }

    /// - Parameter alreadySent: bytes of `bytes` already written (only when the queue is empty).
    mutating func append(_ bytes: [UInt8], alreadySent: Int = 0) {
        switch storage {
        case .empty:
            sentInHead = alreadySent
            storage = .one(bytes)
        case .one(let only):
            storage = .many(Chunks(only, bytes))
        case .many(let queued):
            queued.chunks.append(bytes)
        }
        byteCount += bytes.count - alreadySent
    }

    /// Drops every chunk after the one being sent, so a closing message can go next without the
    /// stream breaking in the middle of an event.
    mutating func dropAllButPartialHead() {
        let partial: [UInt8]
        switch storage {
        case .empty: return
        case .one(let only): partial = only
        case .many(let queued): partial = queued.chunks[queued.head]
        }
        if sentInHead > 0 {
            storage = .one(partial)
            byteCount = partial.count - sentInHead
        } else {
            storage = .empty
            byteCount = 0
        }
    }

    enum FlushResult { case drained, wouldBlock, failed }

    /// Sends as much as the socket takes.
    ///
    /// - Parameter scratch: where several chunks are gathered for one `send`; its contents are
    ///   not kept between calls.
    mutating func flush(to fd: Int32, scratch: UnsafeMutableRawBufferPointer) -> FlushResult {
        while true {
            switch storage {
            case .empty:
                return .drained
            case .one(let only):
                let result = only.withUnsafeBytes { Socket.send(fd, UnsafeRawBufferPointer(rebasing: $0[sentInHead...])) }
                if result < 0 { return result == Socket.wouldBlock ? .wouldBlock : .failed }
                sentInHead += result
                byteCount -= result
                guard sentInHead == only.count else { return .wouldBlock }
                storage = .empty
                sentInHead = 0
                return .drained
            case .many(let queued):
                defer {
                    if queued.head == queued.chunks.count {
                        storage = .empty
                    } else if queued.head == queued.chunks.count - 1 {
                        storage = .one(queued.chunks[queued.head])
                    } else if queued.head >= 64, queued.head * 2 >= queued.chunks.count {
                        // A reader that never quite catches up must not grow the array forever.
                        queued.chunks.removeFirst(queued.head)
                        queued.head = 0
                    }
                }
                let (result, offered) = Self.gatherAndSend(fd, chunks: queued.chunks, from: queued.head,
                                                           skipping: sentInHead, scratch: scratch)
                if result < 0 { return result == Socket.wouldBlock ? .wouldBlock : .failed }
                byteCount -= result
                var left = result
                while queued.head < queued.chunks.count {
                    let rest = queued.chunks[queued.head].count - sentInHead
                    guard rest <= left else {
                        sentInHead += left
                        break
                    }
                    left -= rest
                    queued.chunks[queued.head] = []   // the bytes may be a shared message's: drop our reference now
                    queued.head += 1
                    sentInHead = 0
                }
                if result < offered { return .wouldBlock }
                // The socket took all that was gathered; go round again for what did not fit.
            }
        }
    }

    /// Copies unsent chunks (the first from `skip` on) into `scratch` until it is full, and sends
    /// them with one call; a single chunk, or one larger than `scratch`, is sent from its own storage.
    /// - Returns: bytes sent (or `Socket.wouldBlock`, or -1), and how many were offered.
    private static func gatherAndSend(_ fd: Int32, chunks: [[UInt8]], from head: Int, skipping skip: Int,
                                      scratch: UnsafeMutableRawBufferPointer) -> (sent: Int, offered: Int) {
        if head == chunks.count - 1 || chunks[head].count - skip >= scratch.count {
            return chunks[head].withUnsafeBytes { bytes in
                (Socket.send(fd, UnsafeRawBufferPointer(rebasing: bytes[skip...])), bytes.count - skip)
            }
        }
        var filled = 0
        var index = head
        var offset = skip
        while index < chunks.count, filled < scratch.count {
            filled += chunks[index].withUnsafeBytes { bytes -> Int in
                let n = min(bytes.count - offset, scratch.count - filled)
                if n > 0 {
                    UnsafeMutableRawBufferPointer(rebasing: scratch[filled..<(filled + n)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + n)]))
                }
                return n
            }
            index += 1
            offset = 0
        }
        return (Socket.send(fd, UnsafeRawBufferPointer(rebasing: scratch[0..<filled])), filled)
    }
}
