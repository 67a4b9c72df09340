import Foundation
import FuzzSupport
@testable import API

/// The strict JSON checker against Foundation's `JSONSerialization` (docs/conformance.md
/// "Fuzzing"), shared by `APIFuzzTests` and `scripts/fuzz json-syntax`:
/// - what `JSONSyntax.check` accepts, Foundation accepts, and it nests within the limit;
/// - what Foundation accepts and the check refuses is one of the documented strict-subset cases
///   (RFC 8259 §7/§8.1 and the nesting bound): a trailing comma, bytes that are not UTF-8, a lone
///   surrogate escape, a leading byte order mark, zero bytes Foundation reads as UTF-16/32,
///   nesting past the limit, a number beyond a double that a later duplicate key hid from
///   Foundation;
/// - with duplicate keys refused, an accepted body has as many keys as `JSONDecoder` reads (no two
///   keys it would merge), and a refused one really has fewer in its reading.
enum JSONSyntaxFuzzOracle {
    static let maxDepth = 16

    static func check(_ input: [UInt8]) -> (failure: String?, keep: Bool) {
        let ours = JSONSyntax.check(input, maxDepth: maxDepth)
        let foundation = try? JSONSerialization.jsonObject(with: Data(input), options: [.fragmentsAllowed])
        switch (ours, foundation) {
        case (nil, nil):
            return ("the check accepts what Foundation refuses", false)
        case (nil, let value?):
            guard depth(value) <= maxDepth else { return ("accepted nesting \(depth(value)) deep, over \(maxDepth)", false) }
            // Keys as `JSONDecoder` (which Herald decodes bodies with) reads them: `JSONSerialization`
            // also drops a raw U+FEFF at the start of a string, so it merges `"\u{FEFF}a"` into `"a"`
            // where the decoder keeps both.
            guard let decoded = try? JSONDecoder().decode(JSONValue.self, from: Data(input)) else {
                return ("the check and JSONSerialization accept what JSONDecoder refuses", false)
            }
            let keys = keyCount(decoded)
            let tokens = keyTokens(input)
            switch JSONSyntax.check(input, maxDepth: maxDepth, rejectDuplicateKeys: true) {
            case nil where tokens != keys:
                return ("duplicate keys slipped through: \(tokens) keys written, JSONDecoder reads \(keys)", false)
            case .duplicateKey(_, let key)? where tokens == keys:
                return ("refused \(key.debugDescription) as a duplicate, yet JSONDecoder reads every key apart", false)
            case .invalid?, .tooDeep?:
                return ("refused with duplicates checked, accepted without", false)
            default:
                return (nil, true)
            }
        case (let refusal?, let value?):
            if let reason = documentedDeviation(input, refusal, foundation: value) { _ = reason; return (nil, true) }
            return ("Foundation accepts what the check refuses (\(refusal)) for no documented reason", false)
        case (_?, nil):
            return (nil, false)
        }
    }

    /// Which documented strictness explains a refusal Foundation does not share; nil for none.
    static func documentedDeviation(_ input: [UInt8], _ refusal: JSONSyntax.Failure, foundation value: Any) -> String? {
        if case .tooDeep = refusal { return "nesting" }
        // Foundation converts a member's number only if a later duplicate of its key does not
        // replace it first; a body naming a key twice is refused anyway (`RequestBody.check`).
        if case .numberOutOfRange = refusal, keyTokens(input) != keyCount(value) { return "out-of-range number under a duplicate key" }
        // RFC 8259 §8.1: senders MUST NOT add a byte order mark; parsers MAY ignore one (Foundation does).
        if input.starts(with: [0xEF, 0xBB, 0xBF]) { return "byte order mark" }
        // Foundation guesses UTF-16 or UTF-32 from zero bytes among the first four (RFC 4627 §3);
        // RFC 8259 §8.1 makes JSON between systems UTF-8, where a NUL is never valid JSON.
        if input.prefix(4).contains(0) { return "UTF-16/32 guess" }
        if String(validating: input, as: UTF8.self) == nil { return "not UTF-8" }
        if hasLoneSurrogateEscape(input) { return "lone surrogate" }
        if case .invalid(let offset) = refusal, offset < input.count, input[offset] == UInt8(ascii: "]") || input[offset] == UInt8(ascii: "}") {
            var before = offset - 1
            while before >= 0, [0x20, 0x09, 0x0A, 0x0D].contains(input[before]) { before -= 1 }
            if before >= 0, input[before] == UInt8(ascii: ",") { return "trailing comma" }
        }
        return nil
    }

    /// A `\uD800`–`\uDFFF` escape not in a high-low pair.
    static func hasLoneSurrogateEscape(_ b: [UInt8]) -> Bool {
        func unit(_ at: Int) -> UInt32? {
            guard at + 6 <= b.count, b[at] == UInt8(ascii: "\\"), b[at + 1] == UInt8(ascii: "u") else { return nil }
            return UInt32(String(decoding: b[(at + 2)..<(at + 6)], as: UTF8.self), radix: 16)
        }
        var i = 0
        while i < b.count {
            if b[i] == UInt8(ascii: "\\"), i + 1 < b.count, b[i + 1] != UInt8(ascii: "u") { i += 2; continue }
            if let u = unit(i) {
                if (0xDC00...0xDFFF).contains(u) { return true }
                if (0xD800...0xDBFF).contains(u) {
                    guard let low = unit(i + 6), (0xDC00...0xDFFF).contains(low) else { return true }
                    i += 12
                    continue
                }
                i += 6
                continue
            }
            i += 1
        }
        return false
    }

    /// Keys in `JSONDecoder`'s reading, all objects together.
    static func keyCount(_ value: JSONValue) -> Int {
        switch value {
        case .object(let pairs): return pairs.count + pairs.reduce(0) { $0 + keyCount($1.1) }
        case .array(let values): return values.reduce(0) { $0 + keyCount($1) }
        default: return 0
        }
    }

    /// Array/object nesting in Foundation's reading.
    static func depth(_ value: Any) -> Int {
        if let object = value as? [String: Any] { return 1 + (object.values.map(depth).max() ?? 0) }
        if let array = value as? [Any] { return 1 + (array.map(depth).max() ?? 0) }
        return 0
    }

    /// Keys in Foundation's reading, all objects together.
    static func keyCount(_ value: Any) -> Int {
        if let object = value as? [String: Any] { return object.count + object.values.reduce(0) { $0 + keyCount($1) } }
        if let array = value as? [Any] { return array.reduce(0) { $0 + keyCount($1) } }
        return 0
    }

    /// Keys as written: strings followed by `:` (the input is valid JSON).
    static func keyTokens(_ b: [UInt8]) -> Int {
        var count = 0
        var i = 0
        while i < b.count {
            guard b[i] == UInt8(ascii: "\"") else { i += 1; continue }
            i += 1
            while i < b.count, b[i] != UInt8(ascii: "\"") { i += b[i] == UInt8(ascii: "\\") ? 2 : 1 }
            i += 1
            var j = i
            while j < b.count, [0x20, 0x09, 0x0A, 0x0D].contains(b[j]) { j += 1 }
            if j < b.count, b[j] == UInt8(ascii: ":") { count += 1 }
        }
        return count
    }
}

/// The publish body scanner (the `POST /v1/publish` fast path) against `JSONDecoder` reading the
/// same body into the route's `Decodable` shape, on bodies `RequestBody.check` accepts:
/// - a body the scanner takes, the decoder takes, with the same channel, event, retain and data
///   (compared as JSON values), and the scanner's `data` is compact valid JSON;
/// - a body the scanner leaves (`.fallback`) is one the decoder refuses: it takes every
///   well-typed body;
/// - `.duplicate` never comes after the check (which refuses every duplicate key first).
enum PublishBodyFuzzOracle {
    struct MessageBody: Decodable {
        let channel: String
        let event: String?
        let data: JSONValue
        let retain: Bool?
    }

    struct BatchBody: Decodable {
        let messages: [MessageBody]
    }

    static func check(_ input: [UInt8]) -> (failure: String?, keep: Bool) {
        guard JSONSyntax.check(input, maxDepth: RequestBody.maxNestingDepth, rejectDuplicateKeys: true) == nil else { return (nil, false) }
        let single = PublishBodyScanner.message(input)
        let decodedSingle = try? JSONDecoder().decode(MessageBody.self, from: Data(input))
        if let failure = compare(single.map { [$0] }, decodedSingle.map { [$0] }) { return ("message: " + failure, false) }
        let batch = PublishBodyScanner.batch(input)
        let decodedBatch = try? JSONDecoder().decode(BatchBody.self, from: Data(input))
        if let failure = compare(batch, decodedBatch?.messages) { return ("batch: " + failure, false) }
        return (nil, true)
    }

    private static func compare(_ scanned: PublishBodyScanner.Outcome<[PublishBodyScanner.Message]>, _ decoded: [MessageBody]?) -> String? {
        switch scanned {
        case .duplicate(let field):
            return "duplicate \(field) after the duplicate-key check"
        case .unknown(let key, let path):
            // The decoder ignores members; the scanner refuses one the message does not have.
            return PublishRoutes.MessageBody.members.names.contains(key) ? "\(path).\(key) refused as unknown" : nil
        case .fallback:
            return decoded == nil ? nil : "the scanner left a body the decoder takes"
        case .value(let messages):
            guard let decoded else { return "the scanner took a body the decoder refuses" }
            guard messages.count == decoded.count else { return "\(messages.count) messages, the decoder \(decoded.count)" }
            for (m, d) in zip(messages, decoded) {
                guard m.channel == d.channel, m.event == d.event, m.retain == d.retain else {
                    return "scanned \(m), decoded \(d)"
                }
                let dataBytes = Array(m.data.utf8)
                guard JSONSyntax.check(dataBytes, maxDepth: RequestBody.maxNestingDepth) == nil,
                      !dataBytes.contains(where: { $0 == 0x0A || $0 == 0x0D }) else {
                    return "scanned data \(m.data.debugDescription) is not compact JSON"
                }
                guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(dataBytes)), value == d.data else {
                    return "scanned data \(m.data) is not the decoded \(d.data.compactText)"
                }
            }
            return nil
        }
    }
}

extension PublishBodyScanner.Outcome {
    func map<T>(_ transform: (Value) -> T) -> PublishBodyScanner.Outcome<T> {
        switch self {
        case .value(let value): .value(transform(value))
        case .fallback: .fallback
        case .duplicate(let field): .duplicate(field: field)
        case .unknown(let key, let path): .unknown(key: key, path: path)
        }
    }
}

/// The notification body scanner (the `POST /v1/notifications` fast path) against `JSONDecoder`
/// reading `NotificationBody`, on bodies `RequestBody.check` accepts:
/// - a body the scanner returns, the decoder returns equal;
/// - a body the scanner refuses (400) has one of the four whole-number fields written with a
///   fraction, an exponent or beyond 64 bits, or a `badge` neither number nor string — the
///   documented strict subset — and the error names that field;
/// - a body the scanner leaves to the decoder (nil) is one the decoder refuses, or one with a
///   `live` object (which the scanner never reads);
/// - on any bytes, a body the unchecked path (`NotificationBodyScanner.unchecked`, run before the
///   check) returns is one the check accepts and the scanner then reads the same.
enum NotificationBodyFuzzOracle {
    static let strictFields: Set<String> = ["ttl_seconds", "expires_at", "badge", "push.ack_window_ms"]

    static func check(_ input: [UInt8]) -> (failure: String?, keep: Bool) {
        let unchecked = NotificationBodyScanner.unchecked(input)
        // The route's check: numbers beyond a double are the scanner's to refuse, naming the field.
        guard JSONSyntax.check(input, maxDepth: RequestBody.maxNestingDepth, rejectDuplicateKeys: true,
                               rejectNumbersBeyondDouble: false) == nil else {
            return unchecked == nil ? (nil, false) : ("the unchecked path took a body the check refuses: \(unchecked!)", false)
        }
        if let unchecked, (try? NotificationBodyScanner.scan(input)) != .some(unchecked) {
            return ("the unchecked path read \(unchecked), the scanner after the check otherwise", false)
        }
        let decoded = try? JSONDecoder().decode(NotificationBody.self, from: Data(input))
        do {
            let scanned = try NotificationBodyScanner.scan(input)
            switch (scanned, decoded) {
            case (let s?, let d?):
                return s == d ? (nil, true) : ("scanned \(s), decoded \(d)", false)
            case (_?, nil):
                return ("the scanner took a body the decoder refuses", false)
            case (nil, let d?):
                // `live` and object data values (AP-4 root key) are the decoder's alone.
                return d.live != nil || d.data?.objects.isEmpty == false ? (nil, true) : ("the scanner left a body the decoder takes: \(d)", false)
            case (nil, nil):
                return (nil, false)
            }
        } catch {
            // A member the body does not have (ADR 0010), named as it is found.
            if error.message.hasPrefix("unknown member"), let field = error.extra["field"] {
                let (owner, key) = field.hasPrefix("recipients.") ? (NotificationBody.RecipientsBody.members, String(field.dropFirst(11)))
                    : field.hasPrefix("push.") ? (NotificationBody.PushBody.members, String(field.dropFirst(5)))
                    : (NotificationBody.members, field)
                return owner.names.contains(key) ? ("a known member refused as unknown: \(field)", false) : (nil, true)
            }
            guard let field = error.extra["field"], strictFields.contains(field) else {
                return ("refused naming \(error.extra["field"] ?? "no field"): \(error)", false)
            }
            return (nil, true)
        }
    }
}
