/// An HTTP request method (RFC 9110 §9).
///
/// Methods are case-sensitive tokens, so `"get"` and `"GET"` are different
/// methods; the parser never normalises case. Any token is representable, which
/// lets a router answer 405/501 for methods it does not know instead of the
/// parser rejecting them.
public struct HTTPMethod: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The method token exactly as received, e.g. `"GET"`.
    public let rawValue: String

    /// Wraps a method token. No validation happens here; the parser only
    /// produces methods that are valid tokens (RFC 9110 §5.6.2).
    public init(_ raw: String) {
        self.rawValue = raw
    }

    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    public var description: String { rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let delete = HTTPMethod("DELETE")
    public static let options = HTTPMethod("OPTIONS")
    public static let patch = HTTPMethod("PATCH")
    public static let connect = HTTPMethod("CONNECT")
    public static let trace = HTTPMethod("TRACE")
}
