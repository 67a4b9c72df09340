import Foundation

extension Notifier {
    /// `<prefix>_` and 20 characters of Crockford-style base32: 45 bits of the unix ms, most
    /// significant first, then 55 random bits. Ids made later sort after earlier ones, so a
    /// batch's inserts land at the right edge of the UNIQUE id index instead of on a random
    /// page each (one page per notification was most of the choke point's WAL writes); 55 random
    /// bits per millisecond keep them unguessable and, in practice, unique. The bits are the
    /// system generator's, drawn in bulk (`PooledRandomNumberGenerator`).
    public static func newID(_ prefix: String, now: Int64) -> String {
        var generator = PooledRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(prefix.utf8.count + 21)
        appendTimePrefix(prefix, at: now, to: &bytes)
        var random = generator.next() as UInt64
        for _ in 0..<11 {
            bytes.append(idAlphabet[Int(random & 31)])
            random >>= 5
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The first `prefix.utf8.count + 10` characters of every id `newID(prefix, now:)` makes at
    /// `now`: `<prefix>_` and the time. Every id made at an earlier millisecond sorts below it,
    /// every one made at `now` or later does not (the alphabet is in ASCII order), so a range of
    /// ids is a range of creation times (SQLite's notification purge and plan reads, issue 17).
    /// - Parameter now: unix ms, below 2^45.
    public static func idTimePrefix(_ prefix: String, at now: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(prefix.utf8.count + 10)
        appendTimePrefix(prefix, at: now, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether `id` has the shape `newID(prefix, now:)` gives ids made at `now`: its time prefix,
    /// then 11 characters. False for a `now` outside 0 ..< 2^45 - 1, whose prefix (the time's low
    /// 45 bits) would not order it, or its next millisecond, among the others.
    public static func idCarriesTime(_ id: String, prefix: String, at now: Int64) -> Bool {
        guard now >= 0, now < 1 << 45 - 1 else { return false }
        var expected: [UInt8] = []
        expected.reserveCapacity(prefix.utf8.count + 10)
        appendTimePrefix(prefix, at: now, to: &expected)
        let utf8 = id.utf8
        return utf8.count == expected.count + 11 && utf8.starts(with: expected)
    }

    private static func appendTimePrefix(_ prefix: String, at now: Int64, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: prefix.utf8)
        bytes.append(UInt8(ascii: "_"))
        let time = UInt64(truncatingIfNeeded: now) & (1 << 45 - 1)
        for shift in stride(from: 40, through: 0, by: -5) {
            bytes.append(idAlphabet[Int(time >> UInt64(shift) & 31)])
        }
    }

    static let idAlphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
}
