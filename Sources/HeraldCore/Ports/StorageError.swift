/// Why a storage port failed, by what it means for the caller rather than by engine: the API
/// answers `busy` and `unavailable` with 503, `diskFull` with 507, a unique `constraint` with 409
/// (or takes it as a cue to upsert), and the rest with 500. Each case carries the engine's own
/// text, so a log line says what the database said.
public enum StorageError: Error, Equatable, Sendable {
    /// Another connection or process held the data longer than the wait allowed (SQLite
    /// `SQLITE_BUSY`/`SQLITE_LOCKED`). Retrying later may succeed.
    case busy(message: String)
    /// The storage cannot be used right now: it cannot be opened, an I/O error, out of memory.
    case unavailable(message: String)
    /// No answer within the caller's wait (`BoundedStorage`, `waitMilliseconds`): the unit may still
    /// be queued or running, so its outcome is unknown; routes answer it like `unavailable`.
    case stalled(waitMilliseconds: Int)
    /// The disk (or the database's size limit) is full: no write succeeds until space is freed.
    case diskFull(message: String)
    /// A constraint refused the write: a duplicate key, a value outside its CHECK list, a
    /// missing reference.
    case constraint(ConstraintKind, message: String)
    /// The stored data is damaged, or the file is not a database.
    case corrupt(message: String)
    /// A write in a read unit of work, or to storage opened read-only.
    case readOnly(message: String)
    /// A stored value could not be read as the model's type (`field`: the stored name;
    /// `expected`: the Swift type; `found`: what was stored).
    case decode(field: String, expected: String, found: String)
    /// Migration `version` failed, or the storage's schema is newer than this build knows.
    case migration(version: Int, message: String)
    /// Storage opened without migrating (an admin command beside a running server, `herald jobs
    /// retry`) is not at exactly this build's schema: `found` older than `expected` wants `herald
    /// migrate` first, newer wants a newer build. Nothing was changed.
    /// For PostgreSQL `found` is the newest version applied when this build does not know it,
    /// else the last version before the first one missing.
    case schemaMismatch(found: Int, expected: Int)
    /// The port or the engine was used in a way it does not allow (a programming error).
    case misuse(message: String)
    /// The storage was closed; nothing runs any more.
    case closed
    /// Any other failure of the engine, with its text.
    case failed(message: String)

    /// Which constraint a `.constraint` failure broke.
    public enum ConstraintKind: Equatable, Sendable {
        case unique
        case primaryKey
        case foreignKey
        case check
        case notNull
        /// Another kind of constraint (a trigger's, …); the message says which.
        case other
    }
}

extension StorageError {
    /// True for a UNIQUE or PRIMARY KEY violation: the record exists already.
    public var isUniqueViolation: Bool {
        if case .constraint(let kind, _) = self { return kind == .unique || kind == .primaryKey }
        return false
    }
}

extension StorageError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .busy(let message): "storage: database busy: \(message)"
        case .unavailable(let message): "storage: unavailable: \(message)"
        case .stalled(let waitMilliseconds):
            "storage: unavailable: storage did not answer within \(waitMilliseconds) ms (stalled); a write may still complete: retry with its idempotency key"
        case .diskFull(let message): "storage: disk full: \(message)"
        case .constraint(let kind, let message): "storage: \(kind) constraint failed: \(message)"
        case .corrupt(let message): "storage: corrupt: \(message)"
        case .readOnly(let message): "storage: read-only: \(message)"
        case .decode(let field, let expected, let found): "storage: column '\(field)' is \(found), expected \(expected)"
        case .migration(let version, let message): "storage: migration \(version): \(message)"
        case .schemaMismatch(let found, let expected):
            found < expected
                ? "storage: the database is at schema version \(found), older than this build's \(expected): run `herald migrate` with this build first (it needs the server stopped)"
                : "storage: the database is at schema version \(found), newer than this build's \(expected): use the build that migrated it"
        case .misuse(let message): "storage: misuse: \(message)"
        case .closed: "storage: database is closed"
        case .failed(let message): "storage: \(message)"
        }
    }
}
