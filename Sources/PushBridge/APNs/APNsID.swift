/// The `apns-id` header: our id for one notification, a canonical **lower-case** UUID
/// (`8-4-4-4-12` hex). APNs echoes it in its answer; a malformed one gets `400 BadMessageId`.
///
/// Herald picks it once per job and reuses it for every attempt, so a retry after a transport
/// error whose first attempt may have been accepted is recognisable (SPEC PU-5b).
public struct APNsID: Hashable, Sendable, CustomStringConvertible {
    /// The lower-case UUID text.
    public let value: String

    /// Accepts a UUID in either case; `nil` unless it is `8-4-4-4-12` hexadecimal digits.
    public init?(_ text: String) {
        let lower = text.lowercased()
        let groups = lower.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12],
              groups.allSatisfy({ $0.allSatisfy { $0.isHexDigit && $0.isASCII } }) else { return nil }
        value = lower
    }

    /// A random version-4 UUID (RFC 9562 §5.4) from the system generator (`getrandom` on Linux).
    public static func random() -> APNsID {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        let chars = Array(hex)
        let text = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(chars[$0]) }.joined(separator: "-")
        return APNsID(text)!
    }

    public var description: String { value }
}
