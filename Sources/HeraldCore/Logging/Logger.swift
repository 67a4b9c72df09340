/// Where the core reports what an operator should see (dead letters, deleted devices, plans left
/// to recovery, failures). The core writes no log lines itself — that is I/O — so the executable
/// wires a `Logger` to Herald's structured log, and tests pass `.silent` or one that records.
/// Metadata never holds secrets or whole tokens.
public struct Logger: Sendable {
    /// Severity, as the structured log names it.
    public enum Level: Sendable { case info, warning, error }
    /// Writes one line: its level, a message (a sentence without secrets) and string metadata.
    public let write: @Sendable (Level, String, [String: String]) -> Void

    public init(_ write: @escaping @Sendable (Level, String, [String: String]) -> Void) {
        self.write = write
    }

    /// Drops everything (tests).
    public static let silent = Logger { _, _, _ in }

    public func info(_ message: String, _ metadata: [String: String] = [:]) { write(.info, message, metadata) }
    public func warning(_ message: String, _ metadata: [String: String] = [:]) { write(.warning, message, metadata) }
    public func error(_ message: String, _ metadata: [String: String] = [:]) { write(.error, message, metadata) }
}
