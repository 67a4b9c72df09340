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
        var random = generator.next() as UInt64
        let prefixCount = prefix.utf8.count
        // Written into the string's own storage: a byte array first, then the string made from it,
        // was two allocations and a copy with its UTF-8 check (issue 17: ~1k instructions a
        // notification, on the writer).
        return String(unsafeUninitializedCapacity: prefixCount + 21) { buffer in
            var count = writeTimePrefix(prefix, at: now, to: buffer)
            idAlphabet.withUnsafeBufferPointer { alphabet in
                for _ in 0..<11 {
                    buffer[count] = alphabet[Int(random & 31)]
                    random >>= 5
                    count += 1
                }
            }
            return count
        }
    }

    /// The first `prefix.utf8.count + 10` characters of every id `newID(prefix, now:)` makes at
    /// `now`: `<prefix>_` and the time. Every id made at an earlier millisecond sorts below it,
    /// every one made at `now` or later does not (the alphabet is in ASCII order), so a range of
    /// ids is a range of creation times (SQLite's notification purge and plan reads, issue 17).
    /// - Parameter now: unix ms, below 2^45.
    public static func idTimePrefix(_ prefix: String, at now: Int64) -> String {
        String(unsafeUninitializedCapacity: prefix.utf8.count + 10) { writeTimePrefix(prefix, at: now, to: $0) }
    }

    /// Whether `id` has the shape `newID(prefix, now:)` gives ids made at `now`: its time prefix,
    /// then 11 characters. False for a `now` outside 0 ..< 2^45 - 1, whose prefix (the time's low
    /// 45 bits) would not order it, or its next millisecond, among the others.
    public static func idCarriesTime(_ id: String, prefix: String, at now: Int64) -> Bool {
        guard now >= 0, now < 1 << 45 - 1 else { return false }
        // Compared in place, the expected prefix on the stack: stepping `utf8.starts(with:)`
        // over a heap array was ~1.6k instructions a notification insert, on the writer (issue 17).
        let prefixCount = prefix.utf8.count
        var id = id
        return id.withUTF8 { utf8 in
            guard utf8.count == prefixCount + 10 + 11 else { return false }
            return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: prefixCount + 10) { expected in
                let count = writeTimePrefix(prefix, at: now, to: expected)
                return memcmp(expected.baseAddress!, utf8.baseAddress!, count) == 0
            }
        }
    }

    /// Writes `<prefix>_` and the time's 9 characters at the start of `buffer` (room for
    /// `prefix.utf8.count + 10` bytes). - Returns: the bytes written.
    private static func writeTimePrefix(_ prefix: String, at now: Int64, to buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var count = 0
        var prefix = prefix
        prefix.withUTF8 { bytes in
            for byte in bytes {
                buffer[count] = byte
                count += 1
            }
        }
        buffer[count] = UInt8(ascii: "_")
        count += 1
        let time = UInt64(truncatingIfNeeded: now) & (1 << 45 - 1)
        idAlphabet.withUnsafeBufferPointer { alphabet in
            for shift in stride(from: 40, through: 0, by: -5) {
                buffer[count] = alphabet[Int(time >> UInt64(shift) & 31)]
                count += 1
            }
        }
        return count
    }

    static let idAlphabet = Array("0123456789abcdefghjkmnpqrstvwxyz".utf8)
}
