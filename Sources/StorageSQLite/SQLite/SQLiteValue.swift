/// One SQLite value, exactly as SQLite stores it (its five storage classes).
///
/// Literals work where a value is expected: `1`, `2.5`, `"text"`, `nil`, `true` (stored as 1).
/// - Note: SQLite stores a bound `Double.nan` as NULL.
enum SQLiteValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    /// UTF-8 text; embedded NUL characters are kept (values are bound with their byte length).
    case text(String)
    case blob([UInt8])

    /// The SQLite storage-class name (`"INTEGER"`, `"NULL"`…), used in decode errors.
    var typeName: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }
}

extension SQLiteValue: ExpressibleByNilLiteral {
    init(nilLiteral: ()) { self = .null }
}

extension SQLiteValue: ExpressibleByIntegerLiteral {
    init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLiteValue: ExpressibleByFloatLiteral {
    init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLiteValue: ExpressibleByStringLiteral {
    init(stringLiteral value: String) { self = .text(value) }
}

extension SQLiteValue: ExpressibleByBooleanLiteral {
    init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}
