/// Everything the SQLite layer can throw, by SQLite result code. Each case carries SQLite's own
/// message text so a log line says what SQLite said, not only that something failed.
///
/// It never crosses the port: the repositories and `SQLiteStorage` map it onto HeraldCore's
/// `StorageError` by meaning (SQLiteError+StorageError.swift).
enum SQLiteError: Error, Equatable, Sendable {
    /// `sqlite3_open_v2` or the connection set-up pragmas failed for `path`.
    case open(path: String, code: SQLiteResultCode, message: String)
    /// `sql` did not compile (syntax error, unknown table or column, more than one statement…).
    case prepare(sql: String, code: SQLiteResultCode, message: String)
    /// A value could not be bound: unknown parameter name, index out of range, wrong value count.
    /// `parameter` is the name (`:sid`) or the 1-based position (`?3`).
    case bind(parameter: String, code: SQLiteResultCode, message: String)
    /// `sqlite3_step` (or COMMIT, or a script statement) failed; `code` is the extended result code.
    case step(code: SQLiteResultCode, message: String)
    /// A `SQLITE_CONSTRAINT` failure, split out so a unique violation can become a 409 or an upsert.
    case constraint(ConstraintKind, message: String)
    /// The database stayed locked by another connection for longer than the busy timeout
    /// (`SQLITE_BUSY`, including `SQLITE_BUSY_SNAPSHOT`). Retrying later may succeed.
    case busy(message: String)
    /// A column could not be read as the requested Swift type: NULL into a non-optional, TEXT into
    /// an integer, a missing column name. `expected` is the Swift type, `found` the SQLite type.
    case decode(column: String, expected: String, found: String)
    /// Migration `version` failed (its SQL, or the foreign-key check after it), or the database is
    /// at a `version` newer than this build knows.
    case migration(version: Int, message: String)
    /// Opened without migrating, the database is at schema version `found`, not this build's
    /// `expected` (`Migrator.requireCurrent`).
    case schemaMismatch(found: Int, expected: Int)
    /// The API was used in a way that would leave a connection unusable, e.g. a `Database.write`
    /// body returned with its transaction still open (it was rolled back).
    case misuse(message: String)
    /// The `Database` was closed; no connection is left to run the work.
    case closed

    /// Which constraint a `SQLITE_CONSTRAINT` failure broke, from the extended result code.
    enum ConstraintKind: Equatable, Sendable {
        case unique
        case primaryKey
        case foreignKey
        case check
        case notNull
        /// Another member of the family (`SQLITE_CONSTRAINT_TRIGGER`, `_ROWID`, …), kept as-is.
        case other(SQLiteResultCode)
    }
}

extension SQLiteError {
    /// True when the write failed for want of space (`SQLITE_FULL`, including an I/O error the
    /// OS gave as `ENOSPC`/`EDQUOT`; see `SQLiteResultCode.forVolumeFull`).
    var isDiskFull: Bool {
        switch self {
        case .open(_, let code, _), .prepare(_, let code, _), .step(let code, _): code.primary == .full
        default: false
        }
    }

    /// True for a UNIQUE or PRIMARY KEY violation: the row exists already.
    var isUniqueViolation: Bool {
        if case .constraint(let kind, _) = self { return kind == .unique || kind == .primaryKey }
        return false
    }

    /// Maps a failed result code to the matching case. Constraint and busy codes get their own cases
    /// whatever the call was; every other code becomes `fallback(code)`.
    static func classify(
        _ code: SQLiteResultCode, message: String, fallback: (SQLiteResultCode) -> SQLiteError
    ) -> SQLiteError {
        switch code.primary {
        case .constraint:
            let kind: ConstraintKind
            switch code {
            case .constraintUnique: kind = .unique
            case .constraintPrimaryKey: kind = .primaryKey
            case .constraintForeignKey: kind = .foreignKey
            case .constraintCheck: kind = .check
            case .constraintNotNull: kind = .notNull
            default: kind = .other(code)
            }
            return .constraint(kind, message: message)
        case .busy:
            return .busy(message: message)
        default:
            return fallback(code)
        }
    }
}

extension SQLiteError: CustomStringConvertible {
    var description: String {
        switch self {
        case .open(let path, let code, let message): "storage: cannot open '\(path)': \(message) [\(code)]"
        case .prepare(let sql, let code, let message): "storage: cannot prepare `\(sql)`: \(message) [\(code)]"
        case .bind(let parameter, let code, let message): "storage: cannot bind \(parameter): \(message) [\(code)]"
        case .step(let code, let message): "storage: \(message) [\(code)]"
        case .constraint(let kind, let message): "storage: \(kind) constraint failed: \(message)"
        case .busy(let message): "storage: database busy: \(message)"
        case .decode(let column, let expected, let found): "storage: column '\(column)' is \(found), expected \(expected)"
        case .migration(let version, let message): "storage: migration \(version): \(message)"
        case .schemaMismatch(let found, let expected): "storage: the database is at schema version \(found), this build's is \(expected)"
        case .misuse(let message): "storage: misuse: \(message)"
        case .closed: "storage: database is closed"
        }
    }
}
