#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A `[String]` as JSON array text, for columns SQLite reads with `json_each` (permissions,
/// enabled events) and for binding a list of values to one parameter instead of building
/// `IN (?, ?, …)` SQL text.
enum JSONStringArray {
    /// `["a","b"]`.
    static func encode(_ strings: [String]) -> String {
        // Ids and names are mostly printable ASCII that no encoder escapes: written as they are,
        // the same text JSONEncoder makes. Anything else (`"`, `\`, `/`, controls, non-ASCII)
        // goes through JSONEncoder, so stored arrays keep its exact spelling.
        // Each string's contiguous bytes judged through a table, then copied with one memcpy into
        // one buffer of the text's size (issue 17: a String index stepped per byte and growing
        // appends were ~2.6k instructions per id of a `POST /v1/push` call of 1,000 devices; a
        // per-byte predicate and append ~0.9k).
        let plain = plainBytes
        var total = 2
        for string in strings {
            guard let count = string.utf8.withContiguousStorageIfAvailable({ bytes in
                plain.withUnsafeBufferPointer { table in bytes.allSatisfy { table[Int($0)] } } ? bytes.count : nil
            }), let count else { return encoded(strings) }
            total += count + 3
        }
        return String(unsafeUninitializedCapacity: total) { buffer in
            let out = buffer.baseAddress!
            var at = 0
            out[at] = UInt8(ascii: "["); at += 1
            for (index, string) in strings.enumerated() {
                if index > 0 { out[at] = UInt8(ascii: ","); at += 1 }
                out[at] = UInt8(ascii: "\""); at += 1
                // Contiguous: checked above.
                at += string.utf8.withContiguousStorageIfAvailable { bytes in
                    if let base = bytes.baseAddress { (out + at).update(from: base, count: bytes.count) }
                    return bytes.count
                } ?? 0
                out[at] = UInt8(ascii: "\""); at += 1
            }
            out[at] = UInt8(ascii: "]"); at += 1
            return at
        }
    }

    /// JSONEncoder's text of `strings`.
    private static func encoded(_ strings: [String]) -> String {
        // Encoding an array of strings cannot fail; a failure would be a Foundation bug.
        let data = try! JSONEncoder().encode(strings)
        return String(decoding: data, as: UTF8.self)
    }

    /// Which bytes JSONEncoder writes as they are: printable ASCII but `"`, `\\` and `/`.
    private static let plainBytes: [Bool] = (0...255).map { byte in
        byte >= 0x20 && byte < 0x7F && byte != Int(UInt8(ascii: "\"")) && byte != Int(UInt8(ascii: "\\")) && byte != Int(UInt8(ascii: "/"))
    }

    /// Decodes `text` read from `column`.
    /// - Throws: `SQLiteError.decode` when the text is not a JSON array of strings.
    static func decode(_ text: String, column: String) throws(SQLiteError) -> [String] {
        do {
            return try JSONDecoder().decode([String].self, from: Data(text.utf8))
        } catch {
            throw .decode(column: column, expected: "JSON array of strings", found: String(text.prefix(80)))
        }
    }
}
