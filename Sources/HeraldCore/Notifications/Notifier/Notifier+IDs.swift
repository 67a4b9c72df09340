import Foundation

extension Notifier {
    /// `<prefix>_` and 20 characters of Crockford-style base32: 45 bits of the unix ms, most
    /// significant first, then 55 random bits. Ids made later sort after earlier ones, so a
    /// batch's inserts land at the right edge of the UNIQUE id index instead of on a random
    /// page each (one page per notification was most of the choke point's WAL writes); 55 random
    /// bits per millisecond keep them unguessable and, in practice, unique. The bits are the
    /// system generator's, drawn in bulk (`PooledRandomNumberGenerator`).
    static func newID(_ prefix: String, now: Int64) -> String {
        var generator = PooledRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(prefix.utf8.count + 21)
        bytes.append(contentsOf: prefix.utf8)
        bytes.append(UInt8(ascii: "_"))
        let time = UInt64(truncatingIfNeeded: now) & (1 << 45 - 1)
        for shift in stride(from: 40, through: 0, by: -5) {
            bytes.append(idAlphabet[Int(time >> UInt64(shift) & 31)])
        }
        var random = generator.next() as UInt64
        for _ in 0..<11 {
            bytes.append(idAlphabet[Int(random & 31)])
            random >>= 5
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static let idAlphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
}
