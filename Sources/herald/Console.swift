import Glibc
import Realtime

/// The command line's own text: usage and refused settings on standard error, a subcommand's
/// answer on standard output. Written with `write(2)` through `LogSink`, never with Foundation's
/// `FileHandle.write(_:)`, which traps when the descriptor refuses (`ENOSPC` on a full volume or
/// `2>/dev/full`, `EIO`): `herald serve` with a bad setting died of SIGILL there instead of
/// exiting 2, and a script read a crash where the exit status had a meaning.
enum Console {
    private static let errorSink = LogSink(descriptor: STDERR_FILENO)
    private static let outputSink = LogSink(descriptor: STDOUT_FILENO)

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
        outputSink.emit(text, notice: notice)
    }

    /// The line before the first one written after some were refused.
    private static func notice(_ count: Int, _ reason: String) -> String {
        "herald: \(count) earlier line(s) were not written: \(reason)\n"
    }
}
