/// The 4-bit opcode of a WebSocket frame (RFC 6455 §5.2, registry in §11.8).
///
/// A struct rather than an enum so that reserved values read off the wire can
/// still be represented and reported; the parser refuses them (§5.2: "If an
/// unknown opcode is received, the receiving endpoint MUST _Fail the
/// WebSocket Connection_").
public struct WebSocketOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The opcode value, 0x0–0xF.
    public let rawValue: UInt8

    /// Creates an opcode; nil when the value does not fit the 4-bit field of
    /// RFC 6455 §5.2, since the encoder would otherwise corrupt the FIN/RSV bits.
    public init?(rawValue: UInt8) {
        guard rawValue <= 0x0F else { return nil }
        self.rawValue = rawValue
    }

    private init(uncheckedRawValue: UInt8) {
        self.rawValue = uncheckedRawValue
    }

    /// 0x0: a continuation fragment of a text or binary message (RFC 6455 §5.4).
    public static let continuation = WebSocketOpcode(uncheckedRawValue: 0x0)
    /// 0x1: the first frame of a UTF-8 text message (RFC 6455 §5.6).
    public static let text = WebSocketOpcode(uncheckedRawValue: 0x1)
    /// 0x2: the first frame of a binary message (RFC 6455 §5.6).
    public static let binary = WebSocketOpcode(uncheckedRawValue: 0x2)
    /// 0x8: connection close (RFC 6455 §5.5.1).
    public static let close = WebSocketOpcode(uncheckedRawValue: 0x8)
    /// 0x9: ping (RFC 6455 §5.5.2).
    public static let ping = WebSocketOpcode(uncheckedRawValue: 0x9)
    /// 0xA: pong (RFC 6455 §5.5.3).
    public static let pong = WebSocketOpcode(uncheckedRawValue: 0xA)

    /// True for close, ping, pong and the reserved 0xB–0xF: RFC 6455 §5.5
    /// defines control frames as those whose opcode has the high bit set, and
    /// they carry the FIN and 125-byte payload restrictions.
    public var isControl: Bool { rawValue & 0x08 != 0 }

    /// True for 0x3–0x7 and 0xB–0xF, which RFC 6455 §5.2 reserves for future
    /// non-control and control frames; receiving one fails the connection.
    public var isReserved: Bool {
        switch rawValue {
        case 0x0, 0x1, 0x2, 0x8, 0x9, 0xA: return false
        default: return true
        }
    }

    /// The RFC 6455 §11.8 name, or the hex value for a reserved opcode.
    public var description: String {
        switch rawValue {
        case 0x0: return "continuation"
        case 0x1: return "text"
        case 0x2: return "binary"
        case 0x8: return "close"
        case 0x9: return "ping"
        case 0xA: return "pong"
        default: return "reserved(0x\(String(rawValue, radix: 16, uppercase: true)))"
        }
    }
}
