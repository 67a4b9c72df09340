/// Small text helpers shared by the push targets (`package`: not part of any public API).
extension String {
    /// Literal two-character `\n` / `\r` escapes (as typed in an env file) turned into real line breaks.
    /// Safe for PEM: `\` never occurs in base64 or in PEM labels.
    package func replacingEscapedNewlines() -> String {
        replacing("\\r\\n", with: "\n").replacing("\\n", with: "\n").replacing("\\r", with: "\n")
    }

    /// The string without leading and trailing whitespace (spaces, tabs, CR, LF…).
    package func trimmingWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }

    /// The string without leading and trailing ASCII spaces and tabs (HTTP optional whitespace).
    package func trimmingSpaces() -> String {
        // Most values (every APNs `apns-id`) have nothing to trim: returned as they are, without
        // the `Substring` walk and the copy it makes (issue 17: ~1k instructions a push).
        let ends = utf8
        if let first = ends.first, let last = ends.last, first != 0x20, first != 0x09, last != 0x20, last != 0x09 { return self }
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }

    /// Whether every byte is `0-9`, `a-f` or `A-F` (true for ""). One loop over the contiguous
    /// bytes: `utf8.allSatisfy(\.isASCIIHexDigit)` across modules cost ~3k instructions for a
    /// 64-digit APNs token, on every push.
    package var isAllASCIIHexDigits: Bool {
        if let all = utf8.withContiguousStorageIfAvailable({ Self.allHex($0) }) { return all }
        return Array(utf8).withUnsafeBufferPointer { Self.allHex($0) }
    }

    private static func allHex(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for b in bytes {
            let lower = b | 0x20
            guard (b >= 0x30 && b <= 0x39) || (lower >= 0x61 && lower <= 0x66) else { return false }
        }
        return true
    }
}

extension UInt8 {
    /// `0-9`, `a-f`, `A-F`.
    package var isASCIIHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}
