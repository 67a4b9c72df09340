import Realtime

/// A fast path for the one body Herald decodes at fan-out rates: `POST /v1/publish` and
/// `/v1/publish/batch` (RT-4). Foundation's `JSONDecoder` building a `JSONValue` tree was 14-35 %
/// of the CPU of a personal-channel fan-out; this reads the body in one pass instead.
///
/// It runs only after `JSONSyntax.check` accepted the bytes, so it may assume valid JSON. It takes
/// every well-typed body — string `channel`, optional string `event`, any `data`, optional bool
/// `retain`, unknown keys ignored — and returns `.fallback` for anything else, so the `JSONDecoder`
/// path gives each type error its precise message. A key given twice is refused (`.duplicate`):
/// which copy would win is not something to leave to a decoder's whim.
///
/// `data` is carried as sent: only the whitespace between tokens is removed, so key order, number
/// spelling (a 30-digit integer stays exact) and string escapes reach subscribers unchanged.
enum PublishBodyScanner {
    /// One message as read: `data` is the value's text with the whitespace between tokens removed
    /// (so it fits one SSE `data:` line, RT-8a), key order and number spelling kept.
    struct Message {
        let channel: String
        let event: String?
        let data: String
        let retain: Bool?
    }

    /// What a scan found.
    enum Outcome<Value> {
        case value(Value)
        /// Not the expected shape: decode with `JSONDecoder` for a precise error.
        case fallback
        /// A key appears twice in one object (`field` names it, e.g. `messages[2].data`).
        case duplicate(field: String)
    }

    /// `{"channel", "event"?, "data", "retain"?}`.
    static func message(_ bytes: [UInt8]) -> Outcome<Message> {
        var i = skipSpace(bytes, 0)
        var duplicate: String?
        guard let message = object(bytes, &i, duplicate: &duplicate), skipSpace(bytes, i) == bytes.count else {
            return duplicate.map { .duplicate(field: $0) } ?? .fallback
        }
        return .value(message)
    }

    /// `{"messages": [message, …]}`.
    static func batch(_ bytes: [UInt8]) -> Outcome<[Message]> {
        var i = skipSpace(bytes, 0)
        var duplicate: String?
        guard let messages = messages(bytes, &i, duplicate: &duplicate) else {
            return duplicate.map { .duplicate(field: $0) } ?? .fallback
        }
        return .value(messages)
    }

    private static func messages(_ bytes: [UInt8], _ i: inout Int, duplicate: inout String?) -> [Message]? {
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { return nil }
        i = skipSpace(bytes, i + 1)
        guard let key = jsonString(bytes, &i), key == "messages" else { return nil }
        i = skipSpace(bytes, i)
        guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
        i = skipSpace(bytes, i + 1)
        guard i < bytes.count, bytes[i] == UInt8(ascii: "[") else { return nil }
        i = skipSpace(bytes, i + 1)
        var messages: [Message] = []
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") {
            i += 1
        } else {
            while true {
                guard let message = object(bytes, &i, duplicate: &duplicate) else {
                    if let field = duplicate { duplicate = "messages[\(messages.count)]." + field }
                    return nil
                }
                messages.append(message)
                i = skipSpace(bytes, i)
                guard i < bytes.count else { return nil }
                if bytes[i] == UInt8(ascii: ",") { i = skipSpace(bytes, i + 1); continue }
                guard bytes[i] == UInt8(ascii: "]") else { return nil }
                i += 1
                break
            }
        }
        i = skipSpace(bytes, i)
        guard i < bytes.count, bytes[i] == UInt8(ascii: "}"), skipSpace(bytes, i + 1) == bytes.count else { return nil }
        return messages
    }

    private static func object(_ b: [UInt8], _ i: inout Int, duplicate: inout String?) -> Message? {
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return nil }
        i = skipSpace(b, i + 1)
        var channel: String?, event: String?, data: String?, retain: Bool?
        if i < b.count, b[i] == UInt8(ascii: "}") { return nil }
        var seen: Set<String> = []
        while true {
            guard let key = jsonString(b, &i) else { return nil }
            guard seen.insert(key).inserted else {
                duplicate = key
                return nil
            }
            i = skipSpace(b, i)
            guard i < b.count, b[i] == UInt8(ascii: ":") else { return nil }
            i = skipSpace(b, i + 1)
            guard i < b.count else { return nil }
            switch key {
            case "channel":
                guard let value = jsonString(b, &i) else { return nil }
                channel = value
            case "event":
                if b[i] == UInt8(ascii: "n") {
                    guard skipLiteral(b, &i, "null") else { return nil }
                } else {
                    guard let value = jsonString(b, &i) else { return nil }
                    event = value
                }
            case "retain":
                if skipLiteral(b, &i, "true") { retain = true } else if skipLiteral(b, &i, "false") { retain = false } else { return nil }
            case "data":
                let start = i
                guard skipValue(b, &i) else { return nil }
                data = compact(b[start..<i])
            default:
                // Unknown keys are ignored, as the decoder does.
                guard skipValue(b, &i) else { return nil }
            }
            i = skipSpace(b, i)
            guard i < b.count else { return nil }
            if b[i] == UInt8(ascii: ",") { i = skipSpace(b, i + 1); continue }
            guard b[i] == UInt8(ascii: "}") else { return nil }
            i += 1
            break
        }
        guard let channel, let data else { return nil }
        return Message(channel: channel, event: event, data: data, retain: retain)
    }

    /// A JSON string, escapes decoded (`\uXXXX` with surrogate pairs); nil when not at a string.
    private static func jsonString(_ b: [UInt8], _ i: inout Int) -> String? {
        guard i < b.count, b[i] == UInt8(ascii: "\"") else { return nil }
        var j = i + 1
        var plain = true
        while j < b.count, b[j] != UInt8(ascii: "\"") {
            if b[j] == UInt8(ascii: "\\") { plain = false; j += 2 } else { j += 1 }
        }
        guard j < b.count else { return nil }
        defer { i = j + 1 }
        if plain { return String(decoding: b[(i + 1)..<j], as: UTF8.self) }
        var out: [UInt8] = []
        var k = i + 1
        while k < j {
            guard b[k] == UInt8(ascii: "\\") else { out.append(b[k]); k += 1; continue }
            let e = b[k + 1]
            k += 2
            switch e {
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "u"):
                guard var scalar = hex4(b, k) else { return nil }
                k += 4
                if (0xD800...0xDBFF).contains(scalar), k + 6 <= j, b[k] == UInt8(ascii: "\\"), b[k + 1] == UInt8(ascii: "u"),
                   let low = hex4(b, k + 2), (0xDC00...0xDFFF).contains(low) {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    k += 6
                }
                // A lone surrogate decodes to U+FFFD, as Foundation does.
                out.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar) ?? "\u{FFFD}")).utf8))
            default: out.append(e)   // \" \\ \/
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hex4(_ b: [UInt8], _ at: Int) -> UInt32? {
        guard at + 4 <= b.count else { return nil }
        var value: UInt32 = 0
        for c in b[at..<(at + 4)] {
            let digit: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
            default: return nil
            }
            value = value << 4 | digit
        }
        return value
    }

    private static func skipLiteral(_ b: [UInt8], _ i: inout Int, _ literal: StaticString) -> Bool {
        let n = literal.utf8CodeUnitCount
        guard i + n <= b.count else { return false }
        let matches = literal.withUTF8Buffer { word in (0..<n).allSatisfy { b[i + $0] == word[$0] } }
        if matches { i += n }
        return matches
    }

    /// Past one valid JSON value (strings, numbers, literals, nested arrays and objects).
    private static func skipValue(_ b: [UInt8], _ i: inout Int) -> Bool {
        var depth = 0
        var inString = false
        while i < b.count {
            let c = b[i]
            if inString {
                if c == UInt8(ascii: "\\") { i += 2; continue }
                if c == UInt8(ascii: "\"") {
                    inString = false
                    i += 1
                    if depth == 0 { return true }
                    continue
                }
                i += 1
                continue
            }
            switch c {
            case UInt8(ascii: "\""):
                inString = true
                i += 1
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                i += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard depth > 0 else { return true }   // the end of the enclosing container
                depth -= 1
                i += 1
                if depth == 0 { return true }
            case UInt8(ascii: ","):
                if depth == 0 { return true }
                i += 1
            case 0x20, 0x09, 0x0A, 0x0D:
                if depth == 0 { return true }
                i += 1
            default:
                i += 1
            }
        }
        return depth == 0 && !inString
    }

    /// The value's bytes without the whitespace between tokens (strings untouched).
    private static func compact(_ value: ArraySlice<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(value.count)
        var inString = false
        var escaped = false
        for c in value {
            if inString {
                out.append(c)
                if escaped { escaped = false } else if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch c {
            case 0x20, 0x09, 0x0A, 0x0D: continue
            case UInt8(ascii: "\""): inString = true; out.append(c)
            default: out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func skipSpace(_ b: [UInt8], _ from: Int) -> Int {
        var i = from
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
        return i
    }
}
