/// One result row, copied out of SQLite so it can outlive the statement and cross threads
/// (`Database.read` returns rows to async callers).
///
/// ```swift
/// let id = try row["id", as: Int64.self]          // by name
/// let expires: Int64? = try row["expires_at"]     // type from context; NULL → nil
/// let first = try row[0, as: String.self]         // by 0-based index
/// ```
/// A NULL read as a non-optional type, a wrong storage class or an unknown column throws
/// `SQLiteError.decode`.
struct Row: Sendable {
    /// The row's columns as SQLite returned them, in SELECT order.
    let values: [SQLiteValue]
    private let columns: RowColumns

    init(columns: RowColumns, values: [SQLiteValue]) {
        assert(columns.names.count == values.count)
        self.columns = columns
        self.values = values
    }

    /// Column names in SELECT order (the `AS` alias when there is one).
    var columnNames: [String] { columns.names }

    /// Decodes column `name`. With duplicate names (a join without aliases) the first one wins.
    /// - Throws: `SQLiteError.decode` for an unknown column or a value that is not a `T`.
    subscript<T: SQLiteDecodable>(_ name: String, as type: T.Type = T.self) -> T {
        get throws(SQLiteError) {
            guard let index = columns.index[name] else {
                throw .decode(column: name, expected: String(describing: T.self), found: "no such column")
            }
            return try decode(index, name: name)
        }
    }

    /// Decodes the column at 0-based `index`.
    /// - Throws: `SQLiteError.decode` when the value is not a `T`.
    /// - Important: `index` must be in `0..<values.count`.
    subscript<T: SQLiteDecodable>(_ index: Int, as type: T.Type = T.self) -> T {
        get throws(SQLiteError) {
            precondition(values.indices.contains(index), "column index \(index) out of range 0..<\(values.count)")
            return try decode(index, name: columns.names[index])
        }
    }

    private func decode<T: SQLiteDecodable>(_ index: Int, name: String) throws(SQLiteError) -> T {
        let value = values[index]
        guard let decoded = T(sqliteValue: value) else {
            throw .decode(column: name, expected: String(describing: T.self), found: value.typeName)
        }
        return decoded
    }
}

/// Column names and a name → index map, built once per query and shared by all its rows.
final class RowColumns: Sendable {
    let names: [String]
    let index: [String: Int]

    init(names: [String]) {
        self.names = names
        var index: [String: Int] = [:]
        for (position, name) in names.enumerated() where index[name] == nil { index[name] = position }
        self.index = index
    }
}
