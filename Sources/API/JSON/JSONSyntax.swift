/// A strict RFC 8259 syntax check run before decoding. Foundation's decoders accept trailing
/// commas (`{"a":1,}`), invalid UTF-8 and lone surrogate escapes (both read as U+FFFD), none of
/// which is JSON (RFC 8259 §7, §8.1), and a leading byte order mark, which §8.1 forbids senders
/// to add; this refuses them, and bounds nesting without recursion so a
/// hostile body cannot exhaust a thread's stack. It also refuses what Foundation refuses and
/// the one-pass scanners would otherwise pass on: a number beyond a double's range (`1e400`,
/// RFC 8259 §6 lets an implementation limit the range), and two keys of one object that are
/// the same Swift `String` though spelled with different bytes (`"\u00e9"` and `"e\u0301"`,
/// canonically equivalent), which a `[String: …]` decoder would merge.
enum JSONSyntax {
    enum Failure: Error, Equatable {
        /// Not JSON; `offset` is the byte where it stops being JSON.
        case invalid(offset: Int)
        /// Arrays/objects nest deeper than allowed.
        case tooDeep
        /// One object names a key twice (decoders disagree on which copy wins: refuse instead).
        case duplicateKey(offset: Int, key: String)
        /// A number whose magnitude is beyond a double's (±1.8e308): Foundation refuses it, and a
        /// subscriber's parser would read infinity.
        case numberOutOfRange(offset: Int)
    }

    private enum Expect { case value, valueOrArrayEnd, keyOrObjectEnd, key, colon, commaOrEnd, done }

    /// - Returns: nil when `bytes` is one JSON value (with optional whitespace around it).
    /// - Parameter rejectDuplicateKeys: refuse an object that names a key twice (compared
    ///   decoded, so `"a"` and `"\u0061"` are the same key).
    /// - Parameter rejectNumbersBeyondDouble: refuse a number beyond a double's range
    ///   (`.numberOutOfRange`); off only where a later reader names the field instead.
    static func check(_ bytes: [UInt8], maxDepth: Int, rejectDuplicateKeys: Bool = false,
                      rejectNumbersBeyondDouble: Bool = true) -> Failure? {
        var stack: [UInt8] = []
        // The keys of each open object (only when duplicates are refused).
        var keys = OpenKeys()
        var expect = Expect.value
        var i = 0
        let n = bytes.count
        func afterValue() -> Expect { stack.isEmpty ? .done : .commaOrEnd }
        while true {
            while i < n, bytes[i] == 0x20 || bytes[i] == 0x09 || bytes[i] == 0x0A || bytes[i] == 0x0D { i += 1 }
            guard i < n else { return expect == .done ? nil : .invalid(offset: i) }
            let c = bytes[i]
            switch expect {
            case .done:
                return .invalid(offset: i)
            case .colon:
                guard c == UInt8(ascii: ":") else { return .invalid(offset: i) }
                i += 1
                expect = .value
            case .key, .keyOrObjectEnd:
                if expect == .keyOrObjectEnd, c == UInt8(ascii: "}") {
                    i += 1
                    stack.removeLast()
                    if rejectDuplicateKeys { keys.close() }
                    expect = afterValue()
                } else {
                    guard c == UInt8(ascii: "\""), let end = string(bytes, from: i) else { return .invalid(offset: i) }
                    if rejectDuplicateKeys {
                        var key = bytes[(i + 1)..<(end - 1)]
                        // Only a key with an escape needs decoding to compare.
                        if key.contains(UInt8(ascii: "\\")) {
                            var at = i
                            key = ArraySlice((JSONScanner.jsonString(bytes, &at) ?? "").utf8)
                        }
                        if !keys.insert(key) {
                            return .duplicateKey(offset: i, key: String(decoding: key, as: UTF8.self))
                        }
                    }
                    i = end
                    expect = .colon
                }
            case .commaOrEnd:
                let top = stack[stack.count - 1]
                if c == UInt8(ascii: ",") {
                    i += 1
                    expect = top == UInt8(ascii: "{") ? .key : .value
                } else if (c == UInt8(ascii: "}") && top == UInt8(ascii: "{")) || (c == UInt8(ascii: "]") && top == UInt8(ascii: "[")) {
                    i += 1
                    stack.removeLast()
                    if rejectDuplicateKeys, c == UInt8(ascii: "}") { keys.close() }
                    expect = afterValue()
                } else {
                    return .invalid(offset: i)
                }
            case .value, .valueOrArrayEnd:
                if expect == .valueOrArrayEnd, c == UInt8(ascii: "]") {
                    i += 1
                    stack.removeLast()
                    expect = afterValue()
                    continue
                }
                switch c {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    stack.append(c)
                    if rejectDuplicateKeys, c == UInt8(ascii: "{") { keys.open() }
                    if stack.count > maxDepth { return .tooDeep }
                    i += 1
                    expect = c == UInt8(ascii: "{") ? .keyOrObjectEnd : .valueOrArrayEnd
                case UInt8(ascii: "\""):
                    guard let end = string(bytes, from: i) else { return .invalid(offset: i) }
                    i = end
                    expect = afterValue()
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    guard let end = number(bytes, from: i) else { return .invalid(offset: i) }
                    if rejectNumbersBeyondDouble, !fitsDouble(bytes, i, end) { return .numberOutOfRange(offset: i) }
                    i = end
                    expect = afterValue()
                case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                    let word: [UInt8] = c == UInt8(ascii: "t") ? Array("true".utf8) : c == UInt8(ascii: "f") ? Array("false".utf8) : Array("null".utf8)
                    guard i + word.count <= n, bytes[i..<(i + word.count)].elementsEqual(word) else { return .invalid(offset: i) }
                    i += word.count
                    expect = afterValue()
                default:
                    return .invalid(offset: i)
                }
            }
        }
    }

    /// The index after the string starting at `start` (a `"`), or nil: for a control character,
    /// a bad escape, a `\u` surrogate not in a high-low pair, or bytes that are not UTF-8
    /// (RFC 3629: no overlong forms, no encoded surrogates, nothing past U+10FFFF).
    static func string(_ b: [UInt8], from start: Int) -> Int? {
        var i = start + 1
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") { return i + 1 }
            if c < 0x20 { return nil }
            if c == UInt8(ascii: "\\") {
                guard i + 1 < b.count else { return nil }
                switch b[i + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    i += 2
                case UInt8(ascii: "u"):
                    guard let unit = hex4(b, i + 2) else { return nil }
                    i += 6
                    if (0xDC00...0xDFFF).contains(unit) { return nil }
                    if (0xD800...0xDBFF).contains(unit) {
                        guard i + 1 < b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u"),
                              let low = hex4(b, i + 2), (0xDC00...0xDFFF).contains(low) else { return nil }
                        i += 6
                    }
                default:
                    return nil
                }
                continue
            }
            if c < 0x80 {
                i += 1
                continue
            }
            guard let next = utf8Sequence(b, at: i) else { return nil }
            i = next
        }
        return nil
    }

    /// The index after the one multi-byte UTF-8 sequence at `at` (lead byte >= 0x80), or nil.
    private static func utf8Sequence(_ b: [UInt8], at: Int) -> Int? {
        let lead = b[at]
        let length: Int
        // The second byte's range is narrower after E0, ED, F0 and F4: that rules out overlong
        // forms, UTF-16 surrogates and scalars past U+10FFFF.
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return nil
        }
        guard at + length <= b.count, (low...high).contains(b[at + 1]) else { return nil }
        for k in (at + 2)..<(at + length) where !(0x80...0xBF).contains(b[k]) { return nil }
        return at + length
    }

    private static func hex4(_ b: [UInt8], _ at: Int) -> UInt32? {
        guard at + 4 <= b.count else { return nil }
        var value: UInt32 = 0
        for c in b[at..<(at + 4)] {
            guard isHex(c) else { return nil }
            let digit = isDigit(c) ? c - UInt8(ascii: "0") : (c | 0x20) - UInt8(ascii: "a") + 10
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// The index after the number starting at `start`, or nil (RFC 8259 §6 grammar).
    private static func number(_ b: [UInt8], from start: Int) -> Int? {
        var i = start
        func digits() -> Bool {
            let first = i
            while i < b.count, isDigit(b[i]) { i += 1 }
            return i > first
        }
        if b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count else { return nil }
        if b[i] == UInt8(ascii: "0") {
            i += 1
        } else if !digits() {
            return nil
        }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() else { return nil }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            guard digits() else { return nil }
        }
        return i
    }

    /// Whether the number `b[start..<end]` is within a double's range. Only a number with an
    /// exponent or more than 308 digits can overflow, so the common number costs one scan.
    private static func fitsDouble(_ b: [UInt8], _ start: Int, _ end: Int) -> Bool {
        guard end - start > 308 || b[start..<end].contains(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) else {
            return true
        }
        return Double(String(decoding: b[start..<end], as: UTF8.self))?.isFinite ?? false
    }

    private static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    private static func isHex(_ c: UInt8) -> Bool {
        isDigit(c) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "F"))
    }
}

/// The keys of the open objects, innermost last, for the duplicate-key check: one flat list
/// searched linearly while an object is small (no allocation per object, which publish bodies
/// at fan-out rates would pay), and a set for an object past `linearLimit` keys so a body of
/// many keys stays linear.
///
/// Keys are equal when a `[String: …]` decoder would merge them: equal bytes, or, when either
/// is not ASCII, equal as Swift `String`s (canonical equivalence: `"\u00e9"` and `"e\u0301"`,
/// or the Kelvin sign and `"K"`). ASCII keys, nearly all of them, compare as bytes only.
private struct OpenKeys {
    private var flat: [ArraySlice<UInt8>] = []
    /// Whether `flat[n]` is all ASCII.
    private var ascii: [Bool] = []
    /// Where each open object's keys start in `flat`.
    private var starts: [Int] = []
    /// The keys of the large open objects, by depth (index into `starts`).
    private var sets: [Int: Set<String>] = [:]
    private static let linearLimit = 16

    mutating func open() { starts.append(flat.count) }

    mutating func close() {
        let start = starts.removeLast()
        flat.removeSubrange(start...)
        ascii.removeSubrange(start...)
        if !sets.isEmpty { sets[starts.count] = nil }
    }

    /// False when the innermost open object already has `key`.
    mutating func insert(_ key: ArraySlice<UInt8>) -> Bool {
        let depth = starts.count - 1
        // Swift's String hashing and equality follow canonical equivalence.
        if !sets.isEmpty, sets[depth] != nil { return sets[depth]!.insert(String(decoding: key, as: UTF8.self)).inserted }
        let start = starts[depth]
        let keyIsASCII = key.allSatisfy { $0 < 0x80 }
        var text: String?
        for index in start..<flat.count {
            if flat[index] == key { return false }
            if !keyIsASCII || !ascii[index] {
                let decoded = text ?? String(decoding: key, as: UTF8.self)
                text = decoded
                if String(decoding: flat[index], as: UTF8.self) == decoded { return false }
            }
        }
        if flat.count - start < Self.linearLimit {
            flat.append(key)
            ascii.append(keyIsASCII)
        } else {
            var set = Set(flat[start...].map { String(decoding: $0, as: UTF8.self) })
            set.insert(String(decoding: key, as: UTF8.self))
            sets[depth] = set
        }
        return true
    }
}
