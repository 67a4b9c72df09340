import Glibc
import Realtime
import Synchronization

/// The command line's own text: usage and refused settings on standard error, a subcommand's
/// answer on standard output. Written with `write(2)` through `LogSink`, never with Foundation's
/// `FileHandle.write(_:)`, which traps when the descriptor refuses (`ENOSPC` on a full volume or
/// `2>/dev/full`, `EIO`): `herald serve` with a bad setting died of SIGILL there instead of
/// exiting 2, and a script read a crash where the exit status had a meaning.
enum Console {
    private static let errorSink = LogSink(descriptor: STDERR_FILENO)
    private static let outputSink = LogSink(descriptor: STDOUT_FILENO)
    /// Standard output was closed when the process started (`>&-`): what `output` writes is lost.
    private static let outputWasClosed = Atomic(false)

    /// Opens `/dev/null` on each of the descriptors 0, 1 and 2 the parent left closed. Call first,
    /// before anything opens a file: the kernel gives the lowest free number, so the next open
    /// (an event loop's epoll, the database's lock file, a client's socket) would take the
    /// closed one's, and the log lines (2) or an answer (1) would be written into it. An answer
    /// written to a standard output that was closed still counts as refused.
    static func keepStandardDescriptors() {
        for descriptor: Int32 in 0...2 where fcntl(descriptor, F_GETFD) == -1 && errno == EBADF {
            let opened = open("/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY)
            // The lowest free number: this one, the lower ones being open already.
            if opened >= 0, opened != descriptor {
                dup2(opened, descriptor)
                close(opened)
            }
            if descriptor == STDOUT_FILENO { outputWasClosed.store(true, ordering: .relaxed) }
        }
    }

    /// Writes `text` (ending in a newline) to standard error. A refused write is dropped: the
    /// exit status still says what happened.
    static func error(_ text: String) {
        errorSink.emit(text, notice: notice)
    }

    /// Writes `text` to standard output.
    /// - Returns: false when standard output refused it (the answer is lost: the caller exits
    ///   non-zero, so a script does not take the missing text for an empty answer).
    @discardableResult
    static func output(_ text: String) -> Bool {
        outputSink.emit(text, notice: notice) && !outputWasClosed.load(ordering: .relaxed)
    }

    /// The line before the first one written after some were refused.
    private static func notice(_ count: Int, _ reason: String) -> String {
        "herald: \(count) earlier line(s) were not written: \(reason)\n"
    }
}
