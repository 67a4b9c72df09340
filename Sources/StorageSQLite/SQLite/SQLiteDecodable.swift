/// A Swift type a column can be read as (`row["id", as: Int64.self]`).
///
/// Decoding is strict: INTEGER reads as integers, `Bool` (0 or 1 only) and `Date`; REAL as
/// `Double` (INTEGER too, exactly, since SQLite may store a whole REAL as INTEGER); TEXT only as
/// `String`; BLOB only as `[UInt8]`; NULL only as an `Optional` (or `SQLiteValue`). Anything else is
/// a `SQLiteError.decode`, never a silent conversion.
protocol SQLiteDecodable {
    /// Returns nil when `sqliteValue` does not hold a value of this type.
    init?(sqliteValue: SQLiteValue)
}
