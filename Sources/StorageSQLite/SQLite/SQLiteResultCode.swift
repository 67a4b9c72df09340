import CSQLite
import Glibc

/// A SQLite result code, primary (`SQLITE_BUSY` = 5) or extended (`SQLITE_CONSTRAINT_UNIQUE` =
/// 2067 = 19 | 8 << 8). Connections enable extended codes, so errors carry the precise one.
///
/// The extended constants are declared here because Swift does not import sqlite3.h's
/// `(SQLITE_X | (n<<8))` macros ("structure not supported").
struct SQLiteResultCode: RawRepresentable, Hashable, Sendable {
    let rawValue: Int32
    init(rawValue: Int32) { self.rawValue = rawValue }
    init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The low byte: the family an extended code belongs to.
    var primary: SQLiteResultCode { SQLiteResultCode(rawValue & 0xff) }

    // Primary codes (sqlite.org/rescode.html).
    static let ok = SQLiteResultCode(SQLITE_OK)
    static let error = SQLiteResultCode(SQLITE_ERROR)
    static let busy = SQLiteResultCode(SQLITE_BUSY)
    static let locked = SQLiteResultCode(SQLITE_LOCKED)
    static let readOnly = SQLiteResultCode(SQLITE_READONLY)
    static let constraint = SQLiteResultCode(SQLITE_CONSTRAINT)
    static let mismatch = SQLiteResultCode(SQLITE_MISMATCH)
    static let misuse = SQLiteResultCode(SQLITE_MISUSE)
    static let range = SQLiteResultCode(SQLITE_RANGE)
    static let noMemory = SQLiteResultCode(SQLITE_NOMEM)
    static let permission = SQLiteResultCode(SQLITE_PERM)
    static let ioError = SQLiteResultCode(SQLITE_IOERR)
    static let corrupt = SQLiteResultCode(SQLITE_CORRUPT)
    static let full = SQLiteResultCode(SQLITE_FULL)
    static let cantOpen = SQLiteResultCode(SQLITE_CANTOPEN)
    static let protocolError = SQLiteResultCode(SQLITE_PROTOCOL)
    static let notADatabase = SQLiteResultCode(SQLITE_NOTADB)
    static let row = SQLiteResultCode(SQLITE_ROW)
    static let done = SQLiteResultCode(SQLITE_DONE)

    // Extended codes callers and tests match on.
    static let busySnapshot = SQLiteResultCode(SQLITE_BUSY | (2 << 8))
    static let constraintCheck = SQLiteResultCode(SQLITE_CONSTRAINT | (1 << 8))
    static let constraintForeignKey = SQLiteResultCode(SQLITE_CONSTRAINT | (3 << 8))
    static let constraintNotNull = SQLiteResultCode(SQLITE_CONSTRAINT | (5 << 8))
    static let constraintPrimaryKey = SQLiteResultCode(SQLITE_CONSTRAINT | (6 << 8))
    static let constraintUnique = SQLiteResultCode(SQLITE_CONSTRAINT | (8 << 8))
}

extension SQLiteResultCode {
    /// The code to report for a failure whose OS error was `systemErrno`: SQLite answers
    /// `SQLITE_FULL` only when a write to the database or WAL file comes up short, but a full
    /// volume also fails creating the `-wal`/`-shm` files, growing the shared memory, or opening
    /// (`SQLITE_IOERR_*`, `SQLITE_CANTOPEN`), with `ENOSPC` or `EDQUOT` as the OS's reason. Those
    /// become `SQLITE_FULL` too, the original code kept in the message, so a full disk has one
    /// meaning (`StorageError.diskFull`) whichever call met it.
    func forVolumeFull(systemErrno: Int32, message: String) -> (code: SQLiteResultCode, message: String) {
        guard primary == .ioError || primary == .cantOpen, systemErrno == ENOSPC || systemErrno == EDQUOT else {
            return (self, message)
        }
        let reason = systemErrno == ENOSPC ? "ENOSPC" : "EDQUOT"
        return (.full, "\(message) [\(self), \(reason)]")
    }
}

extension SQLiteResultCode: CustomStringConvertible {
    /// `"2067 constraint failed"`: the number (for lookup in sqlite.org/rescode.html) and
    /// SQLite's English text for it.
    var description: String { "\(rawValue) \(String(cString: sqlite3_errstr(rawValue)))" }
}
