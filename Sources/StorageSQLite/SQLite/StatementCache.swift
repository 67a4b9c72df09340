import CSQLite

/// A connection's idle prepared statements, keyed by SQL text.
///
/// Herald's SQL is a fixed set of string constants, so compiling each once per connection and
/// reusing it saves the parse and plan on every request. A statement is *checked out* while a
/// `Statement` object uses it and *checked in* (reset, bindings cleared) when that object goes
/// away, so two live `Statement`s never share one `sqlite3_stmt` — a nested query with the same
/// SQL simply compiles a second one, which is then finalized or cached on check-in.
///
/// Bounded by `capacity`: a statement checked in while the cache is full is finalized, not cached.
/// Owned by its connection, and like it used by one thread at a time.
final class StatementCache {
    let capacity: Int
    private var idle: [String: OpaquePointer] = [:]
    /// Compilations (`sqlite3_prepare_v3` calls) through the cache: tests read it to see reuse.
    private(set) var compiledCount = 0

    init(capacity: Int) {
        precondition(capacity >= 0, "statement cache capacity must not be negative")
        self.capacity = capacity
    }

    /// Number of idle cached statements.
    var count: Int { idle.count }

    /// Takes the idle statement for `sql`, if any; the caller owns it until `checkIn`.
    func checkOut(_ sql: String) -> OpaquePointer? {
        idle.removeValue(forKey: sql)
    }

    func noteCompiled() { compiledCount += 1 }

    /// Returns a statement: reset (which also ends any read snapshot it held) and cached, or
    /// finalized when the cache is full or already holds one for `sql`.
    /// Result column names of the cached statements, by handle: reading them (a `String` per
    /// column and a name → index map) cost more than the small queries themselves.
    private var columnsByHandle: [OpaquePointer: RowColumns] = [:]

    /// The column names of cached statement `handle`, made by `make` on first use. Checked
    /// against the statement's column count, which a schema change could alter (SQLite then
    /// prepares the statement again behind the same handle).
    func columns(of handle: OpaquePointer, make: () -> RowColumns) -> RowColumns {
        if let known = columnsByHandle[handle], known.names.count == Int(sqlite3_column_count(handle)) { return known }
        let made = make()
        columnsByHandle[handle] = made
        return made
    }

    func checkIn(_ sql: String, _ handle: OpaquePointer) {
        // The reset's result repeats the last step's error, which was reported already.
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        if idle.count < capacity, idle[sql] == nil {
            idle[sql] = handle
        } else {
            columnsByHandle[handle] = nil
            sqlite3_finalize(handle)
        }
    }

    /// Finalizes every idle statement; the connection calls it before closing.
    func finalizeAll() {
        for handle in idle.values { sqlite3_finalize(handle) }
        idle.removeAll()
        columnsByHandle.removeAll()
    }
}
