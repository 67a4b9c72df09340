/// The status code carried in the first two bytes of a Close frame's payload
/// (RFC 6455 §5.5.1, §7.4).
///
/// A struct over the raw value rather than an enum because applications may
/// use any code in 3000–4999 (§7.4.2), and a received code must be
/// representable before it can be judged with ``isValidOnWire(_:)``.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric status code in host byte order.
    public let rawValue: UInt16

    /// Wraps any value; whether it may be sent is a separate question answered
    /// by ``isValidOnWire(_:)``.
    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// 1000: the purpose of the connection has been fulfilled (RFC 6455 §7.4.1).
    public static let normal = WebSocketCloseCode(rawValue: 1000)
    /// 1001: the endpoint is going away, e.g. server shutdown (RFC 6455 §7.4.1).
    public static let goingAway = WebSocketCloseCode(rawValue: 1001)
    /// 1002: the peer violated the framing protocol (RFC 6455 §7.4.1).
    public static let protocolError = WebSocketCloseCode(rawValue: 1002)
    /// 1003: a data type the endpoint cannot accept, e.g. binary on a
    /// text-only endpoint (RFC 6455 §7.4.1).
    public static let unsupportedData = WebSocketCloseCode(rawValue: 1003)
    /// 1007: a text message (or close reason) was not valid UTF-8
    /// (RFC 6455 §7.4.1, §8.1).
    public static let invalidPayload = WebSocketCloseCode(rawValue: 1007)
    /// 1008: a generic policy violation when no more specific code fits
    /// (RFC 6455 §7.4.1).
    public static let policyViolation = WebSocketCloseCode(rawValue: 1008)
    /// 1009: a message too big to process (RFC 6455 §7.4.1).
    public static let messageTooBig = WebSocketCloseCode(rawValue: 1009)
    /// 1010: sent only by a client whose required extension the server did not
    /// negotiate (RFC 6455 §7.4.1); a server never sends it.
    public static let mandatoryExtension = WebSocketCloseCode(rawValue: 1010)
    /// 1011: an unexpected condition on the server (RFC 6455 §7.4.1, as
    /// amended by the IANA registry of §11.7).
    public static let internalError = WebSocketCloseCode(rawValue: 1011)
    /// 1012: the service is restarting (IANA WebSocket Close Code registry,
    /// RFC 6455 §11.7).
    public static let serviceRestart = WebSocketCloseCode(rawValue: 1012)
    /// 1013: temporary overload; the client should retry later (IANA registry,
    /// RFC 6455 §11.7).
    public static let tryAgainLater = WebSocketCloseCode(rawValue: 1013)

    /// Whether `code` may appear in a Close frame on the wire.
    ///
    /// RFC 6455 §7.4.1 defines 1000–1003 and 1007–1011; 1012–1014 were later
    /// registered with IANA (§11.7) and are accepted because real servers send
    /// them. 1004 is reserved, and 1005, 1006 and 1015 are reserved for local
    /// reporting only ("MUST NOT be set as a status code in a Close control
    /// frame"). Everything below 1000 is unused, 1016–2999 is reserved for
    /// future protocol revisions, 3000–4999 belongs to libraries and
    /// applications (§7.4.2), and nothing at or above 5000 is defined.
    public static func isValidOnWire(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    /// Instance form of ``isValidOnWire(_:)``.
    public var isValidOnWire: Bool { Self.isValidOnWire(rawValue) }

    /// The decimal value, as it appears in logs and RFC text.
    public var description: String { String(rawValue) }
}
