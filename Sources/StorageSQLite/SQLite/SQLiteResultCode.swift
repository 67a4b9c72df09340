import CSQLite

/// A SQLite result code, primary (`SQLITE_BUSY` = 5) or extended (`SQLITE_CONSTRAINT_UNIQUE` =
/// 2067 = 19 | 8 << 8). Connections enable extended codes, so errors carry the precise one.
///
/// The extended constants are declared here because Swift does not import sqlite3.h's
/// `(SQLITE_X | (n<<8))` macros ("structure not supported").
public struct SQLiteResultCode: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The low byte: the family an extended code belongs to.
    public var primary: SQLiteResultCode { SQLiteResultCode(rawValue & 0xff) }

    // Primary codes (sqlite.org/rescode.html).
    public static let ok = SQLiteResultCode(SQLITE_OK)
    public static let error = SQLiteResultCode(SQLITE_ERROR)
    public static let busy = SQLiteResultCode(SQLITE_BUSY)
    public static let locked = SQLiteResultCode(SQLITE_LOCKED)
    public static let readOnly = SQLiteResultCode(SQLITE_READONLY)
    public static let constraint = SQLiteResultCode(SQLITE_CONSTRAINT)
    public static let mismatch = SQLiteResultCode(SQLITE_MISMATCH)
    public static let misuse = SQLiteResultCode(SQLITE_MISUSE)
    public static let range = SQLiteResultCode(SQLITE_RANGE)
    public static let noMemory = SQLiteResultCode(SQLITE_NOMEM)
    public static let row = SQLiteResultCode(SQLITE_ROW)
    public static let done = SQLiteResultCode(SQLITE_DONE)

    // Extended codes callers and tests match on.
    public static let busySnapshot = SQLiteResultCode(SQLITE_BUSY | (2 << 8))
    public static let constraintCheck = SQLiteResultCode(SQLITE_CONSTRAINT | (1 << 8))
    public static let constraintForeignKey = SQLiteResultCode(SQLITE_CONSTRAINT | (3 << 8))
    public static let constraintNotNull = SQLiteResultCode(SQLITE_CONSTRAINT | (5 << 8))
    public static let constraintPrimaryKey = SQLiteResultCode(SQLITE_CONSTRAINT | (6 << 8))
    public static let constraintUnique = SQLiteResultCode(SQLITE_CONSTRAINT | (8 << 8))
}

extension SQLiteResultCode: CustomStringConvertible {
    /// `"2067 constraint failed"`: the number (for lookup in sqlite.org/rescode.html) and
    /// SQLite's English text for it.
    public var description: String { "\(rawValue) \(String(cString: sqlite3_errstr(rawValue)))" }
}
