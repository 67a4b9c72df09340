import HeraldCore
/// A complete HTTP response to one request (status, headers, body), serialized by the connection.
public struct HTTPResponse: Sendable {
    /// The status code, e.g. 200.
    public var status: Int
    /// Headers besides `Content-Length` and `Connection`, which the connection sets itself.
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response; `json` must already be serialized JSON text.
    public static func json(_ status: Int, _ json: String) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: headers, body: Array(json.utf8))
    }

    /// The one error shape (DESIGN "Errors"): `{"error": code, "message": text}` plus `extra`
    /// string fields such as `"field"`.
    public static func error(_ status: Int, code: String, message: String, extra: [(String, String)] = []) -> HTTPResponse {
        var json = "{\"error\":\(JSONText.quote(code)),\"message\":\(JSONText.quote(message))"
        for (key, value) in extra { json += ",\(JSONText.quote(key)):\(JSONText.quote(value))" }
        json += "}"
        return .json(status, json)
    }

    /// An empty response (e.g. 204).
    public static func empty(_ status: Int) -> HTTPResponse {
        HTTPResponse(status: status)
    }

    /// The head bytes: status line, headers, `Content-Length`, `Connection`, blank line. Written
    /// as bytes, not as one interpolated `String` per line (issue 17: a tenth of the answer's cost).
    func serializedHead(keepAlive: Bool, versionMinor: Int, contentLength: Int?) -> [UInt8] {
        var head = JSONWriter(capacity: 160)
        head.raw("HTTP/1.1 ")
        head.number(status)
        head.raw(" ")
        head.embed(HTTPStatus.reason(status))
        head.raw("\r\n")
        for (name, value) in headers {
            head.embed(name)
            head.raw(": ")
            head.embed(value)
            head.raw("\r\n")
        }
        if let contentLength {
            head.raw("Content-Length: ")
            head.number(contentLength)
            head.raw("\r\n")
        }
        if !keepAlive {
            head.raw("Connection: close\r\n")
        } else if versionMinor == 0 {
            head.raw("Connection: keep-alive\r\n")
        }
        head.raw("\r\n")
        return head.bytes
    }
}

/// An error a route handler throws that knows its own response (Hummingbird's `HTTPResponseError`).
/// Any other error thrown from a route becomes a 500 `internal_error`.
public protocol HTTPResponseError: Error {
    var response: HTTPResponse { get }
}

/// A plain error response as a thrown value: `throw HTTPError(400, "invalid_request", "…")`.
public struct HTTPError: HTTPResponseError, Equatable, CustomStringConvertible {
    public let status: Int
    public let code: String
    public let message: String
    /// Extra string fields in the error object, e.g. `[("field", "channel")]`.
    public let extra: [String: String]
    /// Response headers, e.g. `Sec-WebSocket-Version` on a 426.
    public let headers: [(String, String)]

    public init(_ status: Int, _ code: String, _ message: String, field: String? = nil, extra: [String: String] = [:],
                headers: [(String, String)] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        var extra = extra
        if let field { extra["field"] = field }
        self.extra = extra
    }

    public var response: HTTPResponse {
        var response = HTTPResponse.error(status, code: code, message: message, extra: extra.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        for (name, value) in headers { response.headers.add(name: name, value: value) }
        return response
    }

    public static func == (lhs: HTTPError, rhs: HTTPError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message && lhs.extra == rhs.extra
    }

    public var description: String { "\(status) \(code): \(message)" }
}

/// Reason phrases (RFC 9110 §15).
public enum HTTPStatus {
    public static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        case 426: return "Upgrade Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 505: return "HTTP Version Not Supported"
        default: return "Status \(status)"
        }
    }
}
