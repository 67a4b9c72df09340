import CSQLite

/// `SQLITE_TRANSIENT` (`(sqlite3_destructor_type)-1`, a cast macro Swift does not import): SQLite
/// copies the bytes during the bind call, so Swift's buffer may go away right after.
let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

// Bindings and strict decodings between SQLite values and the standard library types Herald uses.

extension SQLiteValue: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { self }

    func bindSQLite(to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch self {
        case .null:
            sqlite3_bind_null(statement, index)
        case .integer(let integer):
            sqlite3_bind_int64(statement, index, integer)
        case .real(let real):
            sqlite3_bind_double(statement, index, real)
        case .text(let text):
            text.bindSQLite(to: statement, at: index)
        case .blob(let bytes):
            bytes.withUnsafeBytes { raw in
                // Same as text: a nil pointer would bind NULL, so an empty blob is a zero-length blob.
                guard let base = raw.baseAddress, !raw.isEmpty else { return sqlite3_bind_zeroblob(statement, index, 0) }
                return sqlite3_bind_blob64(statement, index, base, UInt64(raw.count), sqliteTransient)
            }
        }
    }
    func bindSQLite(to statement: OpaquePointer, at index: Int32, arena: TextArena) -> Int32 {
        guard case .text(let text) = self else { return bindSQLite(to: statement, at: index) }
        return text.bindSQLite(to: statement, at: index, arena: arena)
    }
    init?(sqliteValue: SQLiteValue) { self = sqliteValue }
}

extension Int64: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { .integer(self) }
    func bindSQLite(to statement: OpaquePointer, at index: Int32) -> Int32 { sqlite3_bind_int64(statement, index, self) }
    init?(sqliteValue: SQLiteValue) {
        guard case .integer(let value) = sqliteValue else { return nil }
        self = value
    }
}

extension Int: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { .integer(Int64(self)) }
    func bindSQLite(to statement: OpaquePointer, at index: Int32) -> Int32 { sqlite3_bind_int64(statement, index, Int64(self)) }
    init?(sqliteValue: SQLiteValue) {
        guard case .integer(let value) = sqliteValue, let exact = Int(exactly: value) else { return nil }
        self = exact
    }
}

extension Int32: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { .integer(Int64(self)) }
    /// Fails (a decode error) when the stored integer does not fit in 32 bits.
    init?(sqliteValue: SQLiteValue) {
        guard case .integer(let value) = sqliteValue, let exact = Int32(exactly: value) else { return nil }
        self = exact
    }
}

extension Double: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { .real(self) }
    /// Reads REAL, and INTEGER when it converts exactly (`SUM`, `AVG` of whole numbers, REAL
    /// columns written with integers).
    init?(sqliteValue: SQLiteValue) {
        switch sqliteValue {
        case .real(let value): self = value
        case .integer(let value):
            guard let exact = Double(exactly: value) else { return nil }
            self = exact
        default: return nil
        }
    }
}

extension Bool: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
    func bindSQLite(to statement: OpaquePointer, at index: Int32) -> Int32 { sqlite3_bind_int64(statement, index, self ? 1 : 0) }
    /// Only 0 and 1 decode; any other integer is a decode error rather than a guess.
    init?(sqliteValue: SQLiteValue) {
        switch sqliteValue {
        case .integer(0): self = false
        case .integer(1): self = true
        default: return nil
        }
    }
}

extension String: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { .text(self) }

    func bindSQLite(to statement: OpaquePointer, at index: Int32) -> Int32 {
        var text = self
        return text.withUTF8 { utf8 in
            // A nil pointer would bind NULL; empty text must stay empty text.
            guard let base = utf8.baseAddress, !utf8.isEmpty else {
                return sqlite3_bind_text(statement, index, "", 0, sqliteTransient)
            }
            return base.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                sqlite3_bind_text64(statement, index, $0, UInt64(utf8.count), sqliteTransient, UInt8(SQLITE_UTF8))
            }
        }
    }

    func bindSQLite(to statement: OpaquePointer, at index: Int32, arena: TextArena) -> Int32 {
        // The bytes in place (a native or small string: no copy of the string, unlike `withUTF8`
        // on a `var`); a string without contiguous UTF-8 (bridged) goes the copying way.
        let bound = utf8.withContiguousStorageIfAvailable { utf8 -> Int32 in
            // Empty and overlong texts too (`copy` answers nil).
            guard let copy = arena.copy(utf8) else { return bindSQLite(to: statement, at: index) }
            // SQLITE_STATIC (nil): the arena keeps the bytes until the execution's bindings are cleared.
            return copy.withMemoryRebound(to: CChar.self, capacity: utf8.count) {
                sqlite3_bind_text64(statement, index, $0, UInt64(utf8.count), nil, UInt8(SQLITE_UTF8))
            }
        }
        return bound ?? bindSQLite(to: statement, at: index)
    }
    init?(sqliteValue: SQLiteValue) {
        guard case .text(let value) = sqliteValue else { return nil }
        self = value
    }
}

extension Array: SQLiteBindable, SQLiteDecodable where Element == UInt8 {
    var sqliteValue: SQLiteValue { .blob(self) }
    init?(sqliteValue: SQLiteValue) {
        guard case .blob(let value) = sqliteValue else { return nil }
        self = value
    }
}

/// Specialised for the wrapped types Herald's statements bind: through `[any SQLiteBindable]`
/// an optional's witness is this generic code, which copied the value and called the wrapped
/// type's witness through its metadata (issue 17: ~10k binds a second at the choke point, ~5k
/// instructions a notification on the writer). `@_specialize` makes each a specialised copy and
/// starts the generic body with a check of `Wrapped` that jumps to it.
extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    var sqliteValue: SQLiteValue { self?.sqliteValue ?? .null }
    @_specialize(where Wrapped == String)
    @_specialize(where Wrapped == Int64)
    @_specialize(where Wrapped == Int)
    @_specialize(where Wrapped == Bool)
    func bindSQLite(to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch self {
        case .some(let value): value.bindSQLite(to: statement, at: index)
        case .none: sqlite3_bind_null(statement, index)
        }
    }
    @_specialize(where Wrapped == String)
    @_specialize(where Wrapped == Int64)
    @_specialize(where Wrapped == Int)
    @_specialize(where Wrapped == Bool)
    func bindSQLite(to statement: OpaquePointer, at index: Int32, arena: TextArena) -> Int32 {
        switch self {
        case .some(let value): value.bindSQLite(to: statement, at: index, arena: arena)
        case .none: sqlite3_bind_null(statement, index)
        }
    }
}

extension Optional: SQLiteDecodable where Wrapped: SQLiteDecodable {
    /// NULL decodes as `nil`; any other value must decode as `Wrapped`.
    init?(sqliteValue: SQLiteValue) {
        if case .null = sqliteValue {
            self = .none
        } else if let wrapped = Wrapped(sqliteValue: sqliteValue) {
            self = .some(wrapped)
        } else {
            return nil
        }
    }
}
