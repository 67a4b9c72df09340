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
        if strings.allSatisfy({ $0.utf8.allSatisfy(isPlain) }) {
            var out = "["
            for (index, string) in strings.enumerated() {
                out += index == 0 ? "\"" : ",\""
                out += string
                out += "\""
            }
            return out + "]"
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
