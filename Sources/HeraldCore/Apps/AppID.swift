/// An app's id (SPEC AP-1): 1–63 characters of `a-z 0-9 -`, starting with a letter or digit.
/// The id is the `app` column of every tenant table and part of a non-default app's internal
/// channel names (ADR 0006), so its alphabet stays narrow: no `~`, no `:`, no upper case.
public struct AppID: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    /// The longest id, in characters.
    public static let maxLength = 63
    /// The app the environment configures (seed 000's operators change nothing).
    public static let `default` = AppID(unchecked: "default")

    /// The validated id.
    public let rawValue: String

    /// - Returns: nil when `raw` is empty, too long, or has a character outside the alphabet.
    public init?(_ raw: some StringProtocol) {
        let utf8 = raw.utf8
        guard let first = utf8.first, first != UInt8(ascii: "-"), utf8.count <= Self.maxLength,
              utf8.allSatisfy(Self.isAllowed) else { return nil }
        rawValue = String(raw)
    }

    private init(unchecked raw: String) { rawValue = raw }

    /// Whether this is the environment's app.
    public var isDefault: Bool { rawValue == "default" }

    public var description: String { rawValue }

    public static func < (lhs: AppID, rhs: AppID) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = AppID(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not an app id: \(text)"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"): true
        default: false
        }
    }
}
