/// One SQLite value, exactly as SQLite stores it (its five storage classes).
///
/// Literals work where a value is expected: `1`, `2.5`, `"text"`, `nil`, `true` (stored as 1).
/// - Note: SQLite stores a bound `Double.nan` as NULL.
public enum SQLiteValue: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    /// UTF-8 text; embedded NUL characters are kept (values are bound with their byte length).
    case text(String)
    case blob([UInt8])

    /// The SQLite storage-class name (`"INTEGER"`, `"NULL"`…), used in decode errors.
    public var typeName: String {
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
    public init(nilLiteral: ()) { self = .null }
}

extension SQLiteValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension SQLiteValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .real(value) }
}

extension SQLiteValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .text(value) }
}

extension SQLiteValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}
