import Glibc

/// One server per SQLite database (ADR 0017): an exclusive `flock` on `<database>-lock`, held for
/// the process's life. The start's release of leases and the lease floor both rely on one process
/// holding every lease of the file; a second server would release the first's leases and send its
/// pushes twice. The kernel drops the lock when the descriptor's process ends, however it ends, so
/// a `kill -9` leaves no stale lock (the file itself stays, and means nothing while unlocked). The
/// holder writes its pid into the file, for the refusal's message.
///
/// A value without a deinit: the descriptor stays open (and the lock held) until `release()` or
/// the process's end, whatever the value's lifetime.
public struct SQLiteProcessLock: Sendable {
    /// The lock file: the database's path with `-lock` after it.
    public let path: String
    private let descriptor: Int32

    /// Why the lock could not be taken.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// Another process holds it: a `herald serve` or `herald migrate` on the same file.
        /// `holderPID` is the pid it wrote, when readable.
        case held(databasePath: String, lockPath: String, holderPID: Int32?)
        /// The lock file cannot be opened or locked (a read-only volume, an unwritable
        /// directory): `reason` is the system's, lower-cased.
        case unusable(databasePath: String, lockPath: String, reason: String)

        public var description: String {
            switch self {
            case let .held(_, lockPath, pid):
                let holder = pid.map { "another herald process (pid \($0))" } ?? "another herald process"
                return "the database is held by \(holder) through its lock file '\(lockPath)'; refusing to start: "
                    + "one herald server per SQLite database (stop the other one, or give this one its own HERALD_DATABASE)"
            case let .unusable(_, lockPath, reason):
                return "cannot lock the database through '\(lockPath)' (\(reason)): the database's directory must be writable"
            }
        }
    }

    /// Takes the lock of the database at `databasePath`, creating the lock file if needed. Does
    /// not wait: a held lock is refused at once.
    /// - Returns: the lock, held; nil for an in-memory database (private to its process).
    /// - Throws: `Failure.held` when another process holds it; `.unusable` when the file cannot
    ///   be opened or locked.
    public static func acquire(databasePath: String) throws(Failure) -> SQLiteProcessLock? {
        guard !SQLiteConnection.isInMemory(databasePath) else { return nil }
        let lockPath = databasePath + "-lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw .unusable(databasePath: databasePath, lockPath: lockPath, reason: Self.reason(errno))
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let error = errno
            let holder = Self.holderPID(descriptor)
            close(descriptor)
            if error == EWOULDBLOCK { throw .held(databasePath: databasePath, lockPath: lockPath, holderPID: holder) }
            throw .unusable(databasePath: databasePath, lockPath: lockPath, reason: Self.reason(error))
        }
        // The pid is only for a refused process's message: a failed write costs nothing else.
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 { _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) } }
        return SQLiteProcessLock(path: lockPath, descriptor: descriptor)
    }

    /// Gives the lock up (`herald migrate` when done; tests). Not needed at exit.
    public func release() {
        close(descriptor)
    }

    private static func reason(_ error: Int32) -> String {
        String(cString: strerror(error)).lowercased()
    }

    /// The pid the holder wrote, if the file holds one.
    private static func holderPID(_ descriptor: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count], as: UTF8.self).split(separator: "\n").first.flatMap { Int32($0) }
    }
}
