import CNGHTTP2
#if canImport(Glibc)
import Glibc
#endif

// A request as nghttp2 takes it, built on the sending thread: the header list, the bytes it points
// into and the body in one allocation, so the driver thread neither builds it nor releases the
// `PushHTTPRequest` it came from (issue 17: 4.7k + 1.6k instructions an APNs push on the one driver
// thread, now spent on the sending one).

/// One request's header list (`nghttp2_nv`), its names' and values' bytes, and its body, in one
/// allocation (`deallocate()` frees it), built from a `PushHTTPRequest` by `build`.
///
/// The list: `:method` POST, `:scheme` https, `:authority` (the URL's `host[:port]`), `:path`, the
/// caller's headers (names lower-cased, RFC 9113 §8.2.1), `user-agent` unless given, `content-length`.
/// nghttp2 takes names and values without copying them (`pinned`): they live as long as the
/// request (this storage) or the process (`H2Static`), and the request outlives its stream.
struct H2RequestBlock {
    let storage: UnsafeMutableRawPointer
    let nv: UnsafeMutablePointer<nghttp2_nv>
    let nvCount: Int
    let body: UnsafePointer<UInt8>
    let bodyCount: Int
    /// The URL's `host[:port]` (what `:authority` carries): the key of the request's origin.
    let authority: UnsafeBufferPointer<UInt8>
    /// Where the host is in `authority` (without an IPv6 address's brackets), and the port.
    let host: Range<Int>
    let port: UInt16

    func deallocate() { storage.deallocate() }

    /// Builds the block of `request`, with `userAgent` (empty: none) unless the request has one.
    /// - Returns: `.other(code: 3)` for a URL other than `https://host[:port]/path` (no user
    ///   info); `.other(code: 43)` for an invalid header (a name that is not a token, a value with
    ///   CR, LF or NUL) or an `accept-encoding` header (no content decoding in the native client).
    static func build(_ request: PushHTTPRequest, userAgent: [UInt8]) -> Result<H2RequestBlock, PushTransportError> {
        var url = request.url
        return url.withUTF8 { u -> Result<H2RequestBlock, PushTransportError> in
            guard let target = split(u) else {
                return .failure(.other(code: 3, message: "URL not supported by the HTTP/2 client: \(request.url)"))
            }
            return build(request, url: u, target: target, userAgent: userAgent)
        }
    }

    private static func build(_ request: PushHTTPRequest, url u: UnsafeBufferPointer<UInt8>,
                              target: (authority: Range<Int>, host: Range<Int>, port: UInt16),
                              userAgent: [UInt8]) -> Result<H2RequestBlock, PushTransportError> {
        let headers = request.headers
        var lengthDigits: (UInt64, UInt64, UInt64) = (0, 0, 0)   // room for 24 decimal digits
        let lengthCount = withUnsafeMutableBytes(of: &lengthDigits) { decimal(request.body.count, into: $0) }
        let authorityCount = target.authority.count
        let pathCount = u.count - target.authority.upperBound
        // The sizes first (O(1) on native strings), then one pass per string that checks and copies.
        var total = authorityCount + pathCount + lengthCount + userAgent.count + request.body.count
        for (name, value) in headers { total += name.utf8.count + value.utf8.count }
        let capacity = 4 + headers.count + 2
        let nvBytes = MemoryLayout<nghttp2_nv>.stride * capacity
        let storage = UnsafeMutableRawPointer.allocate(byteCount: nvBytes + max(1, total), alignment: MemoryLayout<nghttp2_nv>.alignment)
        let nv = storage.bindMemory(to: nghttp2_nv.self, capacity: capacity)
        let bytes = (storage + nvBytes).bindMemory(to: UInt8.self, capacity: max(1, total))
        var at = 0
        var count = 0
        func put(_ name: UnsafeMutablePointer<UInt8>, _ nameLength: Int, _ value: UnsafeMutablePointer<UInt8>, _ valueLength: Int,
                 flags: UInt8 = pinned) {
            nv[count] = nghttp2_nv(name: name, value: value, namelen: nameLength, valuelen: valueLength, flags: flags)
            count += 1
        }
        func copy(_ from: UnsafePointer<UInt8>, _ n: Int) -> UnsafeMutablePointer<UInt8> {
            let to = bytes + at
            if n > 0 { to.initialize(from: from, count: n) }
            at += n
            return to
        }
        let authority = copy(u.baseAddress! + target.authority.lowerBound, authorityCount)
        put(H2Static.method, 7, H2Static.post, 4)
        put(H2Static.scheme, 7, H2Static.https, 5)
        put(H2Static.authority, 10, authority, authorityCount)
        put(H2Static.path, 5, copy(u.baseAddress! + target.authority.upperBound, pathCount), pathCount)
        var hasUserAgent = false
        for (name, value) in headers {
            let nameAt = bytes + at
            guard let nameCount = copyName(name, to: nameAt),
                  let valueCount = copyValue(value, to: nameAt + nameCount) else {
                storage.deallocate()
                return .failure(.other(code: 43, message: "invalid request header \(name.debugDescription)"))
            }
            let lowered = UnsafeBufferPointer(start: nameAt, count: nameCount)
            if equal(lowered, "accept-encoding") {
                storage.deallocate()
                return .failure(.other(code: 43, message: "accept-encoding is not supported by the HTTP/2 push client"))
            }
            if equal(lowered, "user-agent") { hasUserAgent = true }
            put(nameAt, nameCount, nameAt + nameCount, valueCount,
                flags: equal(lowered, "apns-id") ? pinned | notIndexed : pinned)
            at += nameCount + valueCount
        }
        if !hasUserAgent, !userAgent.isEmpty {
            let value = userAgent.withUnsafeBufferPointer { copy($0.baseAddress!, $0.count) }
            put(H2Static.userAgent, 10, value, userAgent.count)
        }
        let length = withUnsafeBytes(of: &lengthDigits) { copy($0.bindMemory(to: UInt8.self).baseAddress!, lengthCount) }
        put(H2Static.contentLength, 14, length, lengthCount)
        let body = request.body.withUnsafeBufferPointer { b in copy(b.baseAddress ?? UnsafePointer(bytes), b.count) }
        return .success(H2RequestBlock(storage: storage, nv: nv, nvCount: count, body: UnsafePointer(body), bodyCount: request.body.count,
                                       authority: UnsafeBufferPointer(start: authority, count: authorityCount),
                                       host: target.host.lowerBound - target.authority.lowerBound ..< target.host.upperBound - target.authority.lowerBound,
                                       port: target.port))
    }

    /// The authority's and host's ranges in an `https://host[:port]/path` URL's bytes (scheme in any
    /// case), and the port (443 unless given); nil for anything else, user info included.
    static func split(_ bytes: UnsafeBufferPointer<UInt8>) -> (authority: Range<Int>, host: Range<Int>, port: UInt16)? {
        let scheme: StaticString = "https://"
        let schemeCount = scheme.utf8CodeUnitCount
        guard bytes.count > schemeCount else { return nil }
        for i in 0..<schemeCount where bytes[i] | 0x20 != scheme.utf8Start[i] && bytes[i] != scheme.utf8Start[i] { return nil }
        var end = schemeCount
        while end < bytes.count, bytes[end] != UInt8(ascii: "/"), bytes[end] != UInt8(ascii: "?") { end += 1 }
        guard end < bytes.count, bytes[end] == UInt8(ascii: "/"), end > schemeCount else { return nil }
        let authority = schemeCount..<end
        guard !bytes[authority].contains(UInt8(ascii: "@")) else { return nil }
        var host = authority
        var port: UInt16 = 443
        func number(_ range: Range<Int>) -> UInt16? { UInt16(String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)) }
        if bytes[authority.lowerBound] == UInt8(ascii: "[") {
            guard let close = bytes[authority].firstIndex(of: UInt8(ascii: "]")) else { return nil }
            host = authority.lowerBound + 1 ..< close
            if close + 1 < end {
                guard bytes[close + 1] == UInt8(ascii: ":"), let p = number(close + 2 ..< end) else { return nil }
                port = p
            }
        } else if let colon = bytes[authority].lastIndex(of: UInt8(ascii: ":")) {
            guard let p = number(colon + 1 ..< end) else { return nil }
            host = authority.lowerBound ..< colon
            port = p
        }
        guard !host.isEmpty else { return nil }
        return (authority, host, port)
    }

    /// Copies a header name lower-cased to `out` (room for its UTF-8 bytes); nil unless it is a
    /// token: not empty, no space, colon, control or non-ASCII byte (RFC 9110 §5.6.2).
    static func copyName(_ name: String, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        // Native strings lend their bytes without a copy of the String itself (no retain, no uniqueness check).
        if let copied = name.utf8.withContiguousStorageIfAvailable({ copyName($0, to: out) }) { return copied }
        var name = name
        return name.withUTF8 { copyName($0, to: out) }
    }

    static func copyName(_ n: UnsafeBufferPointer<UInt8>, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        guard let base = n.baseAddress, !n.isEmpty else { return nil }
        // Every byte copied through `nameBytes` and judged without a branch, the name refused
        // after the loop (issue 17: a loop that stopped at the first bad byte cost 1.46k
        // instructions a push over a push's header names, two comparisons a byte 1.23k).
        var bad: UInt8 = 0
        nameBytes.withUnsafeBufferPointer { table in
            for i in 0..<n.count {
                let lowered = table[Int(base[i])]
                bad |= (lowered &- 1) >> 7   // 1 for 0, which wraps to 0xFF; 0 for 0x21...0x7E
                out[i] = lowered
            }
        }
        return bad == 0 ? n.count : nil
    }

    /// A header name's byte lower-cased, or 0 for a byte no name holds: outside 0x21...0x7E (a
    /// space, a control or non-ASCII byte), or a colon.
    private static let nameBytes: [UInt8] = (0...255).map { b in
        guard b >= 0x21, b <= 0x7E, b != Int(UInt8(ascii: ":")) else { return 0 }
        return b >= 0x41 && b <= 0x5A ? UInt8(b | 0x20) : UInt8(b)
    }

    /// Copies a header value to `out` (room for its UTF-8 bytes); nil if it holds CR, LF or NUL (a
    /// header injection). One memcpy and three memchr: values are mostly long (bearer tokens).
    static func copyValue(_ value: String, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        if let copied = value.utf8.withContiguousStorageIfAvailable({ copyValue($0, to: out) }) { return copied }
        var value = value
        return value.withUTF8 { copyValue($0, to: out) }
    }

    static func copyValue(_ v: UnsafeBufferPointer<UInt8>, to out: UnsafeMutablePointer<UInt8>) -> Int? {
        guard let base = v.baseAddress, !v.isEmpty else { return 0 }
        if memchr(base, 0x0D, v.count) != nil || memchr(base, 0x0A, v.count) != nil || memchr(base, 0, v.count) != nil {
            return nil
        }
        out.update(from: base, count: v.count)
        return v.count
    }

    /// nghttp2 takes the names and values as they are, without copying them at submit: every one
    /// lives as long as the request (its block) or the process (the static ones), and the request
    /// outlives its stream, whose HEADERS frame is the last use. Names are lower-case already
    /// (nghttp2 lower-cases only what it copies).
    static let pinned = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)

    /// HPACK "literal never indexed" (RFC 7541 §6.2.3) for a header whose value is new on every
    /// request (APNs' `apns-id`, a UUID per push). Indexed, each would enter the encoder's dynamic
    /// table, evict the lasting entries (the bearer token among them, then sent in full again) and
    /// lengthen every later table search: nghttp2 chains entries of one name and compares each value.
    /// `:path` and `content-length` nghttp2 never indexes.
    static let notIndexed = UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)

    /// Writes `value` (≥ 0) in decimal into `buffer`; returns the digit count.
    static func decimal(_ value: Int, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var v = max(0, value), n = 0
        repeat { buffer[n] = UInt8(0x30 + v % 10); v /= 10; n += 1 } while v > 0
        var i = 0, j = n - 1
        while i < j { buffer.swapAt(i, j); i += 1; j -= 1 }
        return n
    }

    /// Byte equality with a static (lower-case) name.
    static func equal(_ bytes: UnsafeBufferPointer<UInt8>, _ wanted: StaticString) -> Bool {
        bytes.count == wanted.utf8CodeUnitCount && memcmp(bytes.baseAddress!, wanted.utf8Start, bytes.count) == 0
    }
}
