/// A position in the stream of every message this server has published: the server's epoch
/// (random per start) and a sequence number shared by all channels. It is the SSE `id:` and the
/// `Last-Event-ID` a client resumes from; because the sequence is global, one cursor resumes a
/// stream over any number of channels (SPEC RT-5). Text form: `<epoch>-<sequence>`, e.g.
/// `6f1c2a9b-1042`.
public struct StreamCursor: Hashable, Sendable, CustomStringConvertible {
    /// The server start the sequence belongs to (8 lower-case hex digits in text).
    public let epoch: UInt32
    /// Sequence number of the last message covered; 0 means "before the first message".
    public let sequence: UInt64

    public init(epoch: UInt32, sequence: UInt64) {
        self.epoch = epoch
        self.sequence = sequence
    }

    /// Parses the text form; nil for anything Herald could not have issued (RT-8b).
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "-", maxSplits: 2, omittingEmptySubsequences: false)
        // Every byte is checked here: `UInt32(_:radix:)` alone would also take a sign
        // (`+f1c2a9b`), a spelling Herald never writes.
        guard parts.count == 2, parts[0].utf8.count == 8, (1...20).contains(parts[1].utf8.count),
              parts[0].utf8.allSatisfy({ ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f")) }),
              parts[1].isASCIIDigits,
              let epoch = UInt32(parts[0], radix: 16),
              let sequence = UInt64(parts[1]), String(sequence) == parts[1] else { return nil }
        self.init(epoch: epoch, sequence: sequence)
    }

    public var description: String {
        // Written into its bytes at once (issue 17: every notification carried live is planned
        // with its cursor's text): the radix conversions, the padding and the joins made five
        // strings, ~1.5k instructions a cursor.
        var digits = 1
        var rest = sequence / 10
        while rest > 0 { digits += 1; rest /= 10 }
        return String(unsafeUninitializedCapacity: 9 + digits) { bytes in
            for index in 0..<8 {
                let nibble = UInt8(truncatingIfNeeded: epoch >> UInt32(28 - 4 * index)) & 0xF
                bytes[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") - 10 + nibble
            }
            bytes[8] = UInt8(ascii: "-")
            var value = sequence
            for index in stride(from: 8 + digits, to: 8, by: -1) {
                bytes[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value % 10)
                value /= 10
            }
            return 9 + digits
        }
    }
}
