import CSQLite

/// A prepared statement: bind values, step, read rows. Values are always bound, never spliced
/// into SQL text.
///
/// ```swift
/// let rows = try conn.prepare("SELECT id, token FROM devices WHERE user_id = ?").query([userID])
/// try conn.prepare("UPDATE sessions SET ended_at = :now WHERE app = :app AND sid = :sid").run([":now": now, ":app": app, ":sid": sid])
/// ```
/// `query`, `queryOne` and `run` reset the statement first, bind every parameter, and reset it
/// again when done, so a cached statement never holds a read snapshot open between uses; they bind
/// texts from the connection's `TextArena` and clear those bindings when done. The manual API
/// (`bind(_:at:)`, `step()`, `row()`, `reset()`) is there for streaming large results; it binds
/// copies SQLite makes.
///
/// # Thread safety
/// Not Sendable: it belongs to its connection and is used on that connection's thread only.
/// When the object goes away its compiled statement returns to the connection's cache.
final class Statement {
    /// The SQL this statement was compiled from (the statement cache's key).
    let sql: String
    let handle: OpaquePointer
    private let connection: SQLiteConnection
    /// The cache's entry when the compiled statement is lent by the connection's cache; nil:
    /// this object finalizes it.
    private let entry: StatementCache.Entry?

    init(sql: String, handle: OpaquePointer, connection: SQLiteConnection, entry: StatementCache.Entry?) {
        self.sql = sql
        self.handle = handle
        self.connection = connection
        self.entry = entry
    }

    deinit {
        if let entry {
            connection.statementCache.checkIn(entry)
        } else {
            sqlite3_finalize(handle)
        }
    }

    /// Number of parameters: the largest index (`?NNN`), counting a repeated name once.
    var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    /// Number of result columns (0 for statements that return no rows).
    var columnCount: Int { Int(sqlite3_column_count(handle)) }

    /// True when the statement does not write to the database.
    var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

    /// True between a `step()` and the `reset()` that ends it: the statement holds its read
    /// snapshot (or write) open.
    var isActive: Bool { sqlite3_stmt_busy(handle) != 0 }

    // MARK: Binding

    /// Binds `value` to the parameter at 1-based `index` (SQLite's numbering).
    /// - Throws: `SQLiteError.bind` when `index` is out of range or the statement is mid-step.
    func bind(_ value: some SQLiteBindable, at index: Int) throws(SQLiteError) {
        entry?.bindingsCleared = false
        try check(value.bindSQLite(to: handle, at: Int32(clamping: index)), parameter: { "?\(index)" })
    }

    /// Binds `value` to the parameter called `name`. Give the prefix the SQL uses (`:sid`, `@sid`,
    /// `$sid`); a bare `sid` is looked up as `:sid`, then `@sid`, then `$sid`.
    /// - Throws: `SQLiteError.bind` when no parameter has that name.
    func bind(_ value: some SQLiteBindable, named name: String) throws(SQLiteError) {
        entry?.bindingsCleared = false
        try check(value.bindSQLite(to: handle, at: try parameterIndex(name)), parameter: { name })
    }

    /// Binds `values` to parameters 1, 2, 3… in order.
    /// - Throws: `SQLiteError.bind` unless `values.count == parameterCount`: a missing value
    ///   would silently be NULL.
    func bind(_ values: [any SQLiteBindable]) throws(SQLiteError) {
        try bind(values, arena: nil)
    }

    /// `bind(_:)`; with an `arena`, for one execution whose end clears the bindings, texts are
    /// bound from the arena's copies (`SQLiteBindable.bindSQLite(to:at:arena:)`).
    private func bind(_ values: [any SQLiteBindable], arena: TextArena?) throws(SQLiteError) {
        entry?.bindingsCleared = false
        guard values.count == parameterCount else {
            throw .bind(parameter: "?\(min(values.count, parameterCount) + 1)", code: .range,
                        message: "statement has \(parameterCount) parameters, \(values.count) values given")
        }
        // By index, so each existential is opened in place rather than copied out.
        for offset in values.indices {
            let rc = if let arena { values[offset].bindSQLite(to: handle, at: Int32(offset + 1), arena: arena) }
                else { values[offset].bindSQLite(to: handle, at: Int32(offset + 1)) }
            try check(rc, parameter: { "?\(offset + 1)" })
        }
    }

    /// Binds each value to the parameter of that name (see `bind(_:named:)` for prefixes).
    /// - Throws: `SQLiteError.bind` for an unknown name, or when a parameter is left unbound.
    func bind(_ values: [String: any SQLiteBindable]) throws(SQLiteError) {
        try bind(values, arena: nil)
    }

    /// `bind(_:)` by name; `arena` as for positional values.
    private func bind(_ values: [String: any SQLiteBindable], arena: TextArena?) throws(SQLiteError) {
        entry?.bindingsCleared = false
        // Which parameters got a value: a bit each (Herald's statements have a handful), a set
        // beyond 64.
        var boundBits: UInt64 = 0
        var boundBeyond = Set<Int32>()
        for (name, value) in values {
            let index = try parameterIndex(name)
            let rc = if let arena { value.bindSQLite(to: handle, at: index, arena: arena) } else { value.bindSQLite(to: handle, at: index) }
            try check(rc, parameter: { name })
            if index <= 64 { boundBits |= 1 << UInt64(index - 1) } else { boundBeyond.insert(index) }
        }
        func isBound(_ index: Int) -> Bool {
            index <= 64 ? boundBits & (1 << UInt64(index - 1)) != 0 : boundBeyond.contains(Int32(index))
        }
        // Name the first parameter left unbound, so the error says what is missing.
        if let missing = (1..<(parameterCount + 1)).first(where: { !isBound($0) }) {
            let name = sqlite3_bind_parameter_name(handle, Int32(missing)).map { String(cString: $0) } ?? "?\(missing)"
            throw .bind(parameter: name, code: .range, message: "no value given for \(name) in `\(sql)`")
        }
    }

    /// Sets every parameter back to NULL.
    func clearBindings() {
        sqlite3_clear_bindings(handle)
    }

    private func parameterIndex(_ name: String) throws(SQLiteError) -> Int32 {
        // The usual case, a name with its prefix, looked up without building candidates.
        if let first = name.utf8.first, first == UInt8(ascii: ":") || first == UInt8(ascii: "@") || first == UInt8(ascii: "$") {
            let index = sqlite3_bind_parameter_index(handle, name)
            if index > 0 { return index }
            throw .bind(parameter: name, code: .range, message: "no parameter named \(name) in `\(sql)`")
        }
        for candidate in [":" + name, "@" + name, "$" + name] {
            let index = sqlite3_bind_parameter_index(handle, candidate)
            if index > 0 { return index }
        }
        throw .bind(parameter: name, code: .range, message: "no parameter named \(name) in `\(sql)`")
    }

    /// Throws for a bind call that failed.
    /// - Parameter parameter: the parameter's name for the error, made only when there is one.
    private func check(_ rc: Int32, parameter: () -> String) throws(SQLiteError) {
        guard rc == SQLITE_OK else {
            throw .bind(parameter: parameter(), code: SQLiteResultCode(rc), message: connection.errorMessage)
        }
    }

    // MARK: Stepping

    /// Runs the statement to its next row.
    /// - Returns: true when a row is available (read it with `row()`), false when done.
    /// - Throws: `.constraint`, `.busy` or `.step` with SQLite's extended result code and message.
    func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw connection.failure(rc) { .step(code: $0, message: $1) }
        }
    }

    /// Rewinds the statement so it can run again; bindings are kept. Ends its read snapshot.
    func reset() {
        // sqlite3_reset repeats the error of the last step, which `step()` threw already.
        sqlite3_reset(handle)
    }

    /// Column names in SELECT order.
    var columnNames: [String] {
        (0..<sqlite3_column_count(handle)).map { String(cString: sqlite3_column_name(handle, $0)) }
    }

    /// Copies the current row out; valid after `step()` returned true.
    /// - Throws: `SQLiteError.step` (`SQLITE_NOMEM`) when SQLite cannot produce a text or blob.
    func row() throws(SQLiteError) -> Row {
        try row(columns: columns)
    }

    /// The result columns, kept with the compiled statement when it is cached.
    private var columns: RowColumns {
        guard let entry else { return RowColumns(names: columnNames) }
        return connection.statementCache.columns(of: entry) { RowColumns(names: columnNames) }
    }

    private func row(columns: RowColumns) throws(SQLiteError) -> Row {
        var values: [SQLiteValue] = []
        values.reserveCapacity(columns.names.count)
        for column in 0..<Int32(columns.names.count) {
            values.append(try value(at: column))
        }
        return Row(columns: columns, values: values)
    }

    fileprivate func value(at column: Int32) throws(SQLiteError) -> SQLiteValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(handle, column))
        case SQLITE_TEXT:
            return .text(try text(at: column))
        case SQLITE_BLOB:
            let blob = sqlite3_column_blob(handle, column)
            let count = Int(sqlite3_column_bytes(handle, column))
            // A zero-length blob comes back as a NULL pointer.
            guard count > 0 else { return .blob([]) }
            guard let blob else { throw outOfMemory() }
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: count)))
        default:
            return .null
        }
    }

    /// The TEXT at `column` (its type checked by the caller).
    fileprivate func text(at column: Int32) throws(SQLiteError) -> String {
        // Pointer first, then byte count: the order SQLite documents as safe. The count keeps
        // embedded NULs.
        guard let text = sqlite3_column_text(handle, column) else { throw outOfMemory() }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    private func outOfMemory() -> SQLiteError {
        .step(code: .noMemory, message: connection.errorMessage)
    }

    // MARK: One-call execution

    /// Binds `values` positionally, runs the statement and returns every row.
    /// - Throws: `.bind`, `.constraint`, `.busy`, `.step`.
    func query(_ values: [any SQLiteBindable] = []) throws(SQLiteError) -> [Row] {
        let arena = rewind()
        defer { finish() }
        try bind(values, arena: arena)
        return try collectRows()
    }

    /// Binds `values` by name, runs the statement and returns every row.
    func query(_ values: [String: any SQLiteBindable]) throws(SQLiteError) -> [Row] {
        let arena = rewind()
        defer { finish() }
        try bind(values, arena: arena)
        return try collectRows()
    }

    /// Like `query` but returns only the first row (nil when there is none) and stops there.
    func queryOne(_ values: [any SQLiteBindable] = []) throws(SQLiteError) -> Row? {
        let arena = rewind()
        defer { finish() }
        try bind(values, arena: arena)
        return try step() ? try row() : nil
    }

    /// Like `query` but returns only the first row, binding by name.
    func queryOne(_ values: [String: any SQLiteBindable]) throws(SQLiteError) -> Row? {
        let arena = rewind()
        defer { finish() }
        try bind(values, arena: arena)
        return try step() ? try row() : nil
    }

    /// Binds `values` positionally and runs the statement to completion, discarding any rows.
    /// Read `SQLiteConnection.changes` / `lastInsertRowID` afterwards.
    func run(_ values: [any SQLiteBindable] = []) throws(SQLiteError) {
        let arena = rewind()
        defer { finish() }
        try bind(values, arena: arena)
        while try step() {}
    }

    /// Binds `values` by name and runs the statement to completion, discarding any rows.
    func run(_ values: [String: any SQLiteBindable]) throws(SQLiteError) {
        let arena = rewind()
        defer { finish() }
        try bind(values, arena: arena)
        while try step() {}
    }

    /// Binds `values` by name, runs the statement and makes one value of each row with `make`,
    /// which reads the row's columns where SQLite holds them (`Columns`): no `Row` is copied out
    /// first. For reads of many rows of one shape (issue 17: a device read built a `Row` of 15
    /// values, then a record from it, 6.9k instructions a device; read in place, 6.2k).
    /// - Throws: `.bind`, `.constraint`, `.busy`, `.step`, and what `make` throws.
    func query<T>(_ values: [String: any SQLiteBindable], _ make: (Columns) throws(SQLiteError) -> T) throws(SQLiteError) -> [T] {
        let arena = rewind()
        defer { finish() }
        try bind(values, arena: arena)
        var made: [T] = []
        let columns = Columns(statement: self)
        while try step() { made.append(try make(columns)) }
        return made
    }

    /// The current row of a statement being stepped, read in place by 0-based column index:
    /// valid only inside `query(_:_:)`'s `make`, which must not keep it.
    struct Columns {
        fileprivate unowned(unsafe) let statement: Statement

        /// Decodes the column at 0-based `index`.
        /// - Throws: `SQLiteError.decode` when the value is not a `T`; `.step` (`SQLITE_NOMEM`)
        ///   when SQLite cannot produce a text or blob.
        subscript<T: SQLiteDecodable>(_ index: Int32, as type: T.Type = T.self) -> T {
            get throws(SQLiteError) {
                let value = try statement.value(at: index)
                guard let decoded = T(sqliteValue: value) else {
                    let name = sqlite3_column_name(statement.handle, index).map { String(cString: $0) } ?? "?\(index)"
                    throw .decode(column: name, expected: String(describing: T.self), found: value.typeName)
                }
                return decoded
            }
        }

        /// The TEXT at 0-based `index`, read straight from SQLite: no `SQLiteValue` made, boxed
        /// and matched per column (issue 17: a device row's 15 columns, ~6k instructions a push
        /// through the generic subscript). Any other type goes through the subscript, which
        /// throws its decode error.
        func text(_ index: Int32) throws(SQLiteError) -> String {
            guard sqlite3_column_type(statement.handle, index) == SQLITE_TEXT else { return try self[index, as: String.self] }
            return try statement.text(at: index)
        }

        /// `text(_:)`, or nil for NULL.
        func optionalText(_ index: Int32) throws(SQLiteError) -> String? {
            switch sqlite3_column_type(statement.handle, index) {
            case SQLITE_TEXT: return try statement.text(at: index)
            case SQLITE_NULL: return nil
            default: return try self[index, as: String?.self]
            }
        }

        /// The INTEGER at 0-based `index`, read straight from SQLite (see `text(_:)`).
        func integer(_ index: Int32) throws(SQLiteError) -> Int64 {
            guard sqlite3_column_type(statement.handle, index) == SQLITE_INTEGER else { return try self[index, as: Int64.self] }
            return sqlite3_column_int64(statement.handle, index)
        }

        /// `integer(_:)`, or nil for NULL.
        func optionalInteger(_ index: Int32) throws(SQLiteError) -> Int64? {
            switch sqlite3_column_type(statement.handle, index) {
            case SQLITE_INTEGER: return sqlite3_column_int64(statement.handle, index)
            case SQLITE_NULL: return nil
            default: return try self[index, as: Int64?.self]
            }
        }
    }

    /// Readies the statement for a one-call execution. - Returns: the arena its texts are bound
    /// from, emptied (the execution before this one, of any statement, cleared its bindings).
    private func rewind() -> TextArena {
        sqlite3_reset(handle)
        // No sqlite3_clear_bindings here: every caller binds each parameter before its first step
        // (`bind` checks the count, or names every one), and `finish()` cleared the arena's
        // bindings of the last one-call use. Issue 17: a clear walks every parameter, ~3k
        // instructions a notification over its statements, twice.
        connection.textArena.reset()
        return connection.textArena
    }

    /// Ends a one-call execution: no read snapshot left open, and no binding left pointing into
    /// the arena, which the next execution reuses.
    private func finish() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        entry?.bindingsCleared = true
    }

    private func collectRows() throws(SQLiteError) -> [Row] {
        var rows: [Row] = []
        guard try step() else { return rows }
        // Read after the first step: a schema change prepares the statement again there, and
        // `SELECT *` may then have other columns.
        let columns = self.columns
        repeat { rows.append(try row(columns: columns)) } while try step()
        return rows
    }
}

@available(*, unavailable, message: "a Statement belongs to its connection's thread")
extension Statement: Sendable {}
