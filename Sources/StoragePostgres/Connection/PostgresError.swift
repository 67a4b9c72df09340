import HeraldCore

/// A failure of libpq or of the server, as the adapter sees it. Never leaves the adapter: the
/// repositories and `PostgresStorage` turn it into the `StorageError` of the same meaning.
enum PostgresError: Error, Equatable {
    /// No connection could be made (refused, unknown host, bad credentials, timeout), or the
    /// adapter is waiting out its reconnect backoff.
    case connect(message: String)
    /// The connection broke during a call: what the call did is unknown to the caller.
    case connectionLost(message: String)
    /// The server did not answer a statement within the client-side deadline (`milliseconds`):
    /// stopped, frozen or cut off. The connection was closed; what the call did is unknown.
    case timedOut(milliseconds: Int)
    /// The server refused a statement. `sqlState`: the five-character SQLSTATE (PostgreSQL
    /// "Appendix A. Error Codes"); `constraint`: the constraint's name when one was broken.
    case server(sqlState: String, message: String, constraint: String?)
    /// A value the server sent could not be read as the Swift type (`column`: its name;
    /// `expected`: the Swift type; `found`: the text, or `NULL`).
    case decode(column: String, expected: String, found: String)
    /// A migration failed, or the database's schema is newer than this build.
    case migration(version: Int, message: String)
    /// Opened without migrating, the database's applied versions are not exactly this build's
    /// (`PostgresMigrator.requireCurrent`).
    case schemaMismatch(found: Int, expected: Int)
    /// The adapter was used in a way it does not allow (a programming error).
    case misuse(message: String)
    /// The storage was closed.
    case closed

    /// Whether re-running the whole unit of work may succeed: a serialization failure (40001)
    /// or a deadlock (40P01), whose transaction the server rolled back.
    var isRetryableConflict: Bool {
        if case .server(let state, _, _) = self { return state == "40001" || state == "40P01" }
        return false
    }
}

extension StorageError {
    /// The port's meaning of a PostgreSQL failure, by SQLSTATE class: a lost or impossible
    /// connection, `57P*` (shutting down) and `08*` → `.unavailable`; `23*` → `.constraint`;
    /// `40*`, `55P03` and `57014` (a timeout) → `.busy`; `53100` → `.diskFull`; `25006` →
    /// `.readOnly`; `XX001`/`XX002` → `.corrupt`; `42*` → `.misuse`; the rest `.failed`.
    init(_ error: PostgresError) {
        switch error {
        case .connect(let message): self = .unavailable(message: "PostgreSQL: \(message)")
        case .connectionLost(let message): self = .unavailable(message: "PostgreSQL connection lost: \(message)")
        case .timedOut(let milliseconds):
            self = .unavailable(message: "PostgreSQL did not answer within \(milliseconds) ms; the connection was closed")
        case .decode(let column, let expected, let found): self = .decode(field: column, expected: expected, found: found)
        case .migration(let version, let message): self = .migration(version: version, message: message)
        case .schemaMismatch(let found, let expected): self = .schemaMismatch(found: found, expected: expected)
        case .misuse(let message): self = .misuse(message: message)
        case .closed: self = .closed
        case .server(let state, let message, let constraint):
            let text = "\(message) [\(state)]"
            switch state {
            case "23505": self = .constraint(constraint?.hasSuffix("_pkey") == true ? .primaryKey : .unique, message: text)
            case "23503": self = .constraint(.foreignKey, message: text)
            case "23514": self = .constraint(.check, message: text)
            case "23502": self = .constraint(.notNull, message: text)
            case "53100": self = .diskFull(message: text)
            case "25006": self = .readOnly(message: text)
            case "55P03", "57014": self = .busy(message: text)
            case "XX001", "XX002": self = .corrupt(message: text)
            default:
                switch state.prefix(2) {
                case "23": self = .constraint(.other, message: text)
                case "40": self = .busy(message: text)
                case "08", "57", "53": self = .unavailable(message: text)
                case "42": self = .misuse(message: text)
                default: self = .failed(message: text)
                }
            }
        }
    }

    /// Any error as the port gives it: a `PostgresError` mapped, anything else unchanged.
    static func mapped(_ error: any Error) -> any Error {
        if let error = error as? PostgresError { return StorageError(error) }
        return error
    }
}

/// Runs one adapter-layer call for a repository, giving its failure the port's meaning.
@discardableResult
func mapped<T>(_ body: () throws -> T) throws(StorageError) -> T {
    do {
        return try body()
    } catch let error as PostgresError {
        throw StorageError(error)
    } catch let error as StorageError {
        throw error
    } catch {
        throw .failed(message: "\(error)")
    }
}
