/// SHA-1 (FIPS 180-4 §6.1), for the one place a protocol requires it: the WebSocket handshake's
/// `Sec-WebSocket-Accept` (RFC 6455 §4.2.2), which proves the server read the request, not that
/// anything is secret. Not for signatures or passwords.
///
/// In Swift for the same reason as `SHA256`: OpenSSL's digests initialise its provider machinery
/// (2.2 MB resident) and would open libcrypto at a server's first WebSocket (issue 17).
public enum SHA1 {
    /// The 20-byte digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0)
        // The message, the 0x80 marker, zeros, and the length in bits (§5.1.1), in whole blocks.
        var padded = bytes
        padded.append(0x80)
        while padded.count % 64 != 56 { padded.append(0) }
        let bitLength = UInt64(bytes.count) &* 8
        for index in (0..<8).reversed() { padded.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(index)))) }
        padded.withUnsafeBytes { input in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { w in
                for block in stride(from: 0, to: input.count, by: 64) {
                    for t in 0..<16 {
                        w[t] = UInt32(bigEndian: input.loadUnaligned(fromByteOffset: block + 4 * t, as: UInt32.self))
                    }
                    for t in 16..<80 { w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1) }
                    var (a, b, c, d, e) = h
                    for t in 0..<80 {
                        let f: UInt32, k: UInt32
                        switch t {
                        case 0..<20: f = (b & c) | (~b & d); k = 0x5a827999
                        case 20..<40: f = b ^ c ^ d; k = 0x6ed9eba1
                        case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8f1bbcdc
                        default: f = b ^ c ^ d; k = 0xca62c1d6
                        }
                        let temp = rotl(a, 5) &+ f &+ e &+ k &+ w[t]
                        e = d
                        d = c
                        c = rotl(b, 30)
                        b = a
                        a = temp
                    }
                    h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
                }
            }
        }
        var digest: [UInt8] = []
        digest.reserveCapacity(20)
        for word in [h.0, h.1, h.2, h.3, h.4] {
            for shift in [24, 16, 8, 0] as [UInt32] { digest.append(UInt8(truncatingIfNeeded: word >> shift)) }
        }
        return digest
    }

    @inline(__always)
    private static func rotl(_ x: UInt32, _ n: UInt32) -> UInt32 { (x << n) | (x >> (32 - n)) }
}
