/// A JSON value written deterministically: compact, object keys sorted by their UTF-8 bytes, `/`
/// never escaped, non-ASCII written as UTF-8. The same value always gives the same bytes, so
/// tests compare payloads byte for byte and payload sizes are exact before sending.
///
/// Only what push payloads and JWTs need: no floating point (APNs `relevance-score` is not used),
/// integers are `Int64`.
public enum PushJSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case string(String)
    case array([PushJSON])
    case object([String: PushJSON])

    /// Compact UTF-8 bytes of this value (RFC 8259).
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        write(to: &out)
        return out
    }

    /// Compact JSON text of this value.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    private func write(to out: inout [UInt8]) {
        switch self {
        case .null: out += Array("null".utf8)
        case .bool(let value): out += Array((value ? "true" : "false").utf8)
        case .int(let value): out += Array(String(value).utf8)
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, value) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            // Byte-wise order, not `String <`, so the order never depends on Unicode normalization.
            let keys = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            for (index, key) in keys.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                members[key]!.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `value` as a JSON string literal to `out`, the bytes `PushJSON.string(value).bytes`
    /// would be, without building them apart (a device token spliced into a cached body).
    package static func append(string value: String, to out: inout [UInt8]) {
        writeString(value, to: &out)
    }

    /// A JSON string literal (RFC 8259 §7): `"`, `\` and control characters escaped, the rest raw.
    private static func writeString(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Most strings (tokens, ids, plain texts) need no escape: copied at once, not byte by byte.
        let copied = value.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied == true {
            out.append(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out += Array("\\u00".utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

extension PushJSON {
    /// A JSON object of string values, e.g. FCM `data` or the APNs custom keys.
    package static func strings(_ values: [String: String]) -> PushJSON {
        .object(values.mapValues { .string($0) })
    }
}
