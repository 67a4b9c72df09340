/// Bytes waiting for the socket to accept them, oldest first. Chunks are `[UInt8]` values, so a
/// shared message's bytes are queued by reference (a retain), never copied per subscriber.
/// Owned by one connection, on its loop.
struct OutboundQueue {
    private var chunks: [[UInt8]] = []
    private var head = 0
    /// Bytes of `chunks[head]` already sent.
    private var sentInHead = 0
    /// Unsent bytes in the queue.
    private(set) var byteCount = 0

    var isEmpty: Bool { head == chunks.count }
    /// Chunks (events) still queued.
    var count: Int { chunks.count - head }

    mutating func append(_ bytes: [UInt8], alreadySent: Int = 0) {
        if isEmpty { sentInHead = alreadySent }
        chunks.append(bytes)
        byteCount += bytes.count - alreadySent
    }

    /// Drops every chunk after the one being sent, so a closing message can go next without the
    /// stream breaking in the middle of an event.
    mutating func dropAllButPartialHead() {
        guard !isEmpty else { return }
        if sentInHead > 0 {
            let partial = chunks[head]
            chunks = [partial]
            head = 0
            byteCount = partial.count - sentInHead
        } else {
            chunks.removeAll()
            head = 0
            byteCount = 0
        }
    }

    enum FlushResult { case drained, wouldBlock, failed }

    /// Sends as much as the socket takes.
    mutating func flush(to fd: Int32) -> FlushResult {
        while head < chunks.count {
            let result = chunks[head].withUnsafeBytes { buffer -> Int in
                Socket.send(fd, UnsafeRawBufferPointer(rebasing: buffer[sentInHead...]))
            }
            if result < 0 { return result == Socket.wouldBlock ? .wouldBlock : .failed }
            sentInHead += result
            byteCount -= result
            if sentInHead == chunks[head].count {
                head += 1
                sentInHead = 0
            } else {
                return .wouldBlock
            }
        }
        chunks.removeAll(keepingCapacity: chunks.capacity <= 16)
        head = 0
        return .drained
    }
}
