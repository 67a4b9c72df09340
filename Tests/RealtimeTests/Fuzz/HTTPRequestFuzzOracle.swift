import FuzzSupport
@testable import Realtime

/// The invariants the HTTP/1.1 request parser must keep on any bytes, shared by the seeded loop
/// (`RealtimeFuzzTests`) and the libFuzzer harness (`scripts/fuzz http-request`):
/// - it returns or throws, never traps, and returns at most one request per input byte;
/// - the outcome (requests, then the error or "needs more") is the same whether the bytes come
///   at once or in random pieces;
/// - every request honours the limits (body, field count) and the grammar (token method,
///   visible-ASCII target);
/// - a request written back in canonical form (`Content-Length` framing) parses to the same
///   request: what we accepted means one thing.
enum HTTPRequestFuzzOracle {
    /// Small limits, so mutants reach the limit checks.
    static let limits = HTTPRequestParser.Limits(maxHeadBytes: 1024, maxBodyBytes: 512, maxHeaderCount: 16, maxChunkLineBytes: 64)

    struct Outcome: Equatable {
        var requests: [HTTPRequest] = []
        var error: HTTPParseError?
        var idle = true
    }

    static func run(_ chunks: [[UInt8]], limits: HTTPRequestParser.Limits = limits) -> Outcome {
        var parser = HTTPRequestParser(limits: limits)
        var outcome = Outcome()
        for chunk in chunks {
            parser.append(chunk)
            do {
                while let request = try parser.next() {
                    outcome.requests.append(request)
                }
            } catch {
                outcome.error = error
                outcome.idle = false
                return outcome
            }
        }
        outcome.idle = parser.isIdle
        return outcome
    }

    static func check(_ input: [UInt8]) -> (failure: String?, keep: Bool) {
        let whole = run([input])
        if whole.requests.count > input.count {
            return ("\(whole.requests.count) requests from \(input.count) bytes", false)
        }
        var rng = FuzzRandom(hashing: input)
        for maxPiece in [1, 7, 64] where maxPiece > 1 || input.count <= 512 {
            let pieces = run(fuzzChunks(input, maxPiece: maxPiece, using: &rng))
            if pieces != whole {
                return ("pieces of ≤ \(maxPiece) bytes: \(describe(pieces)); at once: \(describe(whole))", false)
            }
        }
        for request in whole.requests {
            if let failure = checkRequest(request) { return (failure, false) }
        }
        return (nil, !whole.requests.isEmpty || whole.error == nil)
    }

    private static func checkRequest(_ request: HTTPRequest) -> String? {
        guard request.body.count <= limits.maxBodyBytes else { return "body of \(request.body.count) bytes over the limit" }
        guard request.headers.count <= limits.maxHeaderCount else { return "\(request.headers.count) fields over the limit" }
        guard !request.method.rawValue.isEmpty, request.method.rawValue.utf8.allSatisfy(HTTPBytes.isTokenChar) else {
            return "method \(request.method) is not a token"
        }
        guard !request.target.isEmpty, request.target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x23 }) else {
            return "target \(request.target.debugDescription) is not visible ASCII"
        }
        guard request.versionMinor == 0 || request.versionMinor == 1 else { return "version 1.\(request.versionMinor)" }
        let again = run([canonical(request)], limits: .init())
        guard again.error == nil, again.requests.count == 1 else {
            return "canonical form of \(request) does not parse back: \(describe(again))"
        }
        let back = again.requests[0]
        guard back.method == request.method, back.target == request.target, back.path == request.path,
              back.query == request.query, back.versionMinor == request.versionMinor, back.body == request.body,
              back.keepAlive == request.keepAlive,
              sameFields(withoutFraming(back.headers), withoutFraming(request.headers)) else {
            return "canonical form parses to \(back), not \(request)"
        }
        return nil
    }

    /// The request with `Content-Length` framing and no `Transfer-Encoding`.
    static func canonical(_ request: HTTPRequest) -> [UInt8] {
        var out = "\(request.method.rawValue) \(request.target) HTTP/1.\(request.versionMinor)\r\n"
        for field in withoutFraming(request.headers) {
            out += "\(field.name): \(field.value)\r\n"
        }
        if !request.body.isEmpty { out += "Content-Length: \(request.body.count)\r\n" }
        out += "\r\n"
        return Array(out.utf8) + request.body
    }

    private static func withoutFraming(_ headers: HTTPHeaders) -> [HTTPHeaders.Element] {
        headers.filter { !HTTPHeaders.namesEqual($0.name, "content-length") && !HTTPHeaders.namesEqual($0.name, "transfer-encoding") }
    }

    private static func sameFields(_ lhs: [HTTPHeaders.Element], _ rhs: [HTTPHeaders.Element]) -> Bool {
        lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }

    private static func describe(_ outcome: Outcome) -> String {
        "\(outcome.requests.count) requests \(outcome.requests.map { "\($0.method) \($0.target) body \($0.body.count)" }), "
            + (outcome.error.map { "error \($0)" } ?? (outcome.idle ? "idle" : "waiting for more"))
    }
}
