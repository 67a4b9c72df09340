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
              parts[1].utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let epoch = UInt32(parts[0], radix: 16),
              let sequence = UInt64(parts[1]), String(sequence) == parts[1] else { return nil }
        self.init(epoch: epoch, sequence: sequence)
    }

    public var description: String {
        let hex = String(epoch, radix: 16)
        return String(repeating: "0", count: 8 - hex.utf8.count) + hex + "-" + String(sequence)
    }
}
