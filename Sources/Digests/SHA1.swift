import COpenSSL

/// SHA-1 (FIPS 180-4 §6.1), for the places a protocol requires it: the WebSocket handshake's
/// `Sec-WebSocket-Accept` (RFC 6455 §4.2.2), which proves the server read the request, not that
/// anything is secret, and Redis script names (`EVALSHA`). Not for signatures or passwords.
///
/// OpenSSL's low-level `SHA1_Init/Update/Final`, linked from libcrypto.a, for the reasons `SHA256`
/// gives: no provider initialisation and no libcrypto.so to load (issue 17).
public enum SHA1 {
    /// Bytes in a digest.
    public static let digestByteCount = 20

    /// The 20-byte digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var context = SHA_CTX()
        // The low-level functions cannot fail (they return 1): no allocation, no provider.
        _ = herald_SHA1_Init(&context)
        bytes.withUnsafeBytes { raw in
            if let base = raw.baseAddress, !raw.isEmpty { _ = herald_SHA1_Update(&context, base, raw.count) }
        }
        return [UInt8](unsafeUninitializedCapacity: digestByteCount) { out, count in
            _ = herald_SHA1_Final(out.baseAddress!, &context)
            count = digestByteCount
        }
    }
}
