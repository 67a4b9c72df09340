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
        // Encoding an array of strings cannot fail; a failure would be a Foundation bug.
        let data = try! JSONEncoder().encode(strings)
        return String(decoding: data, as: UTF8.self)
    }

    /// Decodes `text` read from `column`.
    /// - Throws: `StorageError.decode` when the text is not a JSON array of strings.
    static func decode(_ text: String, column: String) throws(StorageError) -> [String] {
        do {
            return try JSONDecoder().decode([String].self, from: Data(text.utf8))
        } catch {
            throw .decode(column: column, expected: "JSON array of strings", found: String(text.prefix(80)))
        }
    }
}
