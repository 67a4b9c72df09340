// Bindings and strict decodings between SQLite values and the standard library types Herald uses.

extension SQLiteValue: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { self }
    init?(sqliteValue: SQLiteValue) { self = sqliteValue }
}

extension Int64: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { .integer(self) }
    init?(sqliteValue: SQLiteValue) {
        guard case .integer(let value) = sqliteValue else { return nil }
        self = value
    }
}

extension Int: SQLiteBindable, SQLiteDecodable {
    var sqliteValue: SQLiteValue { .integer(Int64(self)) }
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

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    var sqliteValue: SQLiteValue { self?.sqliteValue ?? .null }
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
