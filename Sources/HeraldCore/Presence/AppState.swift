/// Whether a client's app is visible to its user (RT-7): `foreground` or `background`.
public struct AppState: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public static let foreground = AppState(rawValue: "foreground")
    public static let background = AppState(rawValue: "background")

    private init(rawValue: String) { self.rawValue = rawValue }

    /// - Returns: nil for anything but `foreground` / `background`.
    public init?(_ text: String) {
        switch text {
        case "foreground": self = .foreground
        case "background": self = .background
        default: return nil
        }
    }

    public var description: String { rawValue }
}

/// The transport of a live connection.
public enum StreamTransport: String, Sendable {
    case sse
    case websocket
}
