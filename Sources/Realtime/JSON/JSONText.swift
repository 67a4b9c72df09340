/// Writing JSON text by hand on hot paths (SSE envelopes, `ready`), where building a Foundation
/// object graph per event would cost more than the event itself.
public enum JSONText {
    /// `value` as a JSON string literal, quotes included (RFC 8259 §7): `"`, `\` and every
    /// control character are escaped, so the result never holds a raw CR or LF.
    public static func quote(_ value: String) -> String {
        var out = "\""
        out.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
        return out
    }

    /// A JSON array of strings.
    public static func array(_ values: [String]) -> String {
        "[" + values.map(quote).joined(separator: ",") + "]"
    }

    /// A JSON object of string values, keys sorted (so the text is stable): `{"a":"1","b":"2"}`.
    public static func object(_ values: [String: String]) -> String {
        "{" + values.sorted { $0.key < $1.key }.map { quote($0.key) + ":" + quote($0.value) }.joined(separator: ",") + "}"
    }
}
