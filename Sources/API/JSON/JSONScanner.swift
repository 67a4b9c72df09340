/// The lexical pieces of Herald's one-pass body readers (`PublishBodyScanner`,
/// `NotificationBodyScanner`): functions of the body's bytes and an index into them.
///
/// Each returns nil or false when the value at the index is not of the kind asked for, leaving
/// the caller to fall back to `JSONDecoder`. What they read they also check as `JSONSyntax.check`
/// does (strings: UTF-8, escapes, control characters; numbers: RFC 8259's grammar; with
/// `distinctKeys`, no key twice in one object), so a reader that takes a whole body has seen
/// JSON the check accepts: `NotificationBodyScanner.unchecked` relies on it to skip the check.
/// Whatever they skip (`skipValue`) is not checked.
enum JSONScanner {
    /// A JSON string, escapes decoded (`\uXXXX` with surrogate pairs); nil when not at a string
    /// or not a valid one.
    static func jsonString(_ b: [UInt8], _ i: inout Int) -> String? {
        guard i < b.count, b[i] == UInt8(ascii: "\"") else { return nil }
        var j = i + 1
        var plain = true
        // Printable ASCII without escapes, nearly every string, needs no further check.
        var printable = true
        while j < b.count, b[j] != UInt8(ascii: "\"") {
            let c = b[j]
            if c == UInt8(ascii: "\\") {
                plain = false
                j += 2
            } else {
                if c < 0x20 || c >= 0x80 { printable = false }
                j += 1
            }
        }
        guard j < b.count else { return nil }
        if !(plain && printable), JSONSyntax.string(b, from: i) != j + 1 { return nil }
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
                // A lone surrogate never gets here (`JSONSyntax.check` refuses it); U+FFFD if one did.
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

    static func skipLiteral(_ b: [UInt8], _ i: inout Int, _ literal: StaticString) -> Bool {
        let n = literal.utf8CodeUnitCount
        guard i + n <= b.count else { return false }
        let matches = literal.withUTF8Buffer { word in (0..<n).allSatisfy { b[i + $0] == word[$0] } }
        if matches { i += n }
        return matches
    }

    /// Past one valid JSON value (strings, numbers, literals, nested arrays and objects).
    static func skipValue(_ b: [UInt8], _ i: inout Int) -> Bool {
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
    static func compact(_ value: ArraySlice<UInt8>) -> String {
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

    static func skipSpace(_ b: [UInt8], _ from: Int) -> Int {
        var i = from
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
        return i
    }

    /// A whole number written without fraction or exponent that fits `Int64`; nil for any other
    /// number or value, and for one RFC 8259 does not allow (a leading zero: `007`).
    static func integer(_ b: [UInt8], _ i: inout Int) -> Int64? {
        var j = i
        let negative = j < b.count && b[j] == UInt8(ascii: "-")
        if negative { j += 1 }
        let digits = j
        if j + 1 < b.count, b[j] == UInt8(ascii: "0"), b[j + 1] >= UInt8(ascii: "0"), b[j + 1] <= UInt8(ascii: "9") { return nil }
        var value: Int64 = 0
        while j < b.count, b[j] >= UInt8(ascii: "0"), b[j] <= UInt8(ascii: "9") {
            let digit = Int64(b[j] - UInt8(ascii: "0"))
            // Accumulated negatively, so Int64.min fits.
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times.subtractingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { return nil }
            value = next
            j += 1
        }
        guard j > digits else { return nil }
        if j < b.count, b[j] == UInt8(ascii: ".") || b[j] == UInt8(ascii: "e") || b[j] == UInt8(ascii: "E") { return nil }
        if !negative {
            guard value != Int64.min else { return nil }
            value = -value
        }
        i = j
        return value
    }

    /// A number whose value is a whole number within `Int64`, however it is written: `1000`,
    /// `1000.0`, `1e3`, `1.0E3` and `10000e-1` are all 1000, as JSON Schema's `"type": "integer"`
    /// counts them (draft 4 onwards: a number with a zero fractional part is an integer), so a
    /// client or a fuzzer following the OpenAPI is not refused. nil, with `i` unmoved, for a
    /// number with a fractional part (`1000.5`, `1e-3`), one beyond 64 bits, or a value that is
    /// not an RFC 8259 number. Plain digits take `integer`'s path; the rest is exact decimal
    /// arithmetic on the digits, never a `Double` (which cannot tell 2^53 + 1 from 2^53).
    static func wholeNumber(_ b: [UInt8], _ i: inout Int) -> Int64? {
        if let value = integer(b, &i) { return value }
        var j = i
        let negative = j < b.count && b[j] == UInt8(ascii: "-")
        if negative { j += 1 }
        func isDigit(_ k: Int) -> Bool { k < b.count && b[k] >= UInt8(ascii: "0") && b[k] <= UInt8(ascii: "9") }
        let integerStart = j
        while isDigit(j) { j += 1 }
        let integerEnd = j
        // RFC 8259: one or more digits, no leading zero but a lone one.
        guard integerEnd > integerStart, b[integerStart] != UInt8(ascii: "0") || integerEnd == integerStart + 1 else { return nil }
        var fractionEnd = integerEnd
        if j < b.count, b[j] == UInt8(ascii: ".") {
            j += 1
            guard isDigit(j) else { return nil }
            while isDigit(j) { j += 1 }
            fractionEnd = j
        }
        // The power of ten the digits are scaled by, saturated far past any 64-bit value's 19 digits.
        var exponent = 0
        if j < b.count, b[j] == UInt8(ascii: "e") || b[j] == UInt8(ascii: "E") {
            j += 1
            let minus = j < b.count && b[j] == UInt8(ascii: "-")
            if j < b.count, b[j] == UInt8(ascii: "-") || b[j] == UInt8(ascii: "+") { j += 1 }
            guard isDigit(j) else { return nil }
            while isDigit(j) {
                exponent = min(exponent * 10 + Int(b[j] - UInt8(ascii: "0")), 1 << 40)
                j += 1
            }
            if minus { exponent = -exponent }
        }
        // The significant digits (integer then fraction, the point skipped), without leading or
        // trailing zeros; each trailing zero dropped raises the power by one.
        let point = integerEnd
        // A slice: dropping a leading zero moves its start (an array's `removeFirst` would shift
        // the rest, quadratic in a body of zeros such as `0.000…1`).
        var digits = ArraySlice((integerStart..<fractionEnd).filter { $0 != point })
        exponent -= fractionEnd > integerEnd ? fractionEnd - integerEnd - 1 : 0
        while let first = digits.first, b[first] == UInt8(ascii: "0") { digits.removeFirst() }
        while let last = digits.last, b[last] == UInt8(ascii: "0") {
            digits.removeLast()
            exponent += 1
        }
        if digits.isEmpty {   // zero, however written (`-0.0e5`)
            i = j
            return 0
        }
        guard exponent >= 0, digits.count + exponent <= 19 else { return nil }
        // Accumulated negatively, as in `integer`, so Int64.min fits.
        var value: Int64 = 0
        for k in digits.map({ Int64(b[$0] - UInt8(ascii: "0")) }) + Array(repeating: 0, count: exponent) {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times.subtractingReportingOverflow(k)
            guard !overflow1, !overflow2 else { return nil }
            value = next
        }
        if !negative {
            guard value != Int64.min else { return nil }
            value = -value
        }
        i = j
        return value
    }

    /// `true` or `false`.
    static func bool(_ b: [UInt8], _ i: inout Int) -> Bool? {
        if skipLiteral(b, &i, "true") { return true }
        if skipLiteral(b, &i, "false") { return false }
        return nil
    }

    /// Reads an object's members, calling `member` with each key (escapes decoded) and the index
    /// of its value (past the whitespace, within the bytes) to read the value; false when the
    /// value is not an object or `member` returns false, and with `distinctKeys` when a key comes
    /// twice (equal as Swift `String`s, as `JSONSyntax.check` compares them).
    static func object(_ b: [UInt8], _ i: inout Int, distinctKeys: Bool = false, _ member: (String, inout Int) -> Bool) -> Bool {
        guard i < b.count, b[i] == UInt8(ascii: "{") else { return false }
        i = skipSpace(b, i + 1)
        if i < b.count, b[i] == UInt8(ascii: "}") {
            i += 1
            return true
        }
        var keys = KeyStarts()
        while true {
            let keyStart = i
            guard let key = jsonString(b, &i) else { return false }
            if distinctKeys {
                guard !keys.contains(where: { sameKey(b, $0, keyStart) }) else { return false }
                keys.append(keyStart)
            }
            i = skipSpace(b, i)
            guard i < b.count, b[i] == UInt8(ascii: ":") else { return false }
            i = skipSpace(b, i + 1)
            guard i < b.count, member(key, &i) else { return false }
            i = skipSpace(b, i)
            guard i < b.count else { return false }
            if b[i] == UInt8(ascii: ",") {
                i = skipSpace(b, i + 1)
                continue
            }
            guard b[i] == UInt8(ascii: "}") else { return false }
            i += 1
            return true
        }
    }

    /// Where an object's keys start (their opening quotes), for `object`'s duplicate check: the
    /// first 16 in place, the rest in an array. A `[String]` of the keys cost an allocation an
    /// object (issue 17).
    private struct KeyStarts {
        private var inline: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int)
            = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        private var count = 0
        private var more: [Int] = []

        mutating func append(_ start: Int) {
            if count < 16 {
                withUnsafeMutableBytes(of: &inline) { $0.storeBytes(of: start, toByteOffset: count * MemoryLayout<Int>.stride, as: Int.self) }
            } else {
                more.append(start)
            }
            count += 1
        }

        func contains(where match: (Int) -> Bool) -> Bool {
            let found = withUnsafeBytes(of: inline) { raw in
                (0..<min(count, 16)).contains { match(raw.load(fromByteOffset: $0 * MemoryLayout<Int>.stride, as: Int.self)) }
            }
            return found || more.contains(where: match)
        }
    }

    /// Whether the keys whose opening quotes are at `a` and `c` (both read as valid strings) are
    /// one Swift `String`, as `JSONSyntax.check` compares keys: the same bytes are; different
    /// bytes without an escape or a byte past ASCII are not; any other pair is decoded and compared.
    private static func sameKey(_ b: [UInt8], _ a: Int, _ c: Int) -> Bool {
        var x = a + 1, y = c + 1
        while b[x] == b[y], b[x] != UInt8(ascii: "\""), b[x] != UInt8(ascii: "\\"), b[x] < 0x80 {
            x += 1
            y += 1
        }
        if b[x] == UInt8(ascii: "\""), b[y] == UInt8(ascii: "\"") { return true }
        if plainToTheEnd(b, x), plainToTheEnd(b, y) { return false }
        var p = a, q = c
        return jsonString(b, &p) == jsonString(b, &q)
    }

    /// Whether the string's bytes from `from` to its closing quote have no escape and no byte past ASCII.
    private static func plainToTheEnd(_ b: [UInt8], _ from: Int) -> Bool {
        var k = from
        while b[k] != UInt8(ascii: "\"") {
            if b[k] == UInt8(ascii: "\\") || b[k] >= 0x80 { return false }
            k += 1
        }
        return true
    }

    /// An array at `i`: `element` reads each value (with `i` at its first byte) and returns
    /// false to stop. Returns false when the array is not well formed or `element` stopped it.
    static func array(_ b: [UInt8], _ i: inout Int, _ element: (inout Int) -> Bool) -> Bool {
        guard i < b.count, b[i] == UInt8(ascii: "[") else { return false }
        i = skipSpace(b, i + 1)
        if i < b.count, b[i] == UInt8(ascii: "]") {
            i += 1
            return true
        }
        while true {
            guard element(&i) else { return false }
            i = skipSpace(b, i)
            guard i < b.count else { return false }
            if b[i] == UInt8(ascii: ",") {
                i = skipSpace(b, i + 1)
                continue
            }
            guard b[i] == UInt8(ascii: "]") else { return false }
            i += 1
            return true
        }
    }

    /// An array of strings.
    static func strings(_ b: [UInt8], _ i: inout Int) -> [String]? {
        var values: [String] = []
        let read = array(b, &i) { i in
            guard let value = jsonString(b, &i) else { return false }
            values.append(value)
            return true
        }
        return read ? values : nil
    }

    /// An object of string values.
    static func stringMap(_ b: [UInt8], _ i: inout Int, distinctKeys: Bool = false) -> [String: String]? {
        var map: [String: String] = [:]
        let read = object(b, &i, distinctKeys: distinctKeys) { key, i in
            guard let value = jsonString(b, &i) else { return false }
            map[key] = value
            return true
        }
        return read ? map : nil
    }
}
