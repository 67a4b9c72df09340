import Glibc
import Testing
@testable import Realtime

/// A connected, non-blocking `AF_UNIX` stream pair: `writer` is what the queue sends on.
private final class SocketPair {
    let writer: Int32
    let reader: Int32

    init(sendBuffer: Int32? = nil) {
        var fds: [Int32] = [0, 0]
        let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds)
        precondition(made == 0, "socketpair failed: \(errno)")
        writer = fds[0]
        reader = fds[1]
        if var size = sendBuffer {
            setsockopt(writer, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    deinit {
        close(writer)
        close(reader)
    }

    /// Everything readable now.
    func readAll() -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(reader, $0.baseAddress, $0.count) }
            if n <= 0 { return out }
            out += buffer[0..<n]
        }
    }
}

private func scratch(_ size: Int) -> UnsafeMutableRawBufferPointer {
    UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
}

@Suite struct OutboundQueueTests {
    @Test func chunksQueuedInOneTurnGoOutInOrderInOneFlush() {
        let pair = SocketPair()
        let buffer = scratch(64 * 1024)
        defer { buffer.deallocate() }
        var queue = OutboundQueue()
        let events = (1...50).map { Array("id: e\($0)\ndata: {\"i\":\($0)}\n\n".utf8) }
        for event in events { queue.append(event) }
        #expect(queue.count == 50)
        #expect(queue.byteCount == events.reduce(0) { $0 + $1.count })
        #expect(queue.flush(to: pair.writer, scratch: buffer) == .drained)
        #expect(queue.isEmpty && queue.byteCount == 0)
        #expect(pair.readAll() == events.flatMap { $0 })
    }

    @Test func gatheringMoreThanTheScratchBufferTakesSeveralRounds() {
        let pair = SocketPair()
        let buffer = scratch(16)   // smaller than most chunks: some go out whole, some gathered
        defer { buffer.deallocate() }
        var queue = OutboundQueue()
        let chunks = (0..<40).map { i in [UInt8](repeating: UInt8(65 + i % 26), count: 1 + (i * 7) % 23) }
        for chunk in chunks { queue.append(chunk) }
        #expect(queue.flush(to: pair.writer, scratch: buffer) == .drained)
        #expect(pair.readAll() == chunks.flatMap { $0 })
    }

    @Test func aFullSocketKeepsTheRestInOrderForTheNextFlush() {
        let pair = SocketPair(sendBuffer: 4096)
        let buffer = scratch(64 * 1024)
        defer { buffer.deallocate() }
        var queue = OutboundQueue()
        let chunks = (0..<200).map { i in Array("event \(i) ".utf8) + [UInt8](repeating: UInt8(97 + i % 26), count: 300) + [10] }
        for chunk in chunks { queue.append(chunk) }
        let total = chunks.reduce(0) { $0 + $1.count }
        var received: [UInt8] = []
        var rounds = 0
        while true {
            let result = queue.flush(to: pair.writer, scratch: buffer)
            #expect(result != .failed)
            received += pair.readAll()
            #expect(queue.byteCount == total - received.count)
            rounds += 1
            if result == .drained { break }
            #expect(rounds < 10_000)
        }
        #expect(rounds > 1, "the socket buffer should have filled at least once")
        #expect(received == chunks.flatMap { $0 })
    }

    @Test func droppingKeepsOnlyThePartlySentHead() {
        let pair = SocketPair(sendBuffer: 4096)
        let buffer = scratch(64 * 1024)
        defer { buffer.deallocate() }
        var queue = OutboundQueue()
        let big = [UInt8](repeating: 120, count: 1 << 20)
        queue.append(big)
        queue.append(Array("next".utf8))
        #expect(queue.flush(to: pair.writer, scratch: buffer) == .wouldBlock)
        let sent = big.count + 4 - queue.byteCount
        #expect(sent > 0 && sent < big.count)
        queue.dropAllButPartialHead()
        #expect(queue.count == 1)
        #expect(queue.byteCount == big.count - sent)

        var untouched = OutboundQueue()
        untouched.append(Array("a".utf8))
        untouched.append(Array("b".utf8))
        untouched.dropAllButPartialHead()
        #expect(untouched.isEmpty && untouched.byteCount == 0)
    }

    @Test func aClosedPeerFails() {
        let buffer = scratch(1024)
        defer { buffer.deallocate() }
        var queue = OutboundQueue()
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        close(fds[1])
        queue.append(Array("x".utf8))
        queue.append(Array("y".utf8))
        #expect(queue.flush(to: fds[0], scratch: buffer) == .failed)
        close(fds[0])
    }
}
