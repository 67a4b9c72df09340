/// The URL-safe Base64 alphabet of RFC 4648 §5, as JWS uses it (RFC 7515 §2, "Base64url Encoding").
///
/// JWS compact serialization forbids padding, so `encode` never emits `=`. `decode` is a general
/// utility and tolerates correct trailing padding; the token verifier separately refuses any `=`
/// so that one token has exactly one spelling.
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Maps an ASCII byte to its 6-bit value; 0xFF marks bytes outside the alphabet
    /// (including the standard-Base64 `+` and `/`, which must not be confused with `-` and `_`).
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

    private static let padByte = UInt8(ascii: "=")

    /// Encodes bytes as unpadded base64url text.
    ///
    /// - Parameter bytes: any bytes; an empty collection encodes to `""`.
    /// - Returns: ASCII text of `ceil(4 * count / 3)` characters from `[A-Za-z0-9_-]`, without `=`.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let b0 = iterator.next() {
            let b1 = iterator.next()
            let b2 = iterator.next()
            let chunk = UInt32(b0) << 16 | UInt32(b1 ?? 0) << 8 | UInt32(b2 ?? 0)
            out.append(alphabet[Int(chunk >> 18 & 0x3F)])
            out.append(alphabet[Int(chunk >> 12 & 0x3F)])
            if b1 != nil { out.append(alphabet[Int(chunk >> 6 & 0x3F)]) }
            if b2 != nil { out.append(alphabet[Int(chunk & 0x3F)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url text.
    ///
    /// Accepts unpadded input (the JWS form) and correctly padded input. Rejects, by returning `nil`:
    /// characters outside the URL-safe alphabet (`+`, `/`, whitespace, non-ASCII), `=` anywhere but at
    /// the end, wrong amounts of padding, a length that leaves a single dangling character, and
    /// non-canonical encodings whose unused trailing bits are not zero (RFC 4648 §3.5) — the last rule
    /// keeps signatures from having several accepted spellings.
    ///
    /// - Parameter s: the text to decode.
    /// - Returns: the decoded bytes, or `nil` if `s` is not valid base64url.
    public static func decode(_ s: some StringProtocol) -> [UInt8]? {
        decode(utf8: s.utf8)
    }

    /// Byte-level decoder used directly on token slices, so the verifier need not build substrings.
    public static func decode(utf8 input: some Collection<UInt8>) -> [UInt8]? {
        var out = [UInt8]()
        out.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bitCount = 0
        var symbolCount = 0
        var padCount = 0
        for byte in input {
            if byte == padByte {
                padCount += 1
                continue
            }
            if padCount > 0 { return nil }  // data after padding: '=' in the middle
            let value = decodeTable[Int(byte)]
            if value == 0xFF { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bitCount += 6
            symbolCount += 1
            if bitCount >= 8 {
                bitCount -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bitCount)))
                accumulator &= (1 << UInt32(bitCount)) - 1
            }
        }
        // One leftover symbol carries only 6 bits, less than a byte: never produced by an encoder.
        if symbolCount % 4 == 1 { return nil }
        if accumulator != 0 { return nil }
        if padCount > 0, padCount > 2 || (symbolCount + padCount) % 4 != 0 { return nil }
        return out
    }
}
