/// Writing JSON text by hand on hot paths (SSE envelopes, `ready`), where building a Foundation
/// object graph per event would cost more than the event itself.
public enum JSONText {
    /// `value` as a JSON string literal, quotes included (RFC 8259 §7): `"`, `\` and every
    /// control character are escaped, so the result never holds a raw CR or LF.
    public static func quote(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count + 2)
        appendQuoted(value, to: &out)
        return out
    }

    /// Appends `quote(value)` to `out` without making the quoted text on its own.
    public static func appendQuoted(_ value: String, to out: inout String) {
        out += "\""
        if needsEscaping(value) {
            appendEscaped(value, to: &out)
        } else {
            out += value
        }
        out += "\""
    }

    /// Whether some byte of `value` may need an escape: a control character, `"`, `\`, or the
    /// lead byte 0xE2 that U+2028 and U+2029 start with (a few other characters share it; they
    /// just take the slow path). Most texts have none and are copied whole.
    /// A loop over the contiguous bytes: `utf8.contains(where:)` went through the generic
    /// iterator, 2 % of the choke point's instructions (issue 17).
    static func needsEscaping(_ value: String) -> Bool {
        var value = value
        return value.withUTF8(needsEscaping)
    }

    /// `needsEscaping` over UTF-8 bytes already at hand.
    static func needsEscaping(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0xE2 {
            return true
        }
        return false
    }

    private static func appendEscaped(_ value: String, to out: inout String) {
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
    }

    /// `{"key":"value"}`, or nil when either needs an escape.
    private static func plainEntry(_ key: String, _ value: String) -> String? {
        var key = key, value = value
        return key.withUTF8 { k in
            value.withUTF8 { v -> String? in
                guard !needsEscaping(k), !needsEscaping(v) else { return nil }
                return String(unsafeUninitializedCapacity: k.count + v.count + 7) { out in
                    out[0] = UInt8(ascii: "{")
                    out[1] = UInt8(ascii: "\"")
                    _ = UnsafeMutableBufferPointer(rebasing: out[2...]).initialize(from: k)
                    var at = 2 + k.count
                    out[at] = UInt8(ascii: "\"")
                    out[at + 1] = UInt8(ascii: ":")
                    out[at + 2] = UInt8(ascii: "\"")
                    at += 3
                    _ = UnsafeMutableBufferPointer(rebasing: out[at...]).initialize(from: v)
                    at += v.count
                    out[at] = UInt8(ascii: "\"")
                    out[at + 1] = UInt8(ascii: "}")
                    return at + 2
                }
            }
        }
    }

    /// A JSON array of strings.
    public static func array(_ values: [String]) -> String {
        var out = "["
        for (index, value) in values.enumerated() {
            if index > 0 { out += "," }
            appendQuoted(value, to: &out)
        }
        out += "]"
        return out
    }

    /// A JSON object of string values, keys sorted (so the text is stable): `{"a":"1","b":"2"}`.
    public static func object(_ values: [String: String]) -> String {
        if values.isEmpty { return "{}" }
        // One entry needing no escape (a single title or body, the usual call's data): its text in
        // one allocation, without a writer's (~1,000 instructions less an object, issue 17).
        if values.count == 1, let (key, value) = values.first, let text = plainEntry(key, value) { return text }
        var writer = JSONWriter(capacity: 64)
        writer.object(values)
        return writer.text
    }
}
