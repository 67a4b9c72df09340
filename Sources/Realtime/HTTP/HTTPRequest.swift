/// A complete HTTP/1.x request as produced by ``HTTPRequestParser``.
///
/// The body is fully buffered (bounded by ``HTTPRequestParser/Limits``) and
/// already de-chunked; framing headers (`Content-Length`,
/// `Transfer-Encoding`) are left in ``headers`` for logging and proxies but
/// must not be used to re-frame ``body``.
public struct HTTPRequest: Sendable, Equatable {
    public var method: HTTPMethod
    /// Raw request-target as received (RFC 9112 §3.2), e.g.
    /// `"/v1/stream?channels=a,b"`, `"*"` or `"http://host/path"`.
    public var target: String
    /// The target's path, up to (excluding) `?`, not percent-decoded. For the
    /// absolute form this is the path part of the URI (`"/"` if it has none);
    /// for `OPTIONS *` it is `"*"`.
    public var path: String
    /// The raw query after the first `?` (possibly empty), or nil if the
    /// target has no `?`.
    public var query: String?
    /// 0 for HTTP/1.0, 1 for HTTP/1.1 (higher 1.x minors are treated as 1.1,
    /// RFC 9110 §2.5).
    public var versionMinor: Int
    public var headers: HTTPHeaders
    /// The decoded message body; empty when the request has none.
    public var body: [UInt8]
    /// Whether the connection may carry another request after this one
    /// (RFC 9112 §9.3): HTTP/1.1 unless `Connection: close`; HTTP/1.0 only
    /// with `Connection: keep-alive` (and no `close`).
    public var keepAlive: Bool

    /// Builds a request, deriving ``path`` and ``query`` from `target` the same
    /// way the parser does, and ``keepAlive`` from the version and the
    /// `Connection` header unless given. Meant for tests and internal
    /// dispatch; the target is not validated.
    public init(
        method: HTTPMethod = .get,
        target: String,
        versionMinor: Int = 1,
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        keepAlive: Bool? = nil
    ) {
        let bytes = Array(target.utf8)
        let parts = HTTPRequest.splitTarget(bytes, 0, bytes.count)
        self.init(
            method: method,
            target: target,
            path: HTTPRequest.pathString(bytes, parts.path),
            query: parts.query.map { String(decoding: bytes[$0], as: UTF8.self) },
            versionMinor: versionMinor,
            headers: headers,
            body: body,
            keepAlive: keepAlive ?? HTTPRequest.defaultKeepAlive(versionMinor: versionMinor, headers: headers)
        )
    }

    init(
        method: HTTPMethod, target: String, path: String, query: String?,
        versionMinor: Int, headers: HTTPHeaders, body: [UInt8], keepAlive: Bool
    ) {
        self.method = method
        self.target = target
        self.path = path
        self.query = query
        self.versionMinor = versionMinor
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
    }

    /// The query decoded as `application/x-www-form-urlencoded` (`+` is a
    /// space, `%XX` a byte; the result is read as UTF-8 with replacement
    /// characters for invalid sequences). Pairs are split on `&`; empty pairs
    /// are skipped, a pair without `=` has an empty value, and malformed
    /// escapes are kept literally rather than rejected, because a query is
    /// application data and refusing it here would hide it from handlers.
    public func queryItems() -> [(name: String, value: String)] {
        guard let query, !query.isEmpty else { return [] }
        var items: [(name: String, value: String)] = []
        for pair in query.utf8.split(separator: HTTPBytes.ampersand) {
            if let equals = pair.firstIndex(of: HTTPBytes.equals) {
                let name = HTTPRequest.formDecode(pair[pair.startIndex..<equals])
                let value = HTTPRequest.formDecode(pair[pair.index(after: equals)...])
                items.append((name: name, value: value))
            } else {
                items.append((name: HTTPRequest.formDecode(pair), value: ""))
            }
        }
        return items
    }

    /// The decoded value of the query item named `name` (exact, case-sensitive match on the
    /// decoded name), or nil.
    /// - Throws: 400 `invalid_request` with `field` = `name` when the query names it more than
    ///   once: a parameter that takes one value is ambiguous twice (which one a proxy, a cache or
    ///   a log reads is not ours to guess). A list parameter reads `queryItems()` instead.
    public func queryValue(_ name: String) throws(HTTPError) -> String? {
        var found: String?
        for item in queryItems() where item.name == name {
            guard found == nil else { throw HTTPError(400, "invalid_request", "\(name) is given more than once in the query", field: name) }
            found = item.value
        }
        return found
    }

    /// The decoded value of the first query item named `name`, or nil: for readers that only
    /// route or peek (the app a request goes to, whether it carries a token), whose route then
    /// reads the parameter with `queryValue(_:)` and refuses a repeat.
    public func firstQueryValue(_ name: String) -> String? {
        for item in queryItems() where item.name == name {
            return item.value
        }
        return nil
    }

    // MARK: - Shared helpers

    static func formDecode<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        // Fast path: most names and values need no decoding.
        if !bytes.contains(where: { $0 == HTTPBytes.percent || $0 == HTTPBytes.plus }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            if byte == HTTPBytes.plus {
                out.append(HTTPBytes.space)
            } else if byte == HTTPBytes.percent {
                let first = bytes.index(after: index)
                if first != bytes.endIndex, let high = HTTPBytes.hexValue(bytes[first]) {
                    let second = bytes.index(after: first)
                    if second != bytes.endIndex, let low = HTTPBytes.hexValue(bytes[second]) {
                        out.append(high << 4 | low)
                        index = bytes.index(after: second)
                        continue
                    }
                }
                out.append(byte)
            } else {
                out.append(byte)
            }
            index = bytes.index(after: index)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Splits `bytes[start..<end]` (a request-target) into path and query
    /// ranges. Absolute-form targets (`scheme://authority/path?query`) yield
    /// their path, or an empty range when there is none (see `pathString`).
    static func splitTarget(_ bytes: [UInt8], _ start: Int, _ end: Int) -> (path: Range<Int>, query: Range<Int>?) {
        var pathStart = start
        if start < end, bytes[start] != HTTPBytes.slash, bytes[start] != HTTPBytes.asterisk,
           let authority = HTTPBytes.absoluteFormAuthorityStart(bytes, start, end) {
            pathStart = authority
            while pathStart < end, bytes[pathStart] != HTTPBytes.slash, bytes[pathStart] != HTTPBytes.question {
                pathStart += 1
            }
        }
        var queryMark = pathStart
        while queryMark < end, bytes[queryMark] != HTTPBytes.question {
            queryMark += 1
        }
        let query: Range<Int>? = queryMark < end ? (queryMark + 1)..<end : nil
        return (pathStart..<queryMark, query)
    }

    /// An empty path only arises from an absolute-form target without one,
    /// which RFC 9112 §3.2.2 maps to "/".
    static func pathString(_ bytes: [UInt8], _ range: Range<Int>) -> String {
        range.isEmpty ? "/" : String(decoding: bytes[range], as: UTF8.self)
    }

    static func defaultKeepAlive(versionMinor: Int, headers: HTTPHeaders) -> Bool {
        if headers.listContains("connection", token: "close") {
            return false
        }
        if versionMinor >= 1 {
            return true
        }
        return headers.listContains("connection", token: "keep-alive")
    }
}
