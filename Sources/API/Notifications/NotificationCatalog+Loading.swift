import Foundation
import HeraldCore

/// Reading a catalog file is I/O, so it lives here rather than beside the catalog in the core.
extension NotificationCatalog {
    /// The largest catalog file read; a catalog is a few kilobytes per kind.
    static let maxFileBytes = 4 << 20

    /// Reads and checks a catalog file.
    ///
    /// - Throws: `CatalogError.unreadable` when the file cannot be read, `.invalid` as `parse` does.
    public static func load(path: String) throws(CatalogError) -> NotificationCatalog {
        guard let file = fopen(path, "rb") else {
            throw .unreadable(path: path, reason: String(cString: strerror(errno)))
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            bytes.append(contentsOf: chunk[..<count])
            guard bytes.count <= maxFileBytes else {
                throw .unreadable(path: path, reason: "larger than \(maxFileBytes) bytes")
            }
            if count < chunk.count {
                if ferror(file) != 0 { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
                break
            }
        }
        return try parse(bytes)
    }

    /// Parses and checks a catalog: the JSON itself, unknown fields (keys starting with `_` are
    /// comments), kind and category names (1–64 of `A-Z a-z 0-9 _ . : -`), that every kind's
    /// category exists, every template parses, every priority is normal|high|urgent, every locale
    /// key is a language tag, and every title and body has a text for the default locale.
    ///
    /// - Throws: `CatalogError.invalid` naming the first offending field.
    /// - Parameter defaultLocale: an app's `default_locale` setting, replacing the file's.
    public static func parse(_ bytes: [UInt8], defaultLocale: String? = nil) throws(CatalogError) -> NotificationCatalog {
        try CatalogParser.parse(bytes, defaultLocale: defaultLocale)
    }
}
