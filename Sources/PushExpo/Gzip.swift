import CZlib
import CZlibShim

/// gzip (RFC 1952) with zlib, for request bodies sent with `content-encoding: gzip`: libcurl
/// decodes compressed answers but never compresses what it sends.
public enum Gzip {
    /// - Returns: the gzip member holding `bytes`, or nil when zlib fails or libz cannot be opened
    ///   (CZlibShim opens it on first use; the caller sends plain).
    public static func compress(_ bytes: [UInt8], level: Int32 = Z_DEFAULT_COMPRESSION) -> [UInt8]? {
        guard herald_zlib_load() == nil else { return nil }
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
        guard deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 32)
        var input = bytes
        let status: Int32 = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        return Array(output.prefix(Int(stream.total_out)))
    }
}
