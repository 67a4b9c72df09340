/// Incremental HTTP/1.1 request parser (RFC 9112, with the semantics of
/// RFC 9110) implemented as a pure value state machine: feed it bytes with
/// `append`, pull complete requests with `next()`. It performs no I/O and
/// holds no references, so it can live inside any connection object or actor.
///
/// The parser is deliberately strict. Every ambiguity that an intermediary
/// could frame differently (duplicate or conflicting lengths, Transfer-Encoding
/// with Content-Length, obsolete line folding, bare CR, whitespace before a
/// colon) is refused, since lenient parsing is what request smuggling exploits.
/// All sizes derived from input use checked arithmetic and all loops are
/// bounded by the buffered byte count, so no byte sequence can trap or spin.
///
/// Typical use:
/// ```
/// parser.append(bytesFromSocket)
/// while let request = try parser.next() { respond(to: request) }
/// if parser.takeContinueRequest() { write("HTTP/1.1 100 Continue\r\n\r\n") }
/// ```
public struct HTTPRequestParser: Sendable {
    /// Resource bounds. A request exceeding one fails with the matching
    /// ``HTTPParseError`` as soon as the excess is observable, without waiting
    /// for the rest of the request.
    public struct Limits: Sendable {
        /// Maximum bytes of request line + header fields + the terminating
        /// empty line, including line terminators; also bounds a chunked
        /// trailer section. Exceeding it yields 431.
        public var maxHeadBytes: Int = 16 * 1024
        /// Maximum decoded body bytes (the Content-Length value, or the sum of
        /// chunk sizes). Exceeding it yields 413.
        public var maxBodyBytes: Int = 1 << 20
        /// Maximum number of header fields (and, separately, trailer fields).
        /// Exceeding it yields 431.
        public var maxHeaderCount: Int = 100
        /// Maximum bytes of one chunk-size line including extensions and its
        /// terminator; exceeding it yields 400. Extensions carry no meaning
        /// here, so this only stops a client from streaming an endless line.
        public var maxChunkLineBytes: Int = 4 * 1024

        public init(
            maxHeadBytes: Int = 16 * 1024,
            maxBodyBytes: Int = 1 << 20,
            maxHeaderCount: Int = 100,
            maxChunkLineBytes: Int = 4 * 1024
        ) {
            // Clamped so that no configuration can make a limit check
            // underflow or make an empty buffer count as "over the limit".
            self.maxHeadBytes = max(1, maxHeadBytes)
            self.maxBodyBytes = max(0, maxBodyBytes)
            self.maxHeaderCount = max(0, maxHeaderCount)
            self.maxChunkLineBytes = max(3, maxChunkLineBytes)
        }
    }

    enum Phase: Sendable {
        case requestLine
        case headerFields
        case fixedBody
        case chunkSize
        case chunkData
        case chunkDataEnd
        case trailerFields
    }

    /// Clients (and some proxies) send stray CRLFs between requests, e.g. after
    /// a POST body; RFC 9112 §2.2 says a server SHOULD ignore "at least one".
    /// A small cap keeps a stream of empty lines from being free to send.
    static let maxLeadingEmptyLines = 8
    /// Don't shift the buffer for small consumed prefixes: moving a few bytes
    /// on every request would cost more than it saves.
    static let compactionThreshold = 4 * 1024
    /// Keep at most this much capacity once the buffer drains, so one large
    /// upload doesn't pin a megabyte per idle keep-alive connection.
    static let retainedCapacity = 64 * 1024

    let limits: Limits

    // Invariant: readIndex <= lineStart <= scanCursor <= buffer.count while a
    // line-oriented phase is active; in other phases only readIndex matters.
    var buffer: [UInt8] = []
    /// First byte not yet consumed. In the head phases this stays at the start
    /// of the request so `takeUnconsumedBytes` can hand the head back intact.
    var readIndex = 0
    /// Start of the line currently being scanned.
    var lineStart = 0
    /// Where the terminator scan resumes, so no byte is scanned twice.
    var scanCursor = 0
    var phase: Phase = .requestLine
    var failure: HTTPParseError?
    var continuePending = false

    // The request being assembled.
    var emptyLinesSkipped = 0
    var method = HTTPMethod.get
    var target = ""
    var path = ""
    var query: String?
    var versionMinor = 1
    var headers = HTTPHeaders()
    /// The framing fields the head has so far (`FramingField` bits; Host twice sets `hostTwice`),
    /// noted as each field is parsed: `finishHead` and `completeRequest` looked each name up in
    /// the list again (~3,000 instructions a request, issue 17).
    var framing: UInt8 = 0
    var body: [UInt8] = []
    /// Fixed body: bytes still expected. Chunked: data bytes left in the
    /// current chunk.
    var remaining = 0
    /// Sum of chunk sizes announced so far.
    var chunkedTotal = 0
    /// Bytes and fields of the trailer section so far.
    var trailerBytes = 0
    var trailerCount = 0

    /// Creates an idle parser.
    public init(limits: Limits = .init()) {
        self.limits = limits
    }

    // MARK: - Feeding

    /// Buffers bytes received from the peer. Bytes appended after a parse
    /// error are dropped, since the stream can no longer be framed.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, !bytes.isEmpty else { return }
        compactIfUseful()
        buffer.append(contentsOf: bytes)
    }

    /// Buffers bytes received from the peer; same as the raw-buffer overload.
    public mutating func append(_ bytes: [UInt8]) {
        guard failure == nil, !bytes.isEmpty else { return }
        compactIfUseful()
        buffer.append(contentsOf: bytes)
    }

    /// Bytes buffered and not yet consumed by a returned request (or, while
    /// a chunked body is streaming in, not yet decoded).
    public var bufferedByteCount: Int { buffer.count - readIndex }

    /// True when no part of a request is buffered: the connection is between
    /// requests, so closing it (idle timeout, shutdown) loses nothing.
    public var isIdle: Bool { phase == .requestLine && readIndex == buffer.count }

    // MARK: - Pulling

    /// Returns the next complete request, or nil when more bytes are needed.
    ///
    /// Requests are returned in order, one per call, so pipelined requests
    /// (RFC 9112 §9.3.2) need a loop. Parsing stops right after a returned
    /// request; nothing of the following request is consumed until the next
    /// call.
    ///
    /// - Throws: ``HTTPParseError`` for a malformed or over-limit request.
    ///   After an error the parser stays failed and rethrows the same error on
    ///   every call; the connection must be closed after responding.
    public mutating func next() throws(HTTPParseError) -> HTTPRequest? {
        if let failure {
            throw failure
        }
        do throws(HTTPParseError) {
            return try advance()
        } catch {
            failure = error
            continuePending = false
            throw error
        }
    }

    /// True once per request when a head with `Expect: 100-continue`
    /// (HTTP/1.1 only, RFC 9110 §10.1.1) was parsed, a non-empty body is
    /// announced and none of it has arrived yet, so the server should write
    /// `HTTP/1.1 100 Continue` before the client sends the body. Check it after
    /// `next()` returns nil. Reading clears it; returning the request clears it
    /// too, so a stale interim response is never sent after the final one.
    public mutating func takeContinueRequest() -> Bool {
        defer { continuePending = false }
        return continuePending
    }

    /// The request whose body is being read, without its body: what a server may judge before it
    /// asks for the body with `100 Continue` (RFC 9110 §10.1.1). nil outside a body.
    public var headOfBodyBeingRead: HTTPRequest? {
        switch phase {
        case .fixedBody, .chunkSize, .chunkData, .chunkDataEnd, .trailerFields:
            return HTTPRequest(method: method, target: target, path: path, query: query, versionMinor: versionMinor, headers: headers,
                               body: [], keepAlive: false)
        default:
            return nil
        }
    }

    /// Returns the bytes received after the last request returned by
    /// `next()` and empties the buffer, resetting the parser to expect a new
    /// request. Meant for protocol upgrades (e.g. WebSocket): call it right
    /// after `next()` returned the upgrade request, before calling `next()`
    /// again. Called in the middle of a body, it returns only the body bytes
    /// not yet decoded and abandons that request. A failed parser stays failed.
    public mutating func takeUnconsumedBytes() -> [UInt8] {
        let rest = Array(buffer[readIndex...])
        buffer.removeAll(keepingCapacity: buffer.capacity <= Self.retainedCapacity)
        readIndex = 0
        lineStart = 0
        scanCursor = 0
        continuePending = false
        resetMessage()
        return rest
    }

    // MARK: - State machine

    private mutating func advance() throws(HTTPParseError) -> HTTPRequest? {
        // Every iteration either consumes at least one byte, changes phase
        // towards completion, or returns, so the loop is bounded by the
        // buffered byte count.
        while true {
            switch phase {
            case .requestLine:
                guard let line = try nextLine() else {
                    return nil
                }
                if line.isEmpty {
                    emptyLinesSkipped += 1
                    guard emptyLinesSkipped <= Self.maxLeadingEmptyLines else {
                        throw .badRequest("too many empty lines before request line")
                    }
                    readIndex = lineStart
                    continue
                }
                try checkHeadSize()
                try parseRequestLine(line)
                phase = .headerFields

            case .headerFields:
                guard let line = try nextLine() else {
                    return nil
                }
                try checkHeadSize()
                if line.isEmpty {
                    readIndex = lineStart
                    try finishHead()
                    continue
                }
                let field = try parseFieldLine(line)
                guard headers.count < limits.maxHeaderCount else {
                    throw .headerTooLarge
                }
                noteFraming(field.name)
                // A dozen fields is usual: one allocation instead of growing 1, 2, 4, 8.
                if headers.isEmpty { headers.reserveCapacity(12) }
                headers.add(
                    name: String(decoding: buffer[field.name], as: UTF8.self),
                    value: String(decoding: buffer[field.value], as: UTF8.self)
                )

            case .fixedBody:
                guard buffer.count - readIndex >= remaining else {
                    return nil
                }
                body = Array(buffer[readIndex..<(readIndex + remaining)])
                readIndex += remaining
                remaining = 0
                return completeRequest()

            case .chunkSize:
                guard let line = try nextLine() else {
                    return nil
                }
                guard lineStart - readIndex <= limits.maxChunkLineBytes else {
                    throw .badRequest("chunk size line too long")
                }
                let size = try parseChunkSizeLine(line)
                readIndex = lineStart
                if size == 0 {
                    trailerBytes = 0
                    trailerCount = 0
                    phase = .trailerFields
                } else {
                    // No reserveCapacity from the announced size: that would
                    // let a few header bytes pin maxBodyBytes of memory.
                    remaining = size
                    phase = .chunkData
                }

            case .chunkData:
                let count = min(remaining, buffer.count - readIndex)
                guard count > 0 else {
                    return nil
                }
                body.append(contentsOf: buffer[readIndex..<(readIndex + count)])
                readIndex += count
                remaining -= count
                guard remaining == 0 else {
                    return nil
                }
                phase = .chunkDataEnd

            case .chunkDataEnd:
                let available = buffer.count - readIndex
                guard available > 0 else {
                    return nil
                }
                // A bare LF is accepted for the same reason as in the head
                // (RFC 9112 §2.2); anything else means the sender's framing
                // disagrees with ours.
                if buffer[readIndex] == HTTPBytes.lf {
                    readIndex += 1
                } else if buffer[readIndex] == HTTPBytes.cr {
                    guard available > 1 else {
                        return nil
                    }
                    guard buffer[readIndex + 1] == HTTPBytes.lf else {
                        throw .badRequest("missing CRLF after chunk data")
                    }
                    readIndex += 2
                } else {
                    throw .badRequest("missing CRLF after chunk data")
                }
                lineStart = readIndex
                scanCursor = readIndex
                phase = .chunkSize

            case .trailerFields:
                guard let line = try nextLine() else {
                    return nil
                }
                trailerBytes += lineStart - readIndex
                guard trailerBytes <= limits.maxHeadBytes else {
                    throw .headerTooLarge
                }
                readIndex = lineStart
                if line.isEmpty {
                    return completeRequest()
                }
                // Trailers are validated so malformed bytes can't hide in
                // them, then dropped: nothing downstream consumes them and
                // merging them into headers would let a client add fields
                // after framing decisions were made (RFC 9110 §6.5.1).
                _ = try parseFieldLine(line)
                trailerCount += 1
                guard trailerCount <= limits.maxHeaderCount else {
                    throw .headerTooLarge
                }
            }
        }
    }

    /// Finds the next line terminator (CRLF or bare LF) from `scanCursor` and
    /// returns the line's content range, advancing `lineStart` past the
    /// terminator. Returns nil if no complete line is buffered yet.
    ///
    /// - Throws: the phase's size error when the unterminated line already
    ///   reaches its limit; 400 for a CR not followed by LF (RFC 9112 §2.2),
    ///   detected as soon as the byte after the CR arrives.
    private mutating func nextLine() throws(HTTPParseError) -> Range<Int>? {
        let scan: LineScan = buffer.withUnsafeBufferPointer { bytes in
            var index = scanCursor
            let end = bytes.count
            while index < end {
                let byte = bytes[index]
                if byte == HTTPBytes.lf {
                    return .lineFeed(index)
                }
                if byte == HTTPBytes.cr {
                    if index + 1 == end {
                        // Can't judge the CR until its successor arrives.
                        return .incomplete(resumeAt: index)
                    }
                    if bytes[index + 1] != HTTPBytes.lf {
                        return .bareCR(index)
                    }
                }
                index += 1
            }
            return .incomplete(resumeAt: end)
        }
        switch scan {
        case .incomplete(let resumeAt):
            scanCursor = resumeAt
            try checkUnterminatedLine(end: buffer.count)
            return nil
        case .bareCR(let index):
            // Had the input been split right after this CR, the size check
            // would have fired first; doing it here too makes the outcome
            // independent of how the bytes were chunked.
            try checkUnterminatedLine(end: index + 1)
            throw .badRequest("bare CR in line")
        case .lineFeed(let lf):
            let start = lineStart
            let end = lf > start && buffer[lf - 1] == HTTPBytes.cr ? lf - 1 : lf
            lineStart = lf + 1
            scanCursor = lf + 1
            return start..<end
        }
    }

    private enum LineScan {
        case lineFeed(Int)
        case incomplete(resumeAt: Int)
        case bareCR(Int)
    }

    /// The head so far already spans up to `lineStart`.
    private func checkHeadSize() throws(HTTPParseError) {
        guard lineStart - readIndex <= limits.maxHeadBytes else {
            throw .headerTooLarge
        }
    }

    /// Called when the current line is unterminated at `end`. The line (and
    /// so its section) is then at least one byte longer than `end - readIndex`,
    /// so reaching the limit already proves it is over. Checking here, not
    /// only once the terminator arrives, stops a client from making us buffer
    /// an endless line.
    private func checkUnterminatedLine(end: Int) throws(HTTPParseError) {
        let pending = end - readIndex
        switch phase {
        case .requestLine, .headerFields:
            guard pending < limits.maxHeadBytes else {
                throw .headerTooLarge
            }
        case .trailerFields:
            guard pending < limits.maxHeadBytes - trailerBytes else {
                throw .headerTooLarge
            }
        case .chunkSize:
            guard pending < limits.maxChunkLineBytes else {
                throw .badRequest("chunk size line too long")
            }
        case .fixedBody, .chunkData, .chunkDataEnd:
            break
        }
    }

    // MARK: - Request line (RFC 9112 §3)

    private mutating func parseRequestLine(_ line: Range<Int>) throws(HTTPParseError) {
        let start = line.lowerBound, end = line.upperBound
        var index = start
        while index < end, buffer[index] != HTTPBytes.space {
            index += 1
        }
        let methodEnd = index
        guard methodEnd > start, methodEnd < end else {
            throw .badRequest("malformed request line")
        }
        for position in start..<methodEnd where !HTTPBytes.isTokenChar(buffer[position]) {
            throw .badRequest("invalid method")
        }

        let targetStart = methodEnd + 1
        index = targetStart
        while index < end, buffer[index] != HTTPBytes.space {
            index += 1
        }
        let targetEnd = index
        guard targetEnd > targetStart else {
            throw .badRequest("malformed request line")
        }
        if targetEnd == end {
            // "GET /path" without a version (an HTTP/0.9 simple request) is a malformed HTTP/1.x
            // request line (RFC 9112 §3): 400, as docs/api.md says, not 505, which needs a version.
            throw .badRequest("malformed request line: no HTTP version (method, target, HTTP/1.1)")
        }
        // The version is judged before the target so that e.g. the HTTP/2
        // preface "PRI * HTTP/2.0" gets 505 rather than a target complaint.
        let minor = try parseVersion(targetEnd + 1, end)

        let methodName = String(decoding: buffer[start..<methodEnd], as: UTF8.self)
        try validateTarget(targetStart, targetEnd, isOptions: methodName == "OPTIONS")
        let parts = HTTPRequest.splitTarget(buffer, targetStart, targetEnd)

        method = HTTPMethod(methodName)
        target = String(decoding: buffer[targetStart..<targetEnd], as: UTF8.self)
        // An origin-form target without a query, the usual one, is its path: one string, not two.
        path = parts.path == targetStart..<targetEnd ? target : HTTPRequest.pathString(buffer, parts.path)
        query = parts.query.map { String(decoding: buffer[$0], as: UTF8.self) }
        versionMinor = minor
    }

    /// `HTTP/1.0` → 0, `HTTP/1.x` (x ≥ 1) → 1 (RFC 9110 §2.5: treat a higher
    /// minor as the highest we implement). Other well-formed versions → 505.
    private func parseVersion(_ start: Int, _ end: Int) throws(HTTPParseError) -> Int {
        // "HTTP/" is case-sensitive (RFC 9112 §2.3).
        guard end - start >= 6, buffer[start] == 0x48, buffer[start + 1] == 0x54, buffer[start + 2] == 0x54,
              buffer[start + 3] == 0x50, buffer[start + 4] == HTTPBytes.slash else {
            throw .badRequest("invalid HTTP version")
        }
        let digits = start + 5
        guard let major = HTTPBytes.digitValue(buffer[digits]) else {
            throw .badRequest("invalid HTTP version")
        }
        if end - digits == 1 {
            // "HTTP/2" and "HTTP/3" are how those versions name themselves.
            guard major >= 2 else {
                throw .badRequest("invalid HTTP version")
            }
            throw .versionNotSupported
        }
        guard end - digits == 3, buffer[digits + 1] == HTTPBytes.dot,
              let minor = HTTPBytes.digitValue(buffer[digits + 2]) else {
            throw .badRequest("invalid HTTP version")
        }
        guard major == 1 else {
            throw .versionNotSupported
        }
        return minor == 0 ? 0 : 1
    }

    /// Accepts origin-form, absolute-form (http/https) and asterisk-form for
    /// OPTIONS (RFC 9112 §3.2). Authority-form is only for CONNECT, which this
    /// server does not proxy.
    private func validateTarget(_ start: Int, _ end: Int, isOptions: Bool) throws(HTTPParseError) {
        for index in start..<end {
            let byte = buffer[index]
            // Only visible ASCII; a fragment is never part of a request-target.
            guard byte > 0x20, byte < 0x7F, byte != HTTPBytes.hash else {
                throw .badRequest("invalid character in request target")
            }
        }
        let first = buffer[start]
        if first == HTTPBytes.slash {
            return
        }
        if first == HTTPBytes.asterisk, end - start == 1 {
            guard isOptions else {
                throw .badRequest("asterisk-form target is only allowed for OPTIONS")
            }
            return
        }
        guard let authorityStart = HTTPBytes.absoluteFormAuthorityStart(buffer, start, end) else {
            throw .badRequest("unsupported request target form")
        }
        var index = authorityStart
        while index < end, buffer[index] != HTTPBytes.slash, buffer[index] != HTTPBytes.question {
            // RFC 9110 §4.2.4: userinfo in an http(s) URI is to be treated as
            // an error, as it is used to disguise the real host.
            guard buffer[index] != HTTPBytes.at else {
                throw .badRequest("userinfo not allowed in request target")
            }
            index += 1
        }
        guard index > authorityStart else {
            throw .badRequest("empty authority in request target")
        }
    }

    // MARK: - Fields (RFC 9112 §5, RFC 9110 §5.5)

    /// Validates one `name: value` line and returns the name and trimmed value
    /// ranges.
    private func parseFieldLine(_ line: Range<Int>) throws(HTTPParseError) -> (name: Range<Int>, value: Range<Int>) {
        let start = line.lowerBound, end = line.upperBound
        // RFC 9112 §5.2: obs-fold may be rejected with 400; unfolding would
        // make our view of the field differ from a lenient peer's.
        guard !HTTPBytes.isWhitespace(buffer[start]) else {
            throw .badRequest("obsolete line folding is not allowed")
        }
        var colon = start
        while colon < end, buffer[colon] != HTTPBytes.colon {
            colon += 1
        }
        guard colon < end else {
            throw .badRequest("header field without colon")
        }
        guard colon > start else {
            throw .badRequest("empty header field name")
        }
        // RFC 9112 §5.1: MUST reject whitespace between name and colon, a
        // classic smuggling vector ("Transfer-Encoding : chunked").
        guard !HTTPBytes.isWhitespace(buffer[colon - 1]) else {
            throw .badRequest("whitespace between header field name and colon")
        }
        for index in start..<colon where !HTTPBytes.isTokenChar(buffer[index]) {
            throw .badRequest("invalid character in header field name")
        }
        var valueStart = colon + 1, valueEnd = end
        while valueStart < valueEnd, HTTPBytes.isWhitespace(buffer[valueStart]) {
            valueStart += 1
        }
        while valueEnd > valueStart, HTTPBytes.isWhitespace(buffer[valueEnd - 1]) {
            valueEnd -= 1
        }
        for index in valueStart..<valueEnd where !HTTPBytes.isFieldValueByte(buffer[index]) {
            throw .badRequest("invalid character in header field value")
        }
        return (start..<colon, valueStart..<valueEnd)
    }

    // MARK: - Message framing (RFC 9112 §6)

    /// Bits of `framing`: the fields that frame the request or the connection.
    enum FramingField {
        static let host: UInt8 = 1, hostTwice: UInt8 = 2, contentLength: UInt8 = 4, transferEncoding: UInt8 = 8
        static let expect: UInt8 = 16, connection: UInt8 = 32
    }

    /// Notes the field named `buffer[name]` in `framing` when it is one of `FramingField`'s
    /// (names compared without regard to ASCII case, as `HTTPHeaders` compares them).
    private mutating func noteFraming(_ name: Range<Int>) {
        let bit: UInt8
        switch name.count {
        case 4: bit = nameIs(name, "host") ? (framing & FramingField.host != 0 ? FramingField.hostTwice : FramingField.host) : 0
        case 6: bit = nameIs(name, "expect") ? FramingField.expect : 0
        case 10: bit = nameIs(name, "connection") ? FramingField.connection : 0
        case 14: bit = nameIs(name, "content-length") ? FramingField.contentLength : 0
        case 17: bit = nameIs(name, "transfer-encoding") ? FramingField.transferEncoding : 0
        default: bit = 0
        }
        framing |= bit
    }

    /// Whether `buffer[name]` is `lowercaseName` in any ASCII case.
    private func nameIs(_ name: Range<Int>, _ lowercaseName: StaticString) -> Bool {
        lowercaseName.withUTF8Buffer { word in
            guard word.count == name.count else { return false }
            for offset in 0..<word.count where HTTPBytes.lowercased(buffer[name.lowerBound + offset]) != word[offset] {
                return false
            }
            return true
        }
    }

    /// Called at the empty line ending the head, with `readIndex` just past it.
    private mutating func finishHead() throws(HTTPParseError) {
        let hasContentLength = framing & FramingField.contentLength != 0
        let hasTransferEncoding = framing & FramingField.transferEncoding != 0
        // RFC 9112 §3.2: MUST answer 400 to an HTTP/1.1 request without Host
        // or with several. Several are refused for 1.0 too: which one to
        // trust is exactly the ambiguity that enables host confusion.
        if framing & FramingField.host == 0, versionMinor >= 1 {
            throw .badRequest("missing Host header")
        }
        if framing & FramingField.hostTwice != 0 {
            throw .badRequest("multiple Host headers")
        }

        var chunked = false
        var length = 0
        if hasTransferEncoding {
            // RFC 9112 §6.1: a 1.0 recipient can't know chunked framing, and
            // TE+CL is the textbook smuggling setup; both are refused rather
            // than resolved.
            guard versionMinor >= 1 else {
                throw .badRequest("Transfer-Encoding in an HTTP/1.0 request")
            }
            guard !hasContentLength else {
                throw .badRequest("both Transfer-Encoding and Content-Length present")
            }
            try validateTransferCodings()
            chunked = true
        } else if hasContentLength {
            length = try contentLength()
        }

        if framing & FramingField.expect != 0, !headers.listHasOnly("expect", token: "100-continue") { throw .expectationFailed }
        let expectsContinue = versionMinor >= 1 && framing & FramingField.expect != 0 && headers.listContains("expect", token: "100-continue")
        if chunked {
            body = []
            chunkedTotal = 0
            phase = .chunkSize
        } else {
            remaining = length
            phase = .fixedBody
        }
        lineStart = readIndex
        scanCursor = readIndex
        // RFC 9110 §10.1.1: a server may skip 100 once body bytes are
        // arriving, so only ask for it when nothing follows the head yet.
        if expectsContinue, chunked || length > 0, buffer.count == readIndex {
            continuePending = true
        }
    }

    /// RFC 9112 §6.3: for a request, chunked must be the final coding;
    /// applying it twice is an error; any other coding is one we can't undo.
    private func validateTransferCodings() throws(HTTPParseError) {
        var codings: [String] = []
        for value in headers.values("transfer-encoding") {
            for element in value.utf8.split(separator: HTTPBytes.comma, omittingEmptySubsequences: false) {
                // Parameters (";q=…") don't change which coding it is.
                let nameEnd = element.firstIndex(of: HTTPBytes.semicolon) ?? element.endIndex
                let name = HTTPBytes.trimOWS(element[element.startIndex..<nameEnd])
                if name.isEmpty {
                    // RFC 9110 §5.6.1: empty list elements are to be ignored,
                    // but not an empty coding that has parameters.
                    if nameEnd != element.endIndex {
                        throw .badRequest("invalid Transfer-Encoding")
                    }
                    continue
                }
                guard name.allSatisfy(HTTPBytes.isTokenChar) else {
                    throw .badRequest("invalid Transfer-Encoding")
                }
                codings.append(String(decoding: name.map(HTTPBytes.lowercased), as: UTF8.self))
            }
        }
        guard let last = codings.last else {
            throw .badRequest("empty Transfer-Encoding")
        }
        guard last == "chunked" else {
            throw .badRequest("final transfer coding is not chunked")
        }
        guard codings.lazy.filter({ $0 == "chunked" }).count == 1 else {
            throw .badRequest("chunked transfer coding applied more than once")
        }
        if let other = codings.first(where: { $0 != "chunked" }) {
            throw .notImplemented("transfer coding \"\(other)\" is not supported")
        }
    }

    /// RFC 9112 §6.3 / RFC 9110 §8.6: Content-Length is 1*DIGIT; repeated
    /// fields or list values are only tolerated when identical.
    private func contentLength() throws(HTTPParseError) -> Int {
        // The usual case, one field of plain digits, read in place; anything else (a list,
        // repeated fields, a bad character) takes the general reading below.
        var fields = 0
        var only = ""
        for field in headers where HTTPHeaders.namesEqual(field.name, "content-length") {
            fields += 1
            only = field.value
        }
        if fields == 1 {
            enum Reading { case length(Int), tooLarge, other }
            let reading = only.withUTF8 { utf8 -> Reading in
                guard !utf8.isEmpty, utf8.allSatisfy({ HTTPBytes.digitValue($0) != nil }) else { return .other }
                var length = 0
                for byte in utf8 {
                    let (shifted, overflowA) = length.multipliedReportingOverflow(by: 10)
                    let (sum, overflowB) = shifted.addingReportingOverflow(Int(byte &- 0x30))
                    guard !overflowA, !overflowB, sum <= limits.maxBodyBytes else { return .tooLarge }
                    length = sum
                }
                return .length(length)
            }
            switch reading {
            case .length(let length): return length
            case .tooLarge: throw .payloadTooLarge
            case .other: break
            }
        }
        var first: [UInt8]?
        for value in headers.values("content-length") {
            for element in value.utf8.split(separator: HTTPBytes.comma, omittingEmptySubsequences: false) {
                let digits = Array(HTTPBytes.trimOWS(element))
                guard !digits.isEmpty, digits.allSatisfy({ HTTPBytes.digitValue($0) != nil }) else {
                    throw .badRequest("invalid Content-Length")
                }
                if let first {
                    guard first == digits else {
                        throw .badRequest("conflicting Content-Length values")
                    }
                } else {
                    first = digits
                }
            }
        }
        var length = 0
        for digit in first ?? [] {
            // Refuse once past the limit, which also rules out overflow for
            // any sane limit; the checked ops cover an Int.max limit.
            let (shifted, overflowA) = length.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = shifted.addingReportingOverflow(Int(digit &- 0x30))
            guard !overflowA, !overflowB, sum <= limits.maxBodyBytes else {
                throw .payloadTooLarge
            }
            length = sum
        }
        return length
    }

    /// Parses `chunk-size [ chunk-ext ]` (RFC 9112 §7.1) and returns the size,
    /// after checking the running total against the body limit.
    private mutating func parseChunkSizeLine(_ line: Range<Int>) throws(HTTPParseError) -> Int {
        var index = line.lowerBound
        let end = line.upperBound
        var size = 0
        // The total never exceeds the limit, so this can't underflow.
        let allowance = limits.maxBodyBytes - chunkedTotal
        while index < end, let digit = HTTPBytes.hexValue(buffer[index]) {
            let (shifted, overflowA) = size.multipliedReportingOverflow(by: 16)
            let (sum, overflowB) = shifted.addingReportingOverflow(Int(digit))
            guard !overflowA, !overflowB, sum <= allowance else {
                throw .payloadTooLarge
            }
            size = sum
            index += 1
        }
        guard index > line.lowerBound else {
            throw .badRequest("invalid chunk size")
        }
        try skipChunkExtensions(index, end)
        chunkedTotal += size
        return size
    }

    /// chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] ).
    /// Extensions are validated, then ignored: none are defined that we use.
    private func skipChunkExtensions(_ start: Int, _ end: Int) throws(HTTPParseError) {
        var index = start
        while true {
            let beforeSpace = index
            while index < end, HTTPBytes.isWhitespace(buffer[index]) {
                index += 1
            }
            if index == end {
                // BWS is only allowed before ";", not as trailing padding.
                guard index == beforeSpace else {
                    throw .badRequest("invalid chunk size")
                }
                return
            }
            guard buffer[index] == HTTPBytes.semicolon else {
                throw .badRequest("invalid chunk size")
            }
            index += 1
            while index < end, HTTPBytes.isWhitespace(buffer[index]) {
                index += 1
            }
            let nameStart = index
            while index < end, HTTPBytes.isTokenChar(buffer[index]) {
                index += 1
            }
            guard index > nameStart else {
                throw .badRequest("invalid chunk extension")
            }
            var lookahead = index
            while lookahead < end, HTTPBytes.isWhitespace(buffer[lookahead]) {
                lookahead += 1
            }
            guard lookahead < end, buffer[lookahead] == HTTPBytes.equals else {
                continue
            }
            index = lookahead + 1
            while index < end, HTTPBytes.isWhitespace(buffer[index]) {
                index += 1
            }
            guard index < end else {
                throw .badRequest("invalid chunk extension")
            }
            if buffer[index] == HTTPBytes.quote {
                index = try skipQuotedString(index, end)
            } else {
                let valueStart = index
                while index < end, HTTPBytes.isTokenChar(buffer[index]) {
                    index += 1
                }
                guard index > valueStart else {
                    throw .badRequest("invalid chunk extension")
                }
            }
        }
    }

    /// Returns the index after the closing quote of the quoted-string at
    /// `start` (RFC 9110 §5.6.4).
    private func skipQuotedString(_ start: Int, _ end: Int) throws(HTTPParseError) -> Int {
        var index = start + 1
        while index < end {
            let byte = buffer[index]
            if byte == HTTPBytes.quote {
                return index + 1
            }
            if byte == HTTPBytes.backslash {
                index += 1
                guard index < end, HTTPBytes.isFieldValueByte(buffer[index]) else {
                    throw .badRequest("invalid chunk extension")
                }
            } else if !HTTPBytes.isFieldValueByte(byte) {
                throw .badRequest("invalid chunk extension")
            }
            index += 1
        }
        throw .badRequest("invalid chunk extension")
    }

    // MARK: - Bookkeeping

    private mutating func completeRequest() -> HTTPRequest {
        let request = HTTPRequest(
            method: method, target: target, path: path, query: query,
            versionMinor: versionMinor, headers: headers, body: body,
            // Without a Connection field, the version alone decides.
            keepAlive: framing & FramingField.connection != 0 ? HTTPRequest.defaultKeepAlive(versionMinor: versionMinor, headers: headers)
                : versionMinor >= 1
        )
        resetMessage()
        lineStart = readIndex
        scanCursor = readIndex
        continuePending = false
        return request
    }

    private mutating func resetMessage() {
        phase = .requestLine
        emptyLinesSkipped = 0
        method = .get
        target = ""
        path = ""
        query = nil
        versionMinor = 1
        headers = HTTPHeaders()
        framing = 0
        body = []
        remaining = 0
        chunkedTotal = 0
        trailerBytes = 0
        trailerCount = 0
    }

    /// Drops the consumed prefix when that is cheap relative to the data kept:
    /// always when everything was consumed, otherwise only once the prefix is
    /// large and at least half the buffer, which keeps total copying linear.
    private mutating func compactIfUseful() {
        guard readIndex > 0 else { return }
        if readIndex == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= Self.retainedCapacity)
        } else if readIndex >= Self.compactionThreshold, readIndex >= buffer.count - readIndex {
            buffer.removeSubrange(0..<readIndex)
        } else {
            return
        }
        let shift = readIndex
        readIndex = 0
        lineStart = max(0, lineStart - shift)
        scanCursor = max(0, scanCursor - shift)
    }
}

/// Byte classes and constants shared by the HTTP types.
enum HTTPBytes {
    static let htab: UInt8 = 0x09
    static let lf: UInt8 = 0x0A
    static let cr: UInt8 = 0x0D
    static let space: UInt8 = 0x20
    static let quote: UInt8 = 0x22
    static let hash: UInt8 = 0x23
    static let percent: UInt8 = 0x25
    static let ampersand: UInt8 = 0x26
    static let asterisk: UInt8 = 0x2A
    static let plus: UInt8 = 0x2B
    static let comma: UInt8 = 0x2C
    static let dot: UInt8 = 0x2E
    static let slash: UInt8 = 0x2F
    static let colon: UInt8 = 0x3A
    static let semicolon: UInt8 = 0x3B
    static let equals: UInt8 = 0x3D
    static let question: UInt8 = 0x3F
    static let at: UInt8 = 0x40
    static let backslash: UInt8 = 0x5C

    @inline(__always)
    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    @inline(__always)
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == space || byte == htab
    }

    /// tchar (RFC 9110 §5.6.2).
    static func isTokenChar(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A:
            return true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E:
            return true  // ! # $ % & ' * + - . ^ _ ` | ~
        default:
            return false
        }
    }

    /// field-vchar / SP / HTAB (RFC 9110 §5.5): VCHAR, obs-text, SP, HTAB.
    @inline(__always)
    static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == htab || (byte >= 0x20 && byte != 0x7F)
    }

    @inline(__always)
    static func digitValue(_ byte: UInt8) -> UInt8? {
        byte >= 0x30 && byte <= 0x39 ? byte - 0x30 : nil
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }

    /// Strips optional whitespace (SP / HTAB) from both ends.
    static func trimOWS<C: BidirectionalCollection>(_ bytes: C) -> C.SubSequence where C.Element == UInt8 {
        var start = bytes.startIndex, end = bytes.endIndex
        while start != end, isWhitespace(bytes[start]) {
            start = bytes.index(after: start)
        }
        while end != start, isWhitespace(bytes[bytes.index(before: end)]) {
            end = bytes.index(before: end)
        }
        return bytes[start..<end]
    }

    /// If `bytes[start..<end]` begins with `http://` or `https://` (scheme is
    /// case-insensitive, RFC 3986 §3.1), the index after `//`.
    static func absoluteFormAuthorityStart(_ bytes: [UInt8], _ start: Int, _ end: Int) -> Int? {
        for scheme in ["http://", "https://"] {
            let pattern = Array(scheme.utf8)
            guard end - start >= pattern.count else { continue }
            var matches = true
            for offset in 0..<pattern.count where lowercased(bytes[start + offset]) != pattern[offset] {
                matches = false
                break
            }
            if matches {
                return start + pattern.count
            }
        }
        return nil
    }
}
