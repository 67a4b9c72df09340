/// Unpadded base64url (RFC 4648 §5) as JWS compact serialization requires (RFC 7515 §2):
/// `-` and `_` instead of `+` and `/`, and never `=`.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// `bytes` as base64url text without padding; `ceil(4 * count / 3)` characters.
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
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
}
