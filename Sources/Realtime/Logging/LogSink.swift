import Glibc
import Synchronization

/// Where log lines go: one file descriptor (standard error for `Log`), written with `write(2)`.
///
/// A line the descriptor refuses is dropped and counted, never retried and never fatal: standard
/// error is often a file on the database's own volume (full exactly when storage answers 507,
/// RL-2) or a pipe to a log shipper that may exit (`EPIPE`; SIGPIPE is ignored once the server
/// runs). Foundation's `FileHandle.write(_:)` traps on either, which killed the whole server over
/// a log line. The first line that gets through afterwards is preceded by one line the caller
/// formats (`notice`), saying how many were lost and why, so a gap in the log is never silent.
public final class LogSink: Sendable {
    /// The descriptor written to; not owned (never closed here).
    public let descriptor: Int32
    private let dropped = Atomic<Int>(0)
    private let lastError = Atomic<Int32>(0)
    /// A line was cut after some of its bytes were written: the notice starts on a fresh line.
    private let cutMidLine = Atomic<Bool>(false)

    /// A sink writing to `descriptor` (e.g. `STDERR_FILENO`).
    public init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Lines dropped since the last notice was written (or since the start).
    public var droppedLines: Int { dropped.load(ordering: .relaxed) }

    /// Writes `line` (which ends in a newline) whole, retrying short writes and `EINTR`.
    /// - Parameter notice: formats the line that reports `count` lines dropped before this one
    ///   and the `reason` (the `strerror` text of the last refusal); called only after a drop.
    /// - Returns: false when the line was dropped (the descriptor refused it: `ENOSPC`, `EPIPE`,
    ///   `EAGAIN`, `EIO`…); it is then counted for the next notice.
    @discardableResult
    public func emit(_ line: String, notice: (_ count: Int, _ reason: String) -> String) -> Bool {
        if dropped.load(ordering: .relaxed) > 0 {
            let count = dropped.exchange(0, ordering: .acquiringAndReleasing)
            if count > 0 {
                // Cleared only once the notice is through: a refused notice leaves the cut line open.
                let fresh = cutMidLine.load(ordering: .relaxed) ? "\n" : ""
                let reason = String(cString: strerror(lastError.load(ordering: .relaxed)))
                guard writeWhole(fresh + notice(count, reason)) else {
                    // Still refused: the notice waits for the next line, which counts too.
                    dropped.add(count + 1, ordering: .acquiringAndReleasing)
                    return false
                }
                cutMidLine.store(false, ordering: .relaxed)
            }
        }
        guard writeWhole(line) else {
            dropped.add(1, ordering: .acquiringAndReleasing)
            return false
        }
        return true
    }

    private func writeWhole(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                if written > 0 {
                    offset += written
                    continue
                }
                let error = written < 0 ? errno : ENOSPC
                if error == EINTR { continue }
                lastError.store(error, ordering: .relaxed)
                if offset > 0 { cutMidLine.store(true, ordering: .relaxed) }
                return false
            }
            return true
        }
    }
}
