import HeraldCore

extension StorageError {
    /// The port's meaning of a SQLite failure, by result code whatever the call was: busy or
    /// locked → `.busy`; full → `.diskFull`; I/O, cannot open, out of memory, permission →
    /// `.unavailable`; corrupt, not a database → `.corrupt`; read-only → `.readOnly`; a
    /// statement that does not compile or bind, or misuse → `.misuse`; the rest `.failed`.
    init(_ error: SQLiteError) {
        switch error {
        case .open(let path, let code, let message):
            self = Self.meaning(of: code, "cannot open '\(path)': \(message) [\(code)]") ?? .unavailable(message: "cannot open '\(path)': \(message) [\(code)]")
        case .prepare(let sql, let code, let message):
            self = Self.meaning(of: code, message) ?? .misuse(message: "cannot prepare `\(sql)`: \(message) [\(code)]")
        case .bind(let parameter, let code, let message):
            self = .misuse(message: "cannot bind \(parameter): \(message) [\(code)]")
        case .step(let code, let message):
            self = Self.meaning(of: code, message) ?? .failed(message: "\(message) [\(code)]")
        case .constraint(let kind, let message):
            let meaning: ConstraintKind = switch kind {
            case .unique: .unique
            case .primaryKey: .primaryKey
            case .foreignKey: .foreignKey
            case .check: .check
            case .notNull: .notNull
            case .other: .other
            }
            self = .constraint(meaning, message: message)
        case .busy(let message): self = .busy(message: message)
        case .decode(let column, let expected, let found): self = .decode(field: column, expected: expected, found: found)
        case .migration(let version, let message): self = .migration(version: version, message: message)
        case .schemaMismatch(let found, let expected): self = .schemaMismatch(found: found, expected: expected)
        case .misuse(let message): self = .misuse(message: message)
        case .closed: self = .closed
        }
    }

    /// Any error as the port gives it: a `SQLiteError` mapped, anything else unchanged.
    static func mapped(_ error: any Error) -> any Error {
        if let error = error as? SQLiteError { return StorageError(error) }
        return error
    }

    private static func meaning(of code: SQLiteResultCode, _ message: String) -> StorageError? {
        switch code.primary {
        case .busy, .locked: .busy(message: message)
        case .full: .diskFull(message: message)
        case .ioError, .cantOpen, .noMemory, .permission, .protocolError: .unavailable(message: "\(message) [\(code)]")
        case .corrupt, .notADatabase: .corrupt(message: "\(message) [\(code)]")
        case .readOnly: .readOnly(message: message)
        case .misuse, .range: .misuse(message: "\(message) [\(code)]")
        default: nil
        }
    }
}

/// Runs one SQLite-layer call for a repository, giving its failure the port's meaning.
@inline(__always)
func mapped<T>(_ body: () throws(SQLiteError) -> T) throws(StorageError) -> T {
    do {
        return try body()
    } catch {
        throw StorageError(error)
    }
}
