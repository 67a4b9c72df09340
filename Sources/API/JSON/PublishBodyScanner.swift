import Realtime

/// A fast path for the one body Herald decodes at fan-out rates: `POST /v1/publish` and
/// `/v1/publish/batch` (RT-4). Foundation's `JSONDecoder` building a `JSONValue` tree was 14-35 %
/// of the CPU of a personal-channel fan-out; this reads the body in one pass instead.
///
/// It runs only after `JSONSyntax.check` accepted the bytes, so it may assume valid JSON. It takes
/// every well-typed body — string `channel`, optional string `event`, any `data`, optional bool
/// `retain` — refuses any other member as it meets it (`.unknown`), and returns `.fallback` for
/// anything else, so the `JSONDecoder`
/// path gives each type error its precise message. A key given twice is refused (`.duplicate`):
/// which copy would win is not something to leave to a decoder's whim. (`RequestBody.check`
/// already refuses a key twice anywhere in the body, `data` included, comparing keys decoded;
/// this is the backstop that names the field.)
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
        /// A member the message does not have (`key`, in the object at `path`: "" or `messages[2]`).
        case unknown(key: String, path: String)
    }

    /// `{"channel", "event"?, "data", "retain"?}`.
    static func message(_ bytes: [UInt8]) -> Outcome<Message> {
        var i = JSONScanner.skipSpace(bytes, 0)
        var duplicate: String?, unknown: String?
        guard let message = object(bytes, &i, duplicate: &duplicate, unknown: &unknown), JSONScanner.skipSpace(bytes, i) == bytes.count else {
            if let unknown { return .unknown(key: unknown, path: "") }
            return duplicate.map { .duplicate(field: $0) } ?? .fallback
        }
        return .value(message)
    }

    /// `{"messages": [message, …]}`.
    static func batch(_ bytes: [UInt8]) -> Outcome<[Message]> {
        var i = JSONScanner.skipSpace(bytes, 0)
        var duplicate: String?, unknown: (key: String, path: String)?
        guard let messages = messages(bytes, &i, duplicate: &duplicate, unknown: &unknown) else {
            if let unknown { return .unknown(key: unknown.key, path: unknown.path) }
            return duplicate.map { .duplicate(field: $0) } ?? .fallback
        }
        return .value(messages)
    }

    private static func messages(_ bytes: [UInt8], _ i: inout Int, duplicate: inout String?,
                                 unknown: inout (key: String, path: String)?) -> [Message]? {
        guard i < bytes.count, bytes[i] == UInt8(ascii: "{") else { return nil }
        i = JSONScanner.skipSpace(bytes, i + 1)
        guard let key = JSONScanner.jsonString(bytes, &i), key == "messages" else { return nil }
        i = JSONScanner.skipSpace(bytes, i)
        guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
        i = JSONScanner.skipSpace(bytes, i + 1)
        var messages: [Message] = []
        let read = JSONScanner.array(bytes, &i) { i in
            var stray: String?
            guard let message = object(bytes, &i, duplicate: &duplicate, unknown: &stray) else {
                if let field = duplicate { duplicate = "messages[\(messages.count)]." + field }
                if let stray { unknown = (stray, "messages[\(messages.count)]") }
                return false
            }
            messages.append(message)
            return true
        }
        guard read else { return nil }
        i = JSONScanner.skipSpace(bytes, i)
        guard i < bytes.count, bytes[i] == UInt8(ascii: "}"), JSONScanner.skipSpace(bytes, i + 1) == bytes.count else { return nil }
        return messages
    }

    private static func object(_ b: [UInt8], _ i: inout Int, duplicate: inout String?, unknown: inout String?) -> Message? {
        var channel: String?, event: String?, data: String?, retain: Bool?
        var seen: Set<String> = []
        var found: String?
        let read = JSONScanner.object(b, &i) { key, i in
            guard seen.insert(key).inserted else {
                found = key
                return false
            }
            guard i < b.count else { return false }
            switch key {
            case "channel":
                guard let value = JSONScanner.jsonString(b, &i) else { return false }
                channel = value
            case "event":
                if b[i] == UInt8(ascii: "n") {
                    guard JSONScanner.skipLiteral(b, &i, "null") else { return false }
                } else {
                    guard let value = JSONScanner.jsonString(b, &i) else { return false }
                    event = value
                }
            case "retain":
                if JSONScanner.skipLiteral(b, &i, "true") { retain = true } else if JSONScanner.skipLiteral(b, &i, "false") { retain = false } else { return false }
            case "data":
                let start = i
                guard JSONScanner.skipValue(b, &i) else { return false }
                data = JSONScanner.compact(b[start..<i])
            default:
                unknown = key
                return false
            }
            return true
        }
        if let found { duplicate = found }
        guard read else { return nil }
        guard let channel, let data else { return nil }
        return Message(channel: channel, event: event, data: data, retain: retain)
    }
}
