import COpenSSL

/// SHA-256 (FIPS 180-4 §6.2), for the hashes Herald computes on client and server requests:
/// HS256 access tokens (`HMACSHA256`), server-key lookups, request digests.
///
/// OpenSSL's low-level `SHA256_Init/Update/Final`, not the one-shot `SHA256()` or `EVP_Digest`:
/// those fetch the algorithm from OpenSSL 3's default provider, and the first fetch initialises
/// the provider machinery, 2.2 MB resident (issue 17, idle footprint). They are linked into the
/// binary from libcrypto.a (this target's linker setting), with the assembly that uses the CPU's
/// SHA extensions: loading libssl.so and libcrypto.so for them cost 1.8 MB resident at the first
/// token check, server call or WebSocket handshake, where these cost a few pages of code.
public enum SHA256 {
    /// Bytes in a digest.
    public static let digestByteCount = 32
    /// Bytes in a block (the HMAC block size, RFC 2104 §2).
    public static let blockByteCount = 64

    /// The digest of `bytes`: 32 bytes.
    public static func hash(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var context = Context()
        context.update(bytes)
        return context.finish()
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

    /// A hash in progress: OpenSSL's `SHA256_CTX` (a plain struct, no allocation), copied by
    /// value, which is what lets `HMACSHA256` keep its key's two absorbed blocks.
    struct Context: Sendable {
        private var raw = SHA256_CTX()

        init() {
            // The low-level functions cannot fail (they return 1): no allocation, no provider.
            _ = herald_SHA256_Init(&raw)
        }

        /// Absorbs `bytes` after what was absorbed before.
        mutating func update(_ bytes: UnsafeRawBufferPointer) {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
            _ = herald_SHA256_Update(&raw, base, bytes.count)
        }

        /// The digest of everything absorbed: 32 bytes. The context is spent.
        mutating func finish() -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: SHA256.digestByteCount) { out, count in
                _ = herald_SHA256_Final(out.baseAddress!, &raw)
                count = SHA256.digestByteCount
            }
        }
    }
}

/// HMAC-SHA256 (RFC 2104 §2, with SHA-256 from FIPS 180-4) under one key: the construction over
/// `SHA256`'s contexts, whose padded inner and outer key blocks are absorbed once here instead
/// of on every message. Not OpenSSL's `HMAC()` or `HMAC_Init_ex`: both fetch SHA-256 from the
/// default provider (+2.1 MB resident at the first call, measured in C; issue 17).
public struct HMACSHA256: Sendable {
    private let inner: SHA256.Context
    private let outer: SHA256.Context

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
        var inner = SHA256.Context()
        innerPad.withUnsafeBytes { inner.update($0) }
        var outer = SHA256.Context()
        outerPad.withUnsafeBytes { outer.update($0) }
        self.inner = inner
        self.outer = outer
    }

    /// The 32-byte authentication code of `message`.
    public func authenticationCode(for message: UnsafeRawBufferPointer) -> [UInt8] {
        var innerContext = inner
        innerContext.update(message)
        let innerDigest = innerContext.finish()
        var outerContext = outer
        innerDigest.withUnsafeBytes { outerContext.update($0) }
        return outerContext.finish()
    }

    /// The 32-byte authentication code of `message`.
    public func authenticationCode(for message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { authenticationCode(for: $0) }
    }

    /// Whether `a` and `b` are equal, in time that depends only on their lengths (OpenSSL's
    /// `CRYPTO_memcmp`), so that how long a refusal takes does not tell an attacker how many
    /// leading bytes of a MAC were right.
    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress!, y.baseAddress!, a.count) == 0 } }
    }
}
