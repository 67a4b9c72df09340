/// Our id for one push to one device, a canonical **lower-case** UUID (`8-4-4-4-12` hex).
///
/// Herald picks it once per job and reuses it for every attempt, so a retry after a transport
/// error whose first attempt may have been accepted is recognisable (SPEC PU-5b). APNs sends it as
/// the `apns-id` header and echoes it in its answer (a malformed one gets `400 BadMessageId`),
/// which is why jobs store it as `apns_id`; providers without such a header only log it.
public struct PushID: Hashable, Sendable, CustomStringConvertible {
    /// The lower-case UUID text.
    public let value: String

    /// Accepts a UUID in either case; `nil` unless it is `8-4-4-4-12` hexadecimal digits.
    public init?(_ text: String) {
        // Over the contiguous bytes: an enumerated `String.UTF8View` cost ~3.4k instructions a push.
        guard let isLower = text.utf8.withContiguousStorageIfAvailable(Self.check) ?? Array(text.utf8).withUnsafeBufferPointer(Self.check)
        else { return nil }
        if isLower {
            value = text
        } else {
            // ASCII only (checked above), so lower-casing byte by byte is exact.
            value = String(decoding: text.utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") ? $0 | 0x20 : $0 },
                           as: UTF8.self)
        }
    }

    /// Whether `bytes` are a UUID's `8-4-4-4-12` hexadecimal digits: nil if not, else whether
    /// they are all lower-case.
    private static func check(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool? {
        guard bytes.count == 36 else { return nil }
        var isLower = true
        for i in 0..<36 {
            let byte = bytes[i]
            if isDashOffset(i) {
                guard byte == UInt8(ascii: "-") else { return nil }
            } else if !isHexDigit(byte) {
                return nil
            } else if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F") {
                isLower = false
            }
        }
        return isLower
    }

    /// A random version-4 UUID (RFC 9562 §5.4) from the system generator (`getrandom` on Linux,
    /// drawn in bulk: `PooledRandomNumberGenerator`).
    public static func random() -> PushID {
        var generator = PooledRandomNumberGenerator()
        var high = generator.next() as UInt64
        var low = generator.next() as UInt64
        high = high & ~0xF000 | 0x4000                       // version 4 (byte 6's high nibble)
        low = low & ~(0xC000_0000_0000_0000 as UInt64) | 0x8000_0000_0000_0000   // variant 10
        let text = String(unsafeUninitializedCapacity: 36) { buffer in
            var at = 0
            func put(_ word: UInt64, nibbles: Range<Int>) {
                for n in nibbles {
                    if Self.isDashOffset(at) { buffer[at] = UInt8(ascii: "-"); at += 1 }
                    buffer[at] = Self.hexDigits[Int(word >> UInt64(60 - 4 * n) & 0xF)]
                    at += 1
                }
            }
            put(high, nibbles: 0..<16)
            put(low, nibbles: 0..<16)
            return at
        }
        return PushID(uncheckedLowercase: text)
    }

    private init(uncheckedLowercase value: String) { self.value = value }

    /// Where the four dashes of `8-4-4-4-12` stand in the 36-character text.
    private static func isDashOffset(_ offset: Int) -> Bool {
        offset == 8 || offset == 13 || offset == 18 || offset == 23
    }
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
             UInt8(ascii: "A")...UInt8(ascii: "F"): return true
        default: return false
        }
    }

    public var description: String { value }
}
