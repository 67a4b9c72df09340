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
        // Checked over each string's contiguous bytes and written into one reserved buffer
        // (issue 17): a String index stepped per byte and appends that grew the text cost ~2.6k
        // instructions per id of a `POST /v1/push` call of 1,000 devices.
        var total = 2
        var plain = true
        for var string in strings {
            total += string.utf8.count + 3
            plain = string.withUTF8 { bytes in bytes.allSatisfy(isPlain) }
            if !plain { break }
        }
        if plain {
            return String(unsafeUninitializedCapacity: total) { buffer in
                var at = 0
                func put(_ byte: UInt8) {
                    buffer[at] = byte
                    at += 1
                }
                put(UInt8(ascii: "["))
                for (index, var string) in strings.enumerated() {
                    if index > 0 { put(UInt8(ascii: ",")) }
                    put(UInt8(ascii: "\""))
                    string.withUTF8 { bytes in
                        for byte in bytes { put(byte) }
                    }
                    put(UInt8(ascii: "\""))
                }
                put(UInt8(ascii: "]"))
                return at
            }
        }
        // Encoding an array of strings cannot fail; a failure would be a Foundation bug.
        let data = try! JSONEncoder().encode(strings)
        return String(decoding: data, as: UTF8.self)
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") && byte != UInt8(ascii: "/")
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
