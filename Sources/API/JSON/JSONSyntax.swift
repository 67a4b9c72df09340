/// A strict RFC 8259 syntax check run before decoding. Foundation's decoders accept trailing
/// commas (`{"a":1,}`), which is not JSON; this refuses them, and bounds nesting without
/// recursion so a hostile body cannot exhaust a thread's stack.
enum JSONSyntax {
    enum Failure: Error, Equatable {
        /// Not JSON; `offset` is the byte where it stops being JSON.
        case invalid(offset: Int)
        /// Arrays/objects nest deeper than allowed.
        case tooDeep
        /// One object names a key twice (decoders disagree on which copy wins: refuse instead).
        case duplicateKey(offset: Int, key: String)
    }

    private enum Expect { case value, valueOrArrayEnd, keyOrObjectEnd, key, colon, commaOrEnd, done }

    /// - Returns: nil when `bytes` is one JSON value (with optional whitespace around it).
    /// - Parameter rejectDuplicateKeys: refuse an object that names a key twice (compared as
    ///   written, so `"a"` and `"\u0061"` count as different).
    static func check(_ bytes: [UInt8], maxDepth: Int, rejectDuplicateKeys: Bool = false) -> Failure? {
        var stack: [UInt8] = []
        // The keys of each open object, innermost last (only when duplicates are refused).
        var keys: [Set<ArraySlice<UInt8>>] = []
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
                    if rejectDuplicateKeys { keys.removeLast() }
                    expect = afterValue()
                } else {
                    guard c == UInt8(ascii: "\""), let end = string(bytes, from: i) else { return .invalid(offset: i) }
                    if rejectDuplicateKeys, !keys[keys.count - 1].insert(bytes[(i + 1)..<(end - 1)]).inserted {
                        return .duplicateKey(offset: i, key: String(decoding: bytes[(i + 1)..<(end - 1)], as: UTF8.self))
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
                    if rejectDuplicateKeys, c == UInt8(ascii: "}") { keys.removeLast() }
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
                    if rejectDuplicateKeys, c == UInt8(ascii: "{") { keys.append([]) }
                    if stack.count > maxDepth { return .tooDeep }
                    i += 1
                    expect = c == UInt8(ascii: "{") ? .keyOrObjectEnd : .valueOrArrayEnd
                case UInt8(ascii: "\""):
                    guard let end = string(bytes, from: i) else { return .invalid(offset: i) }
                    i = end
                    expect = afterValue()
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    guard let end = number(bytes, from: i) else { return .invalid(offset: i) }
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

    /// The index after the string starting at `start` (a `"`), or nil.
    private static func string(_ b: [UInt8], from start: Int) -> Int? {
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
                    guard i + 5 < b.count, b[(i + 2)...(i + 5)].allSatisfy(isHex) else { return nil }
                    i += 6
                default:
                    return nil
                }
                continue
            }
            i += 1
        }
        return nil
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

    private static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }
    private static func isHex(_ c: UInt8) -> Bool {
        isDigit(c) || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "f")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "F"))
    }
}
