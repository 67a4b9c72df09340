/// SHA-256 (FIPS 180-4 §6.2) in Swift, for the hashes Herald computes on every client and server
/// request: HS256 access tokens (`HMACSHA256`) and server-key lookups.
///
/// Why not OpenSSL: OpenSSL 3's one-shot `SHA256()` and `HMAC()` fetch their algorithm from the
/// default provider, and the first fetch initialises the provider machinery: 2.2 MB of resident
/// memory (libcrypto pages and its tables) in a process that otherwise needs no OpenSSL at all
/// (issue 17, idle footprint), and ~5.9 µs per HMAC for the fetch done again on every call. TLS,
/// ECDSA and RSA keep OpenSSL; they are used only when push or a public verification key is set.
public enum SHA256 {
    /// Bytes in a digest.
    public static let digestByteCount = 32
    /// Bytes in a block (the HMAC block size, RFC 2104 §2).
    public static let blockByteCount = 64

    /// The digest of `bytes`: 32 bytes.
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var state = State.initial
        return state.finish(bytes, precededBy: 0)
    }

    /// The digest of `bytes`: 32 bytes.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// The digest of `bytes` as 64 lower-case hex digits (what stored key hashes and request
    /// digests are compared as). The digits come from a table: `String(format:)` per byte cost
    /// ~240k instructions per call on the server-key path (issue 17), about 100 times the hash.
    public static func hexDigest(_ bytes: [UInt8]) -> String {
        let digest = hash(bytes)
        return String(unsafeUninitializedCapacity: 64) { text in
            for (index, byte) in digest.enumerated() {
                text[2 * index] = hexDigits[Int(byte >> 4)]
                text[2 * index + 1] = hexDigits[Int(byte & 0x0f)]
            }
            return 64
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The eight working words between blocks (FIPS 180-4 §6.2.2: H0…H7).
    struct State: Sendable {
        var h0: UInt32, h1: UInt32, h2: UInt32, h3: UInt32, h4: UInt32, h5: UInt32, h6: UInt32, h7: UInt32

        /// FIPS 180-4 §5.3.3.
        static let initial = State(h0: 0x6a09e667, h1: 0xbb67ae85, h2: 0x3c6ef372, h3: 0xa54ff53a,
                                   h4: 0x510e527f, h5: 0x9b05688c, h6: 0x1f83d9ab, h7: 0x5be0cd19)

        /// Hashes `bytes` as the end of a message whose first `precededBy` bytes (a multiple of
        /// 64) were already absorbed into this state, and returns the 32-byte digest.
        mutating func finish(_ bytes: UnsafeRawBufferPointer, precededBy: Int) -> [UInt8] {
            let whole = bytes.count / 64 * 64
            if whole > 0, let base = bytes.baseAddress { absorb(base, blocks: whole / 64) }
            // The tail, the 0x80 marker and the length in bits: one block, or two when the tail
            // leaves fewer than 9 bytes of room (§5.1.1).
            let tail = bytes.count - whole
            let bitLength = UInt64(precededBy + bytes.count) &* 8
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { padding in
                let blocks = tail < 56 ? 1 : 2
                let used = blocks * 64
                padding.initialize(repeating: 0)
                if tail > 0, let base = bytes.baseAddress {
                    UnsafeMutableRawBufferPointer(padding).copyMemory(from: UnsafeRawBufferPointer(start: base + whole, count: tail))
                }
                padding[tail] = 0x80
                for index in 0..<8 { padding[used - 1 - index] = UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(index))) }
                absorb(UnsafeRawPointer(padding.baseAddress!), blocks: blocks)
            }
            return digest
        }

        /// The state as 32 big-endian bytes.
        var digest: [UInt8] {
            [UInt8](unsafeUninitializedCapacity: 32) { out, count in
                let words = (h0, h1, h2, h3, h4, h5, h6, h7)
                withUnsafeBytes(of: words) { raw in
                    for index in 0..<8 {
                        let word = raw.load(fromByteOffset: 4 * index, as: UInt32.self).bigEndian
                        UnsafeMutableRawPointer(out.baseAddress! + 4 * index).storeBytes(of: word, as: UInt32.self)
                    }
                }
                count = 32
            }
        }

        /// Runs the compression function over `blocks` 64-byte blocks at `base` (FIPS 180-4 §6.2.2).
        mutating func absorb(_ base: UnsafeRawPointer, blocks: Int) {
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                for block in 0..<blocks {
                    let input = base + block * 64
                    for t in 0..<16 {
                        w[t] = UInt32(bigEndian: input.loadUnaligned(fromByteOffset: 4 * t, as: UInt32.self))
                    }
                    for t in 16..<64 {
                        let s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3)
                        let s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10)
                        w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
                    }
                    var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                    for t in 0..<64 {
                        let t1 = h &+ (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) &+ ((e & f) ^ (~e & g)) &+ roundConstants[t] &+ w[t]
                        let t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) &+ ((a & b) ^ (a & c) ^ (b & c))
                        h = g
                        g = f
                        f = e
                        e = d &+ t1
                        d = c
                        c = b
                        b = a
                        a = t1 &+ t2
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d; h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                }
            }
        }

        @inline(__always)
        private func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
    }

    /// FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube roots of the
    /// first 64 primes.
    private static let roundConstants: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]
}

/// HMAC-SHA256 (RFC 2104, with SHA-256 from FIPS 180-4) under one key, whose padded inner and
/// outer blocks are hashed once here instead of on every message: a 300-byte HS256 token then
/// costs six compressions instead of eight.
public struct HMACSHA256: Sendable {
    private let inner: SHA256.State
    private let outer: SHA256.State

    /// - Parameter key: any length; a key longer than the 64-byte block is hashed first (RFC 2104 §2),
    ///   an empty one is 64 zero bytes.
    public init(key: [UInt8]) {
        let blockKey = key.count > SHA256.blockByteCount ? SHA256.hash(key) : key
        var innerPad = [UInt8](repeating: 0x36, count: SHA256.blockByteCount)
        var outerPad = [UInt8](repeating: 0x5c, count: SHA256.blockByteCount)
        for (index, byte) in blockKey.enumerated() {
            innerPad[index] ^= byte
            outerPad[index] ^= byte
        }
        var inner = SHA256.State.initial
        innerPad.withUnsafeBytes { inner.absorb($0.baseAddress!, blocks: 1) }
        var outer = SHA256.State.initial
        outerPad.withUnsafeBytes { outer.absorb($0.baseAddress!, blocks: 1) }
        self.inner = inner
        self.outer = outer
    }

    /// The 32-byte authentication code of `message`.
    public func authenticationCode(for message: UnsafeRawBufferPointer) -> [UInt8] {
        var innerState = inner
        let innerDigest = innerState.finish(message, precededBy: SHA256.blockByteCount)
        var outerState = outer
        return innerDigest.withUnsafeBytes { outerState.finish($0, precededBy: SHA256.blockByteCount) }
    }

    /// The 32-byte authentication code of `message`.
    public func authenticationCode(for message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { authenticationCode(for: $0) }
    }

    /// Whether `a` and `b` are equal, in time that depends only on their lengths, so that how
    /// long a refusal takes does not tell an attacker how many leading bytes of a MAC were right.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}
