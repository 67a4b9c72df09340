import Testing
@testable import Realtime

/// Parser tests; the individual tests live in extensions next to their helpers.
@Suite struct HTTPRequestParserTests {}

// MARK: - Harness

private func bytes(_ string: String) -> [UInt8] { Array(string.utf8) }

private struct Outcome: Equatable {
    var requests: [HTTPRequest] = []
    var error: HTTPParseError?
}

/// Appends each chunk and drains `next()` after every append, the way a
/// connection would. The drain loop is bounded: every returned request
/// consumes at least one byte, so more iterations than buffered bytes means
/// the parser is spinning.
private func run(
    _ chunks: [[UInt8]],
    limits: HTTPRequestParser.Limits = .init(),
    parser: inout HTTPRequestParser
) -> Outcome {
    var outcome = Outcome()
    var total = 0
    for chunk in chunks {
        parser.append(chunk)
        total += chunk.count
        var iterations = 0
        while true {
            iterations += 1
            if iterations > total + 2 {
                Issue.record("next() kept returning requests without consuming input")
                return outcome
            }
            do throws(HTTPParseError) {
                guard let request = try parser.next() else { break }
                outcome.requests.append(request)
            } catch {
                outcome.error = error
                return outcome
            }
        }
    }
    return outcome
}

private func run(_ chunks: [[UInt8]], limits: HTTPRequestParser.Limits = .init()) -> Outcome {
    var parser = HTTPRequestParser(limits: limits)
    return run(chunks, limits: limits, parser: &parser)
}

/// Whole, byte by byte, and every two-piece split.
private func allFeeds(_ raw: [UInt8]) -> [(label: String, chunks: [[UInt8]])] {
    var feeds: [(String, [[UInt8]])] = [("whole", [raw]), ("byte-by-byte", raw.map { [$0] })]
    if raw.count > 1 {
        for split in 1..<raw.count {
            feeds.append(("split@\(split)", [Array(raw[..<split]), Array(raw[split...])]))
        }
    }
    return feeds
}

private func request(
    _ method: HTTPMethod, _ target: String, path: String, query: String? = nil,
    minor: Int = 1, headers: [(String, String)], body: String = "", keepAlive: Bool
) -> HTTPRequest {
    HTTPRequest(
        method: method, target: target, path: path, query: query, versionMinor: minor,
        headers: HTTPHeaders(headers), body: bytes(body), keepAlive: keepAlive
    )
}

// MARK: - Valid requests

struct HTTPParserValidCase: Sendable, CustomTestStringConvertible {
    var name: String
    var raw: [UInt8]
    var expected: [HTTPRequest]
    var testDescription: String { name }
}

private let validCases: [HTTPParserValidCase] = [
    HTTPParserValidCase(
        name: "GET with query",
        raw: bytes("GET /v1/stream?channels=a,b&since=10 HTTP/1.1\r\nHost: example.com\r\nUser-Agent: test/1.0\r\nAccept: */*\r\n\r\n"),
        expected: [request(.get, "/v1/stream?channels=a,b&since=10", path: "/v1/stream", query: "channels=a,b&since=10",
                           headers: [("Host", "example.com"), ("User-Agent", "test/1.0"), ("Accept", "*/*")], keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "POST with Content-Length",
        raw: bytes("POST /submit HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\nhello world"),
        expected: [request(.post, "/submit", path: "/submit",
                           headers: [("Host", "h"), ("Content-Length", "11"), ("Content-Type", "text/plain")],
                           body: "hello world", keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "POST chunked with extensions and trailers",
        raw: bytes("POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n"
            + "6 ; q=\"a \\\" b\" ;flag\r\n world\r\n"
            + "A\r\n0123456789\r\n"
            + "0;last\r\nX-Checksum: abc\r\nX-Other:  1 \r\n\r\n"),
        expected: [request(.post, "/upload", path: "/upload",
                           headers: [("Host", "h"), ("Transfer-Encoding", "chunked")],
                           body: "hello world0123456789", keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "chunked with empty body and bare LF lines",
        raw: bytes("POST /e HTTP/1.1\nHost: h\nTransfer-Encoding: Chunked\n\n0\n\n"),
        expected: [request(.post, "/e", path: "/e", headers: [("Host", "h"), ("Transfer-Encoding", "Chunked")], keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "two pipelined",
        raw: bytes("GET /a HTTP/1.1\r\nHost: h\r\n\r\nPOST /b?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"),
        expected: [
            request(.get, "/a", path: "/a", headers: [("Host", "h")], keepAlive: true),
            request(.post, "/b?x=1", path: "/b", query: "x=1", headers: [("Host", "h"), ("Content-Length", "3")], body: "abc", keepAlive: true),
        ]
    ),
    HTTPParserValidCase(
        name: "three pipelined with chunked and close",
        raw: bytes("GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
            + "PUT /2 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n"
            + "\r\nGET /3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"),
        expected: [
            request(.get, "/1", path: "/1", headers: [("Host", "h")], keepAlive: true),
            request(.put, "/2", path: "/2", headers: [("Host", "h"), ("Transfer-Encoding", "chunked")], body: "xyz", keepAlive: true),
            request(.get, "/3", path: "/3", headers: [("Host", "h"), ("Connection", "close")], keepAlive: false),
        ]
    ),
    HTTPParserValidCase(
        name: "HTTP/1.0 without Host",
        raw: bytes("GET /old HTTP/1.0\r\nUser-Agent: ancient\r\n\r\n"),
        expected: [request(.get, "/old", path: "/old", minor: 0, headers: [("User-Agent", "ancient")], keepAlive: false)]
    ),
    HTTPParserValidCase(
        name: "HTTP/1.0 keep-alive with body",
        raw: bytes("POST /k HTTP/1.0\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok"),
        expected: [request(.post, "/k", path: "/k", minor: 0, headers: [("Connection", "Keep-Alive"), ("Content-Length", "2")], body: "ok", keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "absolute-form",
        raw: bytes("GET http://example.com:8080/a/b?c=d HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"),
        expected: [request(.get, "http://example.com:8080/a/b?c=d", path: "/a/b", query: "c=d",
                           headers: [("Host", "example.com:8080")], keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "absolute-form without path",
        raw: bytes("GET HTTPS://example.com?q HTTP/1.1\r\nHost: example.com\r\n\r\n"),
        expected: [request(.get, "HTTPS://example.com?q", path: "/", query: "q", headers: [("Host", "example.com")], keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "leading CRLF",
        raw: bytes("\r\n\r\n\nGET / HTTP/1.1\r\nHost: h\r\n\r\n"),
        expected: [request(.get, "/", path: "/", headers: [("Host", "h")], keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "Expect 100-continue",
        raw: bytes("PUT /file HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\ndata"),
        expected: [request(.put, "/file", path: "/file",
                           headers: [("Host", "h"), ("Expect", "100-continue"), ("Content-Length", "4")], body: "data", keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "OPTIONS asterisk",
        raw: bytes("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"),
        expected: [request(.options, "*", path: "*", headers: [("Host", "h")], keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "field value trimming, empty value, obs-text",
        raw: [UInt8]("GET /?q= HTTP/1.1\r\nHost: h\r\nX-A: \t v a l \t\r\nX-Empty:\r\nX-Obs: caf".utf8) + [0xC3, 0xA9, 0xFF] + bytes("\r\n\r\n"),
        expected: [request(.get, "/?q=", path: "/", query: "q=",
                           headers: [("Host", "h"), ("X-A", "v a l"), ("X-Empty", ""), ("X-Obs", String(decoding: [0x63, 0x61, 0x66, 0xC3, 0xA9, 0xFF], as: UTF8.self))],
                           keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "identical duplicate Content-Length",
        raw: bytes("POST /d HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\ncontent-length: 3, 3\r\n\r\nabc"),
        expected: [request(.post, "/d", path: "/d", headers: [("Host", "h"), ("Content-Length", "3"), ("content-length", "3, 3")], body: "abc", keepAlive: true)]
    ),
    HTTPParserValidCase(
        name: "Connection token list with close, custom method, HTTP/1.2",
        raw: bytes("PURGE /c HTTP/1.2\r\nHost: h\r\nConnection: Upgrade, CLOSE\r\nContent-Length: 0\r\n\r\n"),
        expected: [request(HTTPMethod("PURGE"), "/c", path: "/c", headers: [("Host", "h"), ("Connection", "Upgrade, CLOSE"), ("Content-Length", "0")], keepAlive: false)]
    ),
]

extension HTTPRequestParserTests {
    @Test(arguments: validCases)
    func validRequestParsesIdenticallyForEveryFeed(_ testCase: HTTPParserValidCase) {
        let reference = run([testCase.raw])
        #expect(reference.error == nil)
        #expect(reference.requests == testCase.expected)
        for feed in allFeeds(testCase.raw) {
            var parser = HTTPRequestParser()
            let outcome = run(feed.chunks, parser: &parser)
            #expect(outcome == reference, "feed \(feed.label)")
            #expect(parser.isIdle, "feed \(feed.label)")
            #expect(parser.bufferedByteCount == 0, "feed \(feed.label)")
        }
    }

    @Test func threePipelinedRequestsSplitAtEveryPairOfPoints() {
        let raw = validCases.first { $0.name.hasPrefix("three pipelined") }!.raw
        let reference = run([raw])
        #expect(reference.requests.count == 3)
        // Three-piece splits at every (i, j) pair, sampled with a stride to keep
        // the run short while still covering every boundary as a first cut.
        for i in 1..<raw.count {
            for j in stride(from: i + 1, to: raw.count, by: 7) {
                let chunks = [Array(raw[..<i]), Array(raw[i..<j]), Array(raw[j...])]
                #expect(run(chunks) == reference, "split at \(i), \(j)")
            }
        }
    }
}

// MARK: - Refusals

struct HTTPParserErrorCase: Sendable, CustomTestStringConvertible {
    var name: String
    var raw: [UInt8]
    var expected: HTTPParseError
    var limits = HTTPRequestParser.Limits()
    var testDescription: String { name }

    init(_ name: String, _ raw: [UInt8], _ expected: HTTPParseError, limits: HTTPRequestParser.Limits = .init()) {
        self.name = name
        self.raw = raw
        self.expected = expected
        self.limits = limits
    }

    init(_ name: String, _ raw: String, _ expected: HTTPParseError, limits: HTTPRequestParser.Limits = .init()) {
        self.init(name, bytes(raw), expected, limits: limits)
    }
}

private let bad = HTTPParseError.badRequest("")

/// 400s are compared by status only (reason texts are not API); everything
/// else must match exactly.
private func matches(_ actual: HTTPParseError?, _ expected: HTTPParseError) -> Bool {
    guard let actual else { return false }
    if case .badRequest = expected { return actual.status == 400 }
    return actual == expected
}

private let host = "Host: h\r\n"

private let errorCases: [HTTPParserErrorCase] = [
    // Request line.
    HTTPParserErrorCase("method only", "GET\r\n\r\n", bad),
    HTTPParserErrorCase("double space", "GET  / HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("leading space", " GET / HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("trailing space", "GET / HTTP/1.1 \r\n\(host)\r\n", bad),
    HTTPParserErrorCase("tab separator", "GET\t/ HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("invalid method char", "G(T / HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("lowercase version", "GET / http/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("version without minor", "GET / HTTP/1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("version too long", "GET / HTTP/1.1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("version letters", "GET / HTTP/x.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("version multi-digit", "GET / HTTP/10.0\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("garbage version", "GET / FOO\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("space in target", "GET /a b HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("relative target", "GET foo HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("asterisk for GET", "GET * HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("CTL in target", "GET /a\u{01}b HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("DEL in target", "GET /\u{7F} HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("fragment in target", "GET /a#frag HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("non-ASCII target", bytes("GET /caf") + [0xC3, 0xA9] + bytes(" HTTP/1.1\r\n\(host)\r\n"), bad),
    HTTPParserErrorCase("empty authority", "GET http:///x HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("userinfo", "GET http://user@evil/ HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("authority-form", "CONNECT host:443 HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("other scheme", "GET ftp://h/ HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("too many leading empty lines", String(repeating: "\r\n", count: 9) + "GET / HTTP/1.1\r\n\(host)\r\n", bad),
    HTTPParserErrorCase("NUL in request line", "GET /\0 HTTP/1.1\r\n\(host)\r\n", bad),
    // Versions.
    HTTPParserErrorCase("HTTP/2.0", "GET / HTTP/2.0\r\n\(host)\r\n", .versionNotSupported),
    HTTPParserErrorCase("HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", .versionNotSupported),
    HTTPParserErrorCase("HTTP/3", "GET / HTTP/3\r\n\(host)\r\n", .versionNotSupported),
    HTTPParserErrorCase("HTTP/0.9 version", "GET / HTTP/0.9\r\n\r\n", .versionNotSupported),
    HTTPParserErrorCase("HTTP/0.9 simple request", "GET /index.html\r\n", .badRequest("malformed request line: no HTTP version (method, target, HTTP/1.1)")),
    // Line terminators.
    HTTPParserErrorCase("bare CR after request line", "GET / HTTP/1.1\rHost: h\r\n\r\n", bad),
    HTTPParserErrorCase("CR CR LF", "GET / HTTP/1.1\r\nHost: h\r\r\n\r\n", bad),
    HTTPParserErrorCase("CR inside value", "GET / HTTP/1.1\r\n\(host)X-A: a\rb\r\n\r\n", bad),
    // Header fields.
    HTTPParserErrorCase("space before colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", bad),
    HTTPParserErrorCase("tab before colon", "GET / HTTP/1.1\r\n\(host)Transfer-Encoding\t: chunked\r\n\r\n", bad),
    HTTPParserErrorCase("obs-fold", "GET / HTTP/1.1\r\n\(host)X-A: a\r\n b\r\n\r\n", bad),
    HTTPParserErrorCase("obs-fold with tab", "GET / HTTP/1.1\r\n\(host)X-A: a\r\n\tb\r\n\r\n", bad),
    HTTPParserErrorCase("whitespace line after request line", "GET / HTTP/1.1\r\n Host: h\r\n\r\n", bad),
    HTTPParserErrorCase("NUL in value", "GET / HTTP/1.1\r\n\(host)X-A: a\0b\r\n\r\n", bad),
    HTTPParserErrorCase("DEL in value", "GET / HTTP/1.1\r\n\(host)X-A: a\u{7F}\r\n\r\n", bad),
    HTTPParserErrorCase("ESC in value", "GET / HTTP/1.1\r\n\(host)X-A: \u{1B}[31m\r\n\r\n", bad),
    HTTPParserErrorCase("missing colon", "GET / HTTP/1.1\r\n\(host)X-A\r\n\r\n", bad),
    HTTPParserErrorCase("empty name", "GET / HTTP/1.1\r\n\(host): v\r\n\r\n", bad),
    HTTPParserErrorCase("space in name", "GET / HTTP/1.1\r\n\(host)X A: v\r\n\r\n", bad),
    HTTPParserErrorCase("invalid name char", "GET / HTTP/1.1\r\n\(host)X(A): v\r\n\r\n", bad),
    HTTPParserErrorCase("missing Host", "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", bad),
    HTTPParserErrorCase("two Host", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", bad),
    HTTPParserErrorCase("two Host in HTTP/1.0", "GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", bad),
    // Content-Length.
    HTTPParserErrorCase("CL and TE", "POST / HTTP/1.1\r\n\(host)Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", bad),
    HTTPParserErrorCase("conflicting CL headers", "POST / HTTP/1.1\r\n\(host)Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", bad),
    HTTPParserErrorCase("conflicting CL list", "POST / HTTP/1.1\r\n\(host)Content-Length: 3, 4\r\n\r\nabcd", bad),
    HTTPParserErrorCase("CL leading zero vs plain", "POST / HTTP/1.1\r\n\(host)Content-Length: 3\r\nContent-Length: 03\r\n\r\nabc", bad),
    HTTPParserErrorCase("negative CL", "POST / HTTP/1.1\r\n\(host)Content-Length: -1\r\n\r\n", bad),
    HTTPParserErrorCase("plus CL", "POST / HTTP/1.1\r\n\(host)Content-Length: +5\r\n\r\nhello", bad),
    HTTPParserErrorCase("hex CL", "POST / HTTP/1.1\r\n\(host)Content-Length: 0x5\r\n\r\nhello", bad),
    HTTPParserErrorCase("space inside CL", "POST / HTTP/1.1\r\n\(host)Content-Length: 1 0\r\n\r\n", bad),
    HTTPParserErrorCase("empty CL", "POST / HTTP/1.1\r\n\(host)Content-Length:\r\n\r\n", bad),
    HTTPParserErrorCase("trailing comma CL", "POST / HTTP/1.1\r\n\(host)Content-Length: 5,\r\n\r\nhello", bad),
    HTTPParserErrorCase("CL over limit", "POST / HTTP/1.1\r\n\(host)Content-Length: 1048577\r\n\r\n", .payloadTooLarge),
    HTTPParserErrorCase("CL overflowing Int", "POST / HTTP/1.1\r\n\(host)Content-Length: 99999999999999999999999999\r\n\r\n", .payloadTooLarge),
    // The one-field fast path (issue 17) judges the characters before the size, as the general reading does.
    HTTPParserErrorCase("CL too large then a bad character", "POST / HTTP/1.1\r\n\(host)Content-Length: 99999999999999999999999999x\r\n\r\n", bad),
    // Transfer-Encoding.
    HTTPParserErrorCase("gzip then chunked", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: gzip, chunked\r\n\r\n", .notImplemented("transfer coding \"gzip\" is not supported")),
    HTTPParserErrorCase("gzip then chunked in two fields", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", .notImplemented("transfer coding \"gzip\" is not supported")),
    HTTPParserErrorCase("gzip only", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: gzip\r\n\r\n", bad),
    HTTPParserErrorCase("identity", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: identity\r\n\r\n", bad),
    HTTPParserErrorCase("chunked then gzip", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked, gzip\r\n\r\n", bad),
    HTTPParserErrorCase("chunked twice", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked, chunked\r\n\r\n", bad),
    HTTPParserErrorCase("chunked twice in two fields", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", bad),
    HTTPParserErrorCase("empty TE", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: \r\n\r\n", bad),
    HTTPParserErrorCase("TE in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", bad),
    // Chunked framing.
    HTTPParserErrorCase("empty chunk size", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n\r\n", bad),
    HTTPParserErrorCase("non-hex chunk size", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\nzz\r\n", bad),
    HTTPParserErrorCase("leading space chunk size", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n", bad),
    HTTPParserErrorCase("trailing space chunk size", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n", bad),
    HTTPParserErrorCase("0x chunk size", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", bad),
    HTTPParserErrorCase("negative chunk size", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n-1\r\n", bad),
    HTTPParserErrorCase("extension without name", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5;\r\nhello\r\n0\r\n\r\n", bad),
    HTTPParserErrorCase("extension without value", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5;a=\r\nhello\r\n0\r\n\r\n", bad),
    HTTPParserErrorCase("unterminated quoted extension", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5;a=\"x\r\nhello\r\n0\r\n\r\n", bad),
    HTTPParserErrorCase("overlong chunk line", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5;" + String(repeating: "a", count: 5000) + "\r\n", bad),
    HTTPParserErrorCase("overlong chunk line, unterminated", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5;" + String(repeating: "a", count: 5000), bad),
    HTTPParserErrorCase("chunk size overflow", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffffffff\r\n", .payloadTooLarge),
    HTTPParserErrorCase("chunk size over limit", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n100001\r\n", .payloadTooLarge),
    HTTPParserErrorCase("chunked total over limit",
              "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n",
              .payloadTooLarge, limits: .init(maxBodyBytes: 10)),
    HTTPParserErrorCase("missing CRLF after chunk data", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n0\r\n\r\n", bad),
    HTTPParserErrorCase("CR without LF after chunk data", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n5\r\nhello\rX0\r\n\r\n", bad),
    HTTPParserErrorCase("obs-fold in trailer", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0\r\nX: a\r\n b\r\n\r\n", bad),
    HTTPParserErrorCase("malformed trailer", "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0\r\nnot a field\r\n\r\n", bad),
    HTTPParserErrorCase("too many trailers",
              "POST / HTTP/1.1\r\n\(host)Transfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n",
              .headerTooLarge, limits: .init(maxHeaderCount: 2)),
    HTTPParserErrorCase("trailer section too large",
              "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + String(repeating: "t", count: 200) + "\r\n\r\n",
              .headerTooLarge, limits: .init(maxHeadBytes: 100)),
    // Size limits on the head.
    HTTPParserErrorCase("head over 16 KiB", "GET / HTTP/1.1\r\n\(host)X-Big: " + String(repeating: "b", count: 16 * 1024) + "\r\n\r\n", .headerTooLarge),
    HTTPParserErrorCase("head over 16 KiB without terminator", "GET /" + String(repeating: "a", count: 20_000), .headerTooLarge),
    HTTPParserErrorCase("many headers without terminator",
              "GET / HTTP/1.1\r\n\(host)" + String(repeating: "X-Header: value\r\n", count: 1200), .headerTooLarge),
    HTTPParserErrorCase("too many headers",
              "GET / HTTP/1.1\r\n\(host)" + (1...100).map { "X-\($0): v\r\n" }.joined() + "\r\n", .headerTooLarge),
    HTTPParserErrorCase("bare CR right at the head limit", "GET /" + String(repeating: "a", count: 16 * 1024 - 6) + "\rX", .headerTooLarge),
]

extension HTTPRequestParserTests {
    @Test(arguments: errorCases)
    func malformedRequestIsRefused(_ testCase: HTTPParserErrorCase) {
        let whole = run([testCase.raw], limits: testCase.limits)
        #expect(matches(whole.error, testCase.expected), "got \(String(describing: whole.error))")
        #expect(whole.error?.status == testCase.expected.status)
        #expect(whole.requests.isEmpty)

        // The outcome must not depend on how the bytes were chunked.
        let byteByByte = run(testCase.raw.map { [$0] }, limits: testCase.limits)
        #expect(byteByByte == whole)
        if testCase.raw.count < 400 {
            for split in 1..<testCase.raw.count {
                let chunks = [Array(testCase.raw[..<split]), Array(testCase.raw[split...])]
                #expect(run(chunks, limits: testCase.limits) == whole, "split at \(split)")
            }
        }
    }

    @Test func errorIsSticky() {
        var parser = HTTPRequestParser()
        parser.append(bytes("GET / HTTP/1.1\r\nHost : h\r\n\r\n"))
        #expect(throws: HTTPParseError.self) { try parser.next() }
        let first: HTTPParseError? = { do throws(HTTPParseError) { _ = try parser.next(); return nil } catch { return error } }()
        parser.append(bytes("GET / HTTP/1.1\r\nHost: h\r\n\r\n"))
        let second: HTTPParseError? = { do throws(HTTPParseError) { _ = try parser.next(); return nil } catch { return error } }()
        #expect(first != nil)
        #expect(first == second)
        #expect(first?.status == 400)
    }

    @Test func errorAfterValidPipelinedRequestStillReturnsTheValidOne() {
        let outcome = run([bytes("GET /ok HTTP/1.1\r\nHost: h\r\n\r\nGET /bad HTTP/9.9\r\n\r\n")])
        #expect(outcome.requests.map(\.path) == ["/ok"])
        #expect(outcome.error == .versionNotSupported)
    }
}

// MARK: - Limits at their exact boundary

private func headOfExactly(_ size: Int) -> [UInt8] {
    let prefix = "GET / HTTP/1.1\r\nHost: h\r\nX-Pad: "
    let suffix = "\r\n\r\n"
    return bytes(prefix + String(repeating: "p", count: size - prefix.utf8.count - suffix.utf8.count) + suffix)
}

extension HTTPRequestParserTests {
    @Test func headOfExactlyTheLimitIsAccepted() {
        let outcome = run([headOfExactly(16 * 1024)])
        #expect(outcome.error == nil)
        #expect(outcome.requests.count == 1)
        #expect(run([headOfExactly(16 * 1024 + 1)]).error == .headerTooLarge)
    }

    @Test func partialHeadFailsAsSoonAsItReachesTheLimit() throws {
        let head = headOfExactly(20_000)
        var parser = HTTPRequestParser()
        parser.append(Array(head[..<(16 * 1024 - 1)]))
        let v1 = try parser.next()
        #expect(v1 == nil)
        parser.append([head[16 * 1024 - 1]])
        #expect(throws: HTTPParseError.headerTooLarge) { try parser.next() }
    }

    @Test func contentLengthOverLimitFailsBeforeTheBodyArrives() throws {
        var parser = HTTPRequestParser(limits: .init(maxBodyBytes: 100))
        parser.append(bytes("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 101\r\n\r\n"))
        #expect(throws: HTTPParseError.payloadTooLarge) { try parser.next() }

        var atLimit = HTTPRequestParser(limits: .init(maxBodyBytes: 100))
        atLimit.append(bytes("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n") + [UInt8](repeating: 7, count: 100))
        let v2 = try atLimit.next()
        #expect(v2?.body.count == 100)
    }

    @Test func chunkedBodyAtDefaultLimitIsAcceptedAndOneMoreByteIsNot() throws {
        var raw = bytes("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in 0..<4 {
            raw += bytes("40000\r\n") + [UInt8](repeating: 0x61, count: 0x40000) + bytes("\r\n")
        }
        let fits = raw + bytes("0\r\n\r\n")
        let outcome = run(stride(from: 0, to: fits.count, by: 8191).map { Array(fits[$0..<min($0 + 8191, fits.count)]) })
        #expect(outcome.error == nil)
        #expect(outcome.requests.first?.body.count == 1 << 20)
        #expect(run([raw + bytes("1\r\nx\r\n0\r\n\r\n")]).error == .payloadTooLarge)
    }

    @Test func exactlyMaxHeaderCountIsAccepted() {
        let raw = "GET / HTTP/1.1\r\n\(host)" + (1...99).map { "X-\($0): v\r\n" }.joined() + "\r\n"
        let outcome = run([bytes(raw)])
        #expect(outcome.error == nil)
        #expect(outcome.requests.first?.headers.count == 100)
    }
}

// MARK: - 100-continue, upgrade bytes, idleness

extension HTTPRequestParserTests {
    @Test func expectContinueIsSignalledOnceWhenBodyIsMissing() throws {
        var parser = HTTPRequestParser()
        parser.append(bytes("PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n"))
        let v3 = try parser.next()
        #expect(v3 == nil)
        let v4 = parser.takeContinueRequest()
        #expect(v4)
        let v5 = parser.takeContinueRequest()
        #expect(!v5)
        #expect(!parser.isIdle)
        parser.append(bytes("da"))
        let v6 = try parser.next()
        #expect(v6 == nil)
        let v7 = parser.takeContinueRequest()
        #expect(!v7)
        parser.append(bytes("ta"))
        let v8 = try parser.next()
        #expect(v8?.body == bytes("data"))
        #expect(parser.isIdle)
    }

    /// `100-continue` is the only expectation (RFC 9110 §10.1.1): any other member is 417, not a
    /// request served while its client waits for an answer it will never get.
    @Test(arguments: ["200-ok", "100-continue, 200-ok", "foo=bar", "100-continues"])
    func anUnknownExpectationIs417(_ value: String) {
        var parser = HTTPRequestParser()
        parser.append(bytes("POST /f HTTP/1.1\r\nHost: h\r\nExpect: \(value)\r\nContent-Length: 0\r\n\r\n"))
        #expect(throws: HTTPParseError.expectationFailed) { try parser.next() }
        #expect(HTTPParseError.expectationFailed.status == 417)
    }

    @Test(arguments: ["100-continue", "100-CONTINUE", " 100-continue ,", ""])
    func onlyContinueIsMet(_ value: String) throws {
        var parser = HTTPRequestParser()
        parser.append(bytes("POST /f HTTP/1.1\r\nHost: h\r\nExpect: \(value)\r\nContent-Length: 0\r\n\r\n"))
        #expect(try parser.next() != nil)
    }

    @Test func expectContinueNotSignalledWhenNotNeeded() throws {
        // Body already arriving.
        var withBody = HTTPRequestParser()
        withBody.append(bytes("PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nd"))
        let v9 = try withBody.next()
        #expect(v9 == nil)
        let v10 = withBody.takeContinueRequest()
        #expect(!v10)
        // No body announced.
        var empty = HTTPRequestParser()
        empty.append(bytes("PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n"))
        let v11 = try empty.next()
        #expect(v11 != nil)
        let v12 = empty.takeContinueRequest()
        #expect(!v12)
        // HTTP/1.0 must ignore the expectation (RFC 9110 §10.1.1).
        var old = HTTPRequestParser()
        old.append(bytes("PUT /f HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"))
        let v13 = try old.next()
        #expect(v13 == nil)
        let v14 = old.takeContinueRequest()
        #expect(!v14)
        // Request returned before the flag was read: flag is dropped.
        var stale = HTTPRequestParser()
        stale.append(bytes("PUT /f HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n"))
        let v15 = try stale.next()
        #expect(v15 == nil)
        stale.append(bytes("x"))
        let v16 = try stale.next()
        #expect(v16 != nil)
        let v17 = stale.takeContinueRequest()
        #expect(!v17)
    }

    @Test func expectContinueForChunkedBody() throws {
        var parser = HTTPRequestParser()
        parser.append(bytes("POST /c HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"))
        let v18 = try parser.next()
        #expect(v18 == nil)
        let v19 = parser.takeContinueRequest()
        #expect(v19)
        parser.append(bytes("2\r\nhi\r\n0\r\n\r\n"))
        let v20 = try parser.next()
        #expect(v20?.body == bytes("hi"))
    }

    @Test func unconsumedBytesAfterUpgradeRequestAreReturnedExactly() throws {
        let head = bytes("GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        let extra: [UInt8] = [0x81, 0x85, 0x00, 0xFF, 0x0D, 0x0A, 0x0D, 0x0A, 0x47, 0x45, 0x54]
        for split in 1..<(head.count + extra.count) {
            let raw = head + extra
            var parser = HTTPRequestParser()
            parser.append(Array(raw[..<split]))
            var request = try parser.next()
            if request == nil {
                parser.append(Array(raw[split...]))
                request = try parser.next()
            } else {
                parser.append(Array(raw[split...]))
            }
            #expect(request?.path == "/ws")
            #expect(parser.bufferedByteCount == extra.count)
            let v21 = parser.takeUnconsumedBytes()
            #expect(v21 == extra)
            #expect(parser.bufferedByteCount == 0)
            #expect(parser.isIdle)
            let v22 = parser.takeUnconsumedBytes()
            #expect(v22 == [])
        }
    }

    @Test func unconsumedBytesViaRawBufferAppend() throws {
        var parser = HTTPRequestParser()
        let raw = bytes("GET / HTTP/1.1\r\nHost: h\r\n\r\nrest")
        raw.withUnsafeBytes { parser.append($0) }
        let v23 = try parser.next()
        #expect(v23?.path == "/")
        let v24 = parser.takeUnconsumedBytes()
        #expect(v24 == bytes("rest"))
    }

    @Test func idleAndBufferedByteCountTrackPartialRequests() throws {
        var parser = HTTPRequestParser()
        #expect(parser.isIdle)
        parser.append(bytes("GET / HT"))
        let v25 = try parser.next()
        #expect(v25 == nil)
        #expect(!parser.isIdle)
        #expect(parser.bufferedByteCount == 8)
        parser.append(bytes("TP/1.1\r\nHost: h\r\n\r\n\r\n"))
        let v26 = try parser.next()
        #expect(v26 != nil)
        #expect(parser.bufferedByteCount == 2)
        let v27 = try parser.next()
        #expect(v27 == nil)
        #expect(parser.isIdle)
    }

    @Test func manyPipelinedRequestsAcrossCompactions() throws {
        var raw: [UInt8] = []
        for index in 0..<600 {
            raw += bytes("POST /r\(index) HTTP/1.1\r\nHost: h\r\nContent-Length: \(index % 50)\r\n\r\n")
            raw += [UInt8](repeating: UInt8(index % 256), count: index % 50)
        }
        for chunkSize in [1, 7, 1000, 5000] {
            var parser = HTTPRequestParser()
            var paths: [String] = []
            var offset = 0
            while offset < raw.count {
                parser.append(Array(raw[offset..<min(offset + chunkSize, raw.count)]))
                offset += chunkSize
                while let request = try parser.next() {
                    #expect(request.body == [UInt8](repeating: UInt8(paths.count % 256), count: paths.count % 50))
                    paths.append(request.path)
                }
            }
            #expect(paths == (0..<600).map { "/r\($0)" })
            #expect(parser.isIdle)
        }
    }
}

// MARK: - Query decoding, headers, errors, keep-alive

extension HTTPRequestParserTests {
    @Test func queryItemsDecoding() throws {
        let request = HTTPRequest(target: "/p?a=1&b=hello+world&c=%41%42&d&&e=&f=%zz&g=%4&=v&h=%E2%9C%93&i=%ff&a=2&j=x=y")
        let items = request.queryItems()
        #expect(items.map(\.name) == ["a", "b", "c", "d", "e", "f", "g", "", "h", "i", "a", "j"])
        #expect(items.map(\.value) == ["1", "hello world", "AB", "", "", "%zz", "%4", "v", "✓", "\u{FFFD}", "2", "x=y"])
        #expect(request.firstQueryValue("a") == "1")
        #expect(try request.queryValue("b") == "hello world")
        #expect(try request.queryValue("missing") == nil)
        // One value asked for, two given: refused naming the parameter, not the first taken.
        #expect(throws: HTTPError(400, "invalid_request", "a is given more than once in the query", field: "a")) {
            try request.queryValue("a")
        }
        #expect(HTTPRequest(target: "/p").queryItems().isEmpty)
        #expect(HTTPRequest(target: "/p?").queryItems().isEmpty)
        #expect(HTTPRequest(target: "/p?%2B+%2b=%26").queryItems().first! == ("+ +", "&"))
    }

    @Test func publicRequestInitDerivesPathQueryAndKeepAlive() {
        let request = HTTPRequest(target: "/v1/stream?channels=a,b")
        #expect(request.path == "/v1/stream")
        #expect(request.query == "channels=a,b")
        #expect(request.keepAlive)
        #expect(HTTPRequest(target: "http://h", versionMinor: 0).path == "/")
        #expect(!HTTPRequest(target: "/", versionMinor: 0).keepAlive)
        #expect(!HTTPRequest(target: "/", headers: ["Connection": "close"]).keepAlive)
    }

    @Test func headersBehaveAsOrderedCaseInsensitiveList() {
        var headers = HTTPHeaders([("Content-Type", "text/plain"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2")])
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["SET-COOKIE"] == "a=1")
        #expect(headers.values("Set-Cookie") == ["a=1", "b=2"])
        #expect(headers.contains("CONTENT-type"))
        #expect(!headers.contains("Content-Typ"))
        #expect(headers["missing"] == nil)
        #expect(headers.count == 3)
        headers.add(name: "X-A", value: "1")
        headers.replaceOrAdd(name: "set-cookie", value: "c=3")
        #expect(headers.map(\.name) == ["Content-Type", "Set-Cookie", "X-A"])
        #expect(headers.values("set-cookie") == ["c=3"])
        headers.replaceOrAdd(name: "X-New", value: "n")
        #expect(headers.count == 4)
        #expect(headers["x-new"] == "n")
        headers.remove(name: "x-a")
        #expect(!headers.contains("X-A"))
        #expect(HTTPHeaders().count == 0)
    }

    @Test func errorStatusAndCodes() {
        let table: [(HTTPParseError, Int, String)] = [
            (.badRequest("x"), 400, "bad_request"),
            (.headerTooLarge, 431, "header_too_large"),
            (.payloadTooLarge, 413, "payload_too_large"),
            (.notImplemented("gzip"), 501, "not_implemented"),
            (.versionNotSupported, 505, "http_version_not_supported"),
        ]
        for (error, status, code) in table {
            #expect(error.status == status)
            #expect(error.code == code)
            #expect(!error.message.isEmpty)
        }
        #expect(HTTPParseError.badRequest("missing Host header").message == "missing Host header")
    }

    @Test(arguments: [
        ("GET / HTTP/1.1\r\nHost: h\r\n\r\n", true),
        ("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", false),
        ("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nConnection: Close\r\n\r\n", false),
        ("GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n", true),
        ("GET / HTTP/1.0\r\n\r\n", false),
        ("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true),
        ("GET / HTTP/1.0\r\nConnection: foo ,KEEP-ALIVE\r\n\r\n", true),
        ("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false),
    ])
    func keepAliveFollowsVersionAndConnection(raw: String, expected: Bool) {
        #expect(run([bytes(raw)]).requests.first?.keepAlive == expected)
    }

    @Test func methodsAreCaseSensitiveTokens() {
        #expect(run([bytes("get / HTTP/1.1\r\nHost: h\r\n\r\n")]).requests.first?.method == HTTPMethod("get"))
        #expect(HTTPMethod.get != HTTPMethod("get"))
        #expect(HTTPMethod.patch.description == "PATCH")
    }
}

// MARK: - Randomized robustness

/// xorshift64*: deterministic, dependency-free, good enough to drive fuzzing.
private struct XorShift {
    var state: UInt64
    init(seed: UInt64) { state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed }
    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
    mutating func below(_ bound: Int) -> Int { bound <= 0 ? 0 : Int(next() % UInt64(bound)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}

private let fuzzTokens: [[UInt8]] = [
    "GET", "POST", " ", "/", "?", "a=b", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "\r\n", "\n", "\r", ":", ": ",
    "Host", "Content-Length", "Transfer-Encoding", "chunked", "gzip", ",", ";", "=", "\"", "\\", "0", "1", "5",
    "ff", "ffffffffffffffffff", "\t", "Connection", "close", "Expect", "100-continue", "*", "http://", "#", "\0",
].map { Array($0.utf8) }

private func randomInput(_ rng: inout XorShift) -> [UInt8] {
    var out: [UInt8] = []
    let pieces = rng.below(60)
    for _ in 0..<pieces {
        if rng.chance(40) {
            out.append(UInt8(truncatingIfNeeded: rng.next()))
        } else {
            out += fuzzTokens[rng.below(fuzzTokens.count)]
        }
    }
    return out
}

private func mutate(_ input: [UInt8], _ rng: inout XorShift) -> [UInt8] {
    var bytes = input
    for _ in 0..<(1 + rng.below(4)) {
        guard !bytes.isEmpty else { break }
        let position = rng.below(bytes.count)
        switch rng.below(6) {
        case 0: bytes[position] = UInt8(truncatingIfNeeded: rng.next())
        case 1: bytes[position] ^= UInt8(1) << UInt8(rng.below(8))
        case 2: bytes.remove(at: position)
        case 3: bytes.insert(contentsOf: fuzzTokens[rng.below(fuzzTokens.count)], at: position)
        case 4:
            let end = min(bytes.count, position + rng.below(16))
            bytes.insert(contentsOf: Array(bytes[position..<end]), at: rng.below(bytes.count))
        default:
            let end = min(bytes.count, position + rng.below(16))
            bytes.removeSubrange(position..<end)
        }
    }
    return bytes
}

private func randomSplits(_ input: [UInt8], _ rng: inout XorShift) -> [[UInt8]] {
    var chunks: [[UInt8]] = []
    var offset = 0
    while offset < input.count {
        let length = 1 + rng.below(rng.chance(30) ? 3 : 40)
        chunks.append(Array(input[offset..<min(input.count, offset + length)]))
        offset += length
    }
    return chunks
}

private func checkInvariants(_ input: [UInt8], _ outcome: Outcome, limits: HTTPRequestParser.Limits) {
    var bodyBytes = 0
    for request in outcome.requests {
        bodyBytes += request.body.count
        #expect(request.body.count <= limits.maxBodyBytes)
        #expect(!request.method.rawValue.isEmpty)
        #expect(request.versionMinor == 0 || request.versionMinor == 1)
        #expect(request.headers.count <= limits.maxHeaderCount)
        #expect(request.path.hasPrefix("/") || request.path == "*")
    }
    #expect(bodyBytes <= input.count)
}

extension HTTPRequestParserTests {
    @Test func fuzzRandomBytesNeverCrashAndOutcomeIsSplitIndependent() {
        var rng = XorShift(seed: 0xC0FFEE)
        let limits = HTTPRequestParser.Limits(maxHeadBytes: 256, maxBodyBytes: 128, maxHeaderCount: 8, maxChunkLineBytes: 32)
        for iteration in 0..<2000 {
            let input = randomInput(&rng)
            let useSmallLimits = iteration.isMultiple(of: 2)
            let activeLimits = useSmallLimits ? limits : .init()
            let whole = run([input], limits: activeLimits)
            let split = run(randomSplits(input, &rng), limits: activeLimits)
            #expect(whole == split, "iteration \(iteration)")
            checkInvariants(input, whole, limits: activeLimits)
        }
    }

    @Test func fuzzMutatedValidRequestsNeverCrashAndOutcomeIsSplitIndependent() {
        var rng = XorShift(seed: 42)
        let seeds = validCases.map(\.raw)
        let limits = HTTPRequestParser.Limits(maxHeadBytes: 200, maxBodyBytes: 64, maxHeaderCount: 6, maxChunkLineBytes: 24)
        var parsedSome = 0
        for iteration in 0..<2000 {
            var input = mutate(seeds[rng.below(seeds.count)], &rng)
            if rng.chance(20) {
                input += mutate(seeds[rng.below(seeds.count)], &rng)
            }
            let activeLimits = iteration.isMultiple(of: 3) ? limits : .init()
            let whole = run([input], limits: activeLimits)
            let bytewise = run(input.map { [$0] }, limits: activeLimits)
            let split = run(randomSplits(input, &rng), limits: activeLimits)
            #expect(whole == bytewise, "iteration \(iteration)")
            #expect(whole == split, "iteration \(iteration)")
            checkInvariants(input, whole, limits: activeLimits)
            if !whole.requests.isEmpty { parsedSome += 1 }
        }
        // Mutations should still leave many requests parseable, otherwise the
        // fuzzer only exercises the first few bytes of the state machine.
        #expect(parsedSome > 200)
    }
}
