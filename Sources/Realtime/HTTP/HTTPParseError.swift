/// Why a request could not be parsed, mapped to the response the server should
/// send before closing the connection.
///
/// Every case is terminal: once ``HTTPRequestParser/next()`` has thrown one,
/// the byte stream can no longer be framed reliably (RFC 9112 §11.2 warns that
/// guessing here enables request smuggling), so the connection must be closed
/// after the error response.
public enum HTTPParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// 400 Bad Request. The associated text is a short, client-safe reason.
    case badRequest(String)
    /// 431 Request Header Fields Too Large: request line plus header section
    /// (or a trailer section) exceeded the configured byte or field-count limit.
    case headerTooLarge
    /// 413 Content Too Large: the declared or accumulated body exceeds the
    /// configured limit (RFC 9110 §15.5.14).
    case payloadTooLarge
    /// 501 Not Implemented: a transfer coding other than `chunked` was applied
    /// (RFC 9112 §6.1). The associated text names the coding.
    case notImplemented(String)
    /// 505 HTTP Version Not Supported: a request line naming a major version other
    /// than 1 (`HTTP/2.0`, `HTTP/0.9`; RFC 9110 §15.6.6). A line with no version
    /// at all is `badRequest`.
    case versionNotSupported
    /// 417 Expectation Failed: an `Expect` member other than `100-continue`, the only
    /// expectation defined (RFC 9110 §10.1.1): the client waits for something no answer gives.
    case expectationFailed

    /// The HTTP status code to answer with.
    public var status: Int {
        switch self {
        case .badRequest: return 400
        case .headerTooLarge: return 431
        case .payloadTooLarge: return 413
        case .notImplemented: return 501
        case .versionNotSupported: return 505
        case .expectationFailed: return 417
        }
    }

    /// A stable machine-readable identifier for error bodies and metrics.
    public var code: String {
        switch self {
        case .badRequest: return "bad_request"
        case .headerTooLarge: return "header_too_large"
        case .payloadTooLarge: return "payload_too_large"
        case .notImplemented: return "not_implemented"
        case .versionNotSupported: return "http_version_not_supported"
        case .expectationFailed: return "expectation_failed"
        }
    }

    /// Human-readable explanation, safe to echo to the client (it never
    /// contains request bytes other than a transfer-coding token).
    public var message: String {
        switch self {
        case .badRequest(let reason): return reason
        case .headerTooLarge: return "request header fields too large"
        case .payloadTooLarge: return "request body too large"
        case .notImplemented(let reason): return reason
        case .versionNotSupported: return "HTTP version not supported"
        case .expectationFailed: return "the only expectation this server meets is Expect: 100-continue"
        }
    }

    public var description: String { "\(status) \(code): \(message)" }
}
