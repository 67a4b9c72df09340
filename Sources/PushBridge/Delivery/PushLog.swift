/// Where the push bridge reports what an operator should see (dead letters, deleted devices,
/// failures). The executable wires it to Herald's structured log; PushBridge itself depends on no
/// logging module. Metadata never holds secrets or whole tokens.
public struct PushLog: Sendable {
    public enum Level: Sendable { case info, warning, error }
    public let write: @Sendable (Level, String, [String: String]) -> Void

    public init(_ write: @escaping @Sendable (Level, String, [String: String]) -> Void) {
        self.write = write
    }

    /// Drops everything (tests).
    public static let silent = PushLog { _, _, _ in }

    func info(_ message: String, _ metadata: [String: String] = [:]) { write(.info, message, metadata) }
    func warning(_ message: String, _ metadata: [String: String] = [:]) { write(.warning, message, metadata) }
    func error(_ message: String, _ metadata: [String: String] = [:]) { write(.error, message, metadata) }
}
