import Glibc
@testable import Realtime
import Testing

/// A log line standard error refuses is dropped and counted, never fatal (breaker12: the server
/// died with SIGILL at its first line once its log file's volume was full, `2>/dev/full`, or once
/// the pipe to its log shipper closed).
@Suite struct LogSinkTests {
    private static func notice(_ count: Int, _ reason: String) -> String { "dropped \(count): \(reason)\n" }

    /// Everything readable from `fd` now (non-blocking).
    private func drain(_ fd: Int32) -> String {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var bytes = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func aFullDeviceDropsTheLinesAndCountsThem() throws {
        let full = open("/dev/full", O_WRONLY)
        try #require(full >= 0)
        defer { close(full) }
        let sink = LogSink(descriptor: full)
        #expect(!sink.emit("one\n", notice: Self.notice))
        #expect(!sink.emit("two\n", notice: Self.notice))
        // The notice is refused too: it waits for the next line, and "two" is counted with "one".
        #expect(sink.droppedLines == 2)
    }

    @Test func theFirstLineThroughIsPrecededByTheCountAndTheReason() throws {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]); close(ends[1]) }
        // A pipe whose reader stopped reading and whose buffer is full refuses with EAGAIN.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        // 5,000 bytes: the 64 KiB pipe takes 13 whole lines and the start of the 14th.
        let filler = String(repeating: "x", count: 4999) + "\n"
        let sink = LogSink(descriptor: ends[1])
        var written = 0
        while sink.emit(filler, notice: Self.notice) { written += 1 }
        #expect(sink.droppedLines == 1, "the 14th, cut after its first bytes")
        #expect(!sink.emit("lost\n", notice: Self.notice))
        #expect(sink.droppedLines == 2, "the notice, refused, waits; the line behind it counts")
        _ = drain(ends[0])
        #expect(sink.emit("kept\n", notice: Self.notice))
        #expect(sink.droppedLines == 0)
        let after = drain(ends[0])
        // The notice starts on a line of its own, after the cut one, though it was refused once.
        #expect(after == "\ndropped 2: \(String(cString: strerror(EAGAIN)))\nkept\n")
        #expect(written > 0)
    }

    @Test func aClosedPipeIsDroppedNotFatal() throws {
        signal(SIGPIPE, SIG_IGN)  // as HTTPServer sets it for the whole process
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        close(ends[0])
        defer { close(ends[1]) }
        let sink = LogSink(descriptor: ends[1])
        #expect(!sink.emit("nobody reads this\n", notice: Self.notice))
        #expect(sink.droppedLines == 1)
    }

    @Test func theNoticeIsALineOfTheConfiguredFormat() {
        let json = Log.format(.warning, "log lines dropped: standard error refused them", [("count", "3"), ("error", "No space left on device")],
                              as: .json, at: 0)
        #expect(json == #"{"ts":"1970-01-01T00:00:00.000Z","level":"warning","msg":"log lines dropped: standard error refused them","count":"3","error":"No space left on device"}"# + "\n")
        let text = Log.format(.warning, "log lines dropped", [("count", "3"), ("error", "Broken pipe")], as: .text, at: 0)
        #expect(text == "1970-01-01T00:00:00.000Z WARNING log lines dropped count=3 error=\"Broken pipe\"\n")
    }
}
