/// An event's name: 1–64 characters of `A-Z a-z 0-9 _ - . :` (SPEC RT-8a). It lands on an SSE
/// `event:` line, so the character set is what keeps CR, LF and NUL out of the stream.
public struct EventName: Hashable, Sendable, CustomStringConvertible {
    /// The longest name accepted.
    public static let maxLength = 64

    /// The event name used when a publisher gives none.
    public static let message = EventName(validated: "message")

    public let rawValue: String

    /// - Returns: nil when empty, too long or with a character outside the set.
    public init?(_ raw: some StringProtocol) {
        guard Self.isName(raw) else { return nil }
        rawValue = String(raw)
    }

    /// True for 1–`maxLength` bytes of `A-Z a-z 0-9 _ - . :`. The same rule names notification
    /// kinds, scopes, permissions and catalog categories, which may travel as event data.
    public static func isName(_ raw: some StringProtocol, maxLength: Int = maxLength) -> Bool {
        let utf8 = raw.utf8
        return !utf8.isEmpty && utf8.count <= maxLength && utf8.allSatisfy(isAllowed)
    }

    /// `isName` for a `String`, over its contiguous bytes: the generic version walks a
    /// `StringProtocol`'s UTF-8 view through protocol witnesses, ~5,000 instructions for a
    /// 13-byte kind, and the choke point checks two names per call (issue 17).
    public static func isName(_ raw: String, maxLength: Int = maxLength) -> Bool {
        var raw = raw
        return raw.withUTF8 { utf8 in
            guard !utf8.isEmpty, utf8.count <= maxLength else { return false }
            for byte in utf8 where !isAllowed(byte) { return false }
            return true
        }
    }

    private init(validated: String) { rawValue = validated }

    public var description: String { rawValue }

    /// Names the stream protocol itself uses (docs/protocol.md); a published message may not take
    /// them, or clients would read it as a `reset` or `shutdown`.
    public static let reserved: Set<String> = ["ready", "reset", "error", "shutdown", "subscribed", "unsubscribed", "pong", "refreshed"]

    /// True when the name belongs to the protocol.
    public var isReserved: Bool { Self.reserved.contains(rawValue) }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":"):
            return true
        default:
            return false
        }
    }
}
