import CSQLite

/// A Swift value that can be bound to a statement parameter.
///
/// Conforming: `SQLiteValue`, `Int`, `Int64`, `Int32`, `Double`, `Bool` (0/1), `String`,
/// `[UInt8]` (BLOB), `Date` (INTEGER unix milliseconds) and `Optional` of any of them
/// (`nil` binds NULL). In an `[any SQLiteBindable]` list a bare `nil` does not type-check:
/// write `SQLiteValue.null` or pass an optional variable.
protocol SQLiteBindable {
    /// The value as SQLite will store it.
    var sqliteValue: SQLiteValue { get }

    /// Binds the value to parameter `index` of `statement` (`sqlite3_bind_*`).
    /// - Returns: SQLite's result code.
    ///
    /// Why a requirement: binding through `sqliteValue` made an enum (and a retained copy of a
    /// text) per parameter, and `Optional`'s went through generic code: ~600 instructions a
    /// parameter, ~60 parameters per notification at the choke point (issue 17). The common
    /// types bind themselves; the rest use `sqliteValue` (the default).
    func bindSQLite(to statement: OpaquePointer, at index: Int32) -> Int32

    /// Binds the value for one execution of `statement` (`Statement.run`, `query`, `queryOne`):
    /// a text is copied into `arena` and bound without SQLite's own copy (`SQLITE_STATIC`),
    /// valid until the execution ends and clears its bindings. Other values bind as
    /// `bindSQLite(to:at:)` (the default).
    /// - Returns: SQLite's result code.
    func bindSQLite(to statement: OpaquePointer, at index: Int32, arena: TextArena) -> Int32
}

extension SQLiteBindable {
    func bindSQLite(to statement: OpaquePointer, at index: Int32) -> Int32 {
        sqliteValue.bindSQLite(to: statement, at: index)
    }

    func bindSQLite(to statement: OpaquePointer, at index: Int32, arena: TextArena) -> Int32 {
        bindSQLite(to: statement, at: index)
    }
}
