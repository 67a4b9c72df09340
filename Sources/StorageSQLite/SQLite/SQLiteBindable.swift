/// A Swift value that can be bound to a statement parameter.
///
/// Conforming: `SQLiteValue`, `Int`, `Int64`, `Int32`, `Double`, `Bool` (0/1), `String`,
/// `[UInt8]` (BLOB), `Date` (INTEGER unix milliseconds) and `Optional` of any of them
/// (`nil` binds NULL). In an `[any SQLiteBindable]` list a bare `nil` does not type-check:
/// write `SQLiteValue.null` or pass an optional variable.
protocol SQLiteBindable {
    /// The value as SQLite will store it.
    var sqliteValue: SQLiteValue { get }
}
