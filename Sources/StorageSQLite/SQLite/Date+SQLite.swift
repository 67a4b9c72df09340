#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Herald stores every time as INTEGER unix milliseconds: sortable, indexable, exact, and what
/// JavaScript clients and PostgreSQL's `bigint` columns take without conversion.
extension Date: SQLiteBindable, SQLiteDecodable {
    /// Milliseconds since 1970-01-01T00:00:00Z, rounded to the nearest millisecond.
    var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }

    /// The moment `milliseconds` after 1970-01-01T00:00:00Z.
    init(unixMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    var sqliteValue: SQLiteValue { .integer(unixMilliseconds) }

    /// Reads INTEGER unix milliseconds only.
    init?(sqliteValue: SQLiteValue) {
        guard case .integer(let milliseconds) = sqliteValue else { return nil }
        self.init(unixMilliseconds: milliseconds)
    }
}
