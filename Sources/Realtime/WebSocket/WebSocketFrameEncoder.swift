/// Builds server-to-client WebSocket frames (RFC 6455 §5.2).
///
/// Frames are never masked: RFC 6455 §5.1 says "A server MUST NOT mask any
/// frames that it sends to the client", and a client must fail the connection
/// if it sees one. RSV bits are always zero because no extension is
/// negotiated.
public enum WebSocketFrameEncoder {
    /// Largest payload of a control frame (RFC 6455 §5.5).
    public static let maxControlPayload = 125

    /// The frame header alone, for callers that write the payload from its
    /// own storage (e.g. with `writev`) to avoid copying it.
    ///
    /// The length uses the shortest of the 7-, 16- and 64-bit forms, as
    /// RFC 6455 §5.2 requires ("the minimal number of bytes MUST be used").
    public static func header(_ opcode: WebSocketOpcode, payloadLength: Int, fin: Bool = true) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(10)
        appendHeader(to: &out, opcode, payloadLength: payloadLength, fin: fin)
        return out
    }

    /// A complete frame. Control frames (RFC 6455 §5.5) must have `fin` set
    /// and at most 125 payload bytes; use ``ping(_:)``, ``pong(_:)`` and
    /// ``close(_:reason:)``, which enforce that.
    public static func frame(_ opcode: WebSocketOpcode, payload: some Collection<UInt8>, fin: Bool = true) -> [UInt8] {
        let count = payload.count
        assert(!opcode.isControl || (fin && count <= maxControlPayload), "invalid control frame")
        var out: [UInt8] = []
        out.reserveCapacity(count + 10)
        appendHeader(to: &out, opcode, payloadLength: count, fin: fin)
        out.append(contentsOf: payload)
        return out
    }

    /// A single-frame text message (RFC 6455 §5.6). A Swift `String` is
    /// always valid Unicode, so its UTF-8 view satisfies §8.1.
    public static func text(_ string: String) -> [UInt8] {
        frame(.text, payload: string.utf8)
    }

    /// A single-frame binary message (RFC 6455 §5.6).
    public static func binary(_ bytes: some Collection<UInt8>) -> [UInt8] {
        frame(.binary, payload: bytes)
    }

    /// A Close frame (RFC 6455 §5.5.1). With a nil code the payload is empty
    /// and `reason` is ignored, since a reason may only follow a code. The
    /// reason is cut at a character boundary so the payload stays within the
    /// 125-byte control-frame limit and remains valid UTF-8.
    public static func close(_ code: WebSocketCloseCode?, reason: String = "") -> [UInt8] {
        guard let code else {
            return frame(.close, payload: EmptyCollection<UInt8>())
        }
        var payload: [UInt8] = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        payload.append(contentsOf: truncatedUTF8(reason, maxBytes: maxControlPayload - 2))
        return frame(.close, payload: payload)
    }

    /// A Pong echoing a Ping's payload (RFC 6455 §5.5.3). Payloads over 125
    /// bytes are truncated rather than producing an invalid frame; a Ping the
    /// parser accepted never has one.
    public static func pong(_ payload: [UInt8]) -> [UInt8] {
        frame(.pong, payload: payload.prefix(maxControlPayload))
    }

    /// A Ping (RFC 6455 §5.5.2), e.g. as a keep-alive. Payloads over 125 bytes
    /// are truncated rather than producing an invalid frame.
    public static func ping(_ payload: [UInt8]) -> [UInt8] {
        frame(.ping, payload: payload.prefix(maxControlPayload))
    }

    private static func appendHeader(to out: inout [UInt8], _ opcode: WebSocketOpcode, payloadLength: Int, fin: Bool) {
        precondition(payloadLength >= 0, "negative payload length")
        out.append((fin ? 0x80 : 0) | opcode.rawValue)
        if payloadLength <= 125 {
            out.append(UInt8(payloadLength))
        } else if payloadLength <= 0xFFFF {
            out.append(126)
            out.append(UInt8(payloadLength >> 8))
            out.append(UInt8(payloadLength & 0xFF))
        } else {
            out.append(127)
            let length = UInt64(payloadLength)
            for shift in stride(from: 56, through: 0, by: -8) {
                out.append(UInt8(truncatingIfNeeded: length >> UInt64(shift)))
            }
        }
    }

    /// The longest prefix of `string`'s UTF-8 that fits `maxBytes` without
    /// splitting a multi-byte sequence.
    static func truncatedUTF8(_ string: String, maxBytes: Int) -> ArraySlice<UInt8> {
        let bytes = Array(string.utf8)
        guard bytes.count > maxBytes else { return bytes[...] }
        var end = maxBytes
        // bytes[end] is the first byte cut off; if it continues a sequence,
        // that sequence started before `end` and must go too.
        while end > 0 && bytes[end] & 0xC0 == 0x80 {
            end -= 1
        }
        return bytes[..<end]
    }
}
