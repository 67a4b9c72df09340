/// JSON text grown as UTF-8 bytes and made a `String` once, at the end.
///
/// Issue 17: appending to a `String` costs a few hundred instructions a piece (uniqueness,
/// capacity and small-string checks on every `+=`), and the choke point's texts (the stored plan,
/// the 201 body, the row's texts and data) were built from about a hundred such appends per
/// notification; appending to a byte array costs a tenth of that. The output is exactly what
/// `JSONText` writes (same escapes, keys sorted the same way).
public struct JSONWriter {
    /// The text so far, UTF-8.
    public private(set) var bytes: [UInt8]

    /// - Parameter capacity: bytes reserved up front (the text may grow beyond it).
    public init(capacity: Int = 128) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// The text written, as a `String`.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends `literal` as it is (JSON punctuation, keys with their quotes and colon).
    public mutating func raw(_ literal: StaticString) {
        literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends `text` as it is: text that is already JSON (a nested object, an event id).
    /// (Not an overload of `raw`: a literal would pick `String`, the default literal type.)
    public mutating func embed(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Appends what `other` wrote.
    public mutating func append(_ other: JSONWriter) {
        bytes.append(contentsOf: other.bytes)
    }

    /// Makes room for `count` more bytes at once.
    public mutating func reserve(_ count: Int) {
        bytes.reserveCapacity(bytes.count + count)
    }

    /// Appends `value` in decimal.
    public mutating func number(_ value: Int64) {
        if value == 0 {
            bytes.append(UInt8(ascii: "0"))
            return
        }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // Magnitude as UInt64, so Int64.min has one too.
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes: UInt64.max has 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            while magnitude > 0 {
                buffer[31 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            }
            bytes.append(contentsOf: buffer[(32 - count)...])
        }
    }

    /// Appends `value` in decimal.
    public mutating func number(_ value: Int) { number(Int64(value)) }

    /// Appends `true` or `false`.
    public mutating func bool(_ value: Bool) { if value { raw("true") } else { raw("false") } }

    /// Appends `value` as a JSON string literal, quotes included, escaped as `JSONText.quote`
    /// escapes it (RFC 8259 §7; U+2028 and U+2029 too).
    public mutating func quoted(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        // One look at the bytes decides, and the same bytes are copied.
        value.withUTF8 { utf8 in
            if JSONText.needsEscaping(utf8) {
                escape(utf8)
            } else {
                bytes.append(contentsOf: utf8)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends `value` quoted as it is when it needs no escape under the stricter rule of
    /// Herald's stored job payloads (`PayloadScanner.isPlain`: no control character, quote or
    /// backslash, and no lead byte 0xE2, where encoders differ on U+2028/2029).
    /// - Returns: false, and nothing appended, when it would need one (the caller then leaves the
    ///   text to `JSONEncoder`).
    public mutating func plainQuoted(_ value: String) -> Bool {
        var value = value
        // One pass decides, and the same bytes are copied (issue 17: the payload of every push).
        return value.withUTF8 { utf8 in
            // Every byte judged without a branch, the verdict taken after the loop (issue 17:
            // stopping at the first byte that needs escaping cost 1.45k instructions a push over
            // a push's ids, this 0.78k), and such a byte is rare.
            var needsEscaping: UInt8 = 0
            for byte in utf8 {
                let control: UInt8 = byte < 0x20 ? 1 : 0
                let quote: UInt8 = byte == UInt8(ascii: "\"") ? 1 : 0
                let backslash: UInt8 = byte == UInt8(ascii: "\\") ? 1 : 0
                let separator: UInt8 = byte == 0xE2 ? 1 : 0
                needsEscaping |= control | quote | backslash | separator
            }
            if needsEscaping != 0 { return false }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: utf8)
            bytes.append(UInt8(ascii: "\""))
            return true
        }
    }

    /// Appends `value` quoted, or `null`.
    public mutating func quotedOrNull(_ value: String?) {
        if let value { quoted(value) } else { raw("null") }
    }

    /// Appends a JSON object of string values, keys sorted (`JSONText.object`'s text).
    public mutating func object(_ values: [String: String]) {
        if values.isEmpty {
            raw("{}")
            return
        }
        bytes.append(UInt8(ascii: "{"))
        if values.count == 1, let (key, value) = values.first {
            quoted(key)
            bytes.append(UInt8(ascii: ":"))
            quoted(value)
        } else {
            for (index, entry) in values.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                quoted(entry.key)
                bytes.append(UInt8(ascii: ":"))
                quoted(entry.value)
            }
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// The slow path of `quoted`: byte by byte (valid UTF-8, so a multi-byte character's bytes
    /// are all ≥ 0x80 and only U+2028/U+2029 among them are escaped).
    private mutating func escape(_ utf8: UnsafeBufferPointer<UInt8>) {
        let hex: StaticString = "0123456789abcdef"
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            switch byte {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case UInt8(ascii: "\n"): raw("\\n")
            case UInt8(ascii: "\r"): raw("\\r")
            case UInt8(ascii: "\t"): raw("\\t")
            case 0xE2 where index + 2 < utf8.count && utf8[index + 1] == 0x80 && (utf8[index + 2] == 0xA8 || utf8[index + 2] == 0xA9):
                if utf8[index + 2] == 0xA8 { raw("\\u2028") } else { raw("\\u2029") }
                index += 3
                continue
            case ..<0x20:
                raw("\\u00")
                hex.withUTF8Buffer { digits in
                    bytes.append(digits[Int(byte >> 4)])
                    bytes.append(digits[Int(byte & 0x0f)])
                }
            default:
                bytes.append(byte)
            }
            index += 1
        }
    }
}
