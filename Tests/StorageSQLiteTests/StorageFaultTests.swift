import Foundation
import Glibc
import HeraldCore
import Synchronization
import Testing

@testable import StorageSQLite

/// RL-2 in the adapter: a full volume has one meaning whichever call meets it, the WAL is bounded
/// and truncated when space runs out, the probe write sees what real writes see, and it all
/// recovers on the same open storage once space returns. "Full" is SQLite's own: a database at
/// `PRAGMA max_page_count` fails its writes with `SQLITE_FULL`, as a full volume does.
@Suite struct StorageFaultTests {
    private static let ioErrWrite = SQLiteResultCode(10 | (3 << 8))   // SQLITE_IOERR_WRITE

    @Test func anIOErrorTheOSGaveForAFullVolumeIsFull() {
        let (code, message) = Self.ioErrWrite.forVolumeFull(systemErrno: ENOSPC, message: "disk I/O error")
        #expect(code == .full)
        #expect(message.contains("disk I/O error") && message.contains("ENOSPC") && message.contains("\(Self.ioErrWrite.rawValue)"))
        #expect(SQLiteResultCode.cantOpen.forVolumeFull(systemErrno: EDQUOT, message: "x").code == .full)
        guard case .diskFull = StorageError(SQLiteError.open(path: "/d/h.db", code: code, message: message)) else {
            Issue.record("a database that cannot open for want of space should be full")
            return
        }
        #expect(StorageError(SQLiteError.step(code: code, message: message)) == .diskFull(message: message))
        #expect(SQLiteError.step(code: code, message: message).isDiskFull)
        // Another OS reason, or an error that is not I/O, keeps its meaning.
        #expect(Self.ioErrWrite.forVolumeFull(systemErrno: EIO, message: "m") == (Self.ioErrWrite, "m"))
        #expect(SQLiteResultCode.corrupt.forVolumeFull(systemErrno: ENOSPC, message: "m") == (.corrupt, "m"))
        guard case .unavailable = StorageError(SQLiteError.step(code: Self.ioErrWrite, message: "m")) else {
            Issue.record("an I/O error that is not ENOSPC should stay unavailable")
            return
        }
    }

    @Test func theWriterSetsTheJournalSizeLimit() throws {
        try withTemporaryDirectory { directory in
            let db = try Database.open(path: directory.databasePath(), walSizeLimitBytes: 256 << 10)
            defer { db.close() }
            let limit = try db.writeSync { conn in try conn.queryOne("PRAGMA journal_size_limit")?[0, as: Int64.self] }
            #expect(limit == 256 << 10)
        }
    }

    @Test func aWALFarPastItsBoundIsTruncated() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let limit: Int64 = 64 << 10   // 16 pages
            let db = try Database.open(path: path, walSizeLimitBytes: limit)
            defer { db.close() }
            try db.writeSync { conn in try conn.execute("CREATE TABLE blobs (b BLOB NOT NULL)") }
            db.waitForCheckpoints()
            let before = db.walTruncationCount
            // One commit of about 100 pages: past twice the bound before any checkpoint could run.
            try db.writeSync { conn in
                try conn.transaction { conn in
                    for _ in 0..<50 { try conn.run("INSERT INTO blobs VALUES (zeroblob(4000))") }
                }
            }
            db.waitForCheckpoints()
            #expect(db.walTruncationCount == before + 1)
            let wal = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? -1
            #expect(wal == 0, "the WAL is \(wal) bytes")
            #expect(try db.readSync { conn in try conn.queryOne("SELECT count(*) FROM blobs")?[0, as: Int.self] } == 50)
        }
    }

    @Test func aSmallBoundCheckpointsSoonerAndKeepsTheFileNearIt() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let limit: Int64 = 256 << 10   // 64 pages: a checkpoint every 32
            let db = try Database.open(path: path, walSizeLimitBytes: limit)
            defer { db.close() }
            try db.writeSync { conn in try conn.execute("CREATE TABLE blobs (b BLOB NOT NULL)") }
            let checkpoints = db.checkpointCount
            for _ in 0..<40 {
                try db.writeSync { conn in try conn.run("INSERT INTO blobs VALUES (zeroblob(4000))") }
            }
            db.waitForCheckpoints()
            // About 80 pages: at least one checkpoint, where the default (1 000 pages) asks none.
            #expect(db.checkpointCount > checkpoints)
            let wal = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? -1
            #expect(wal >= 0 && Int64(wal) <= 2 * limit + 8 * (4096 + 24), "the WAL is \(wal) bytes, truncations \(db.walTruncationCount), checkpoints \(db.checkpointCount)")
        }
    }

    @Test func aFullDatabaseFailsWritesAsDiskFullTruncatesTheWALAndRecoversWithoutReopening() throws {
        try withTemporaryDirectory { directory in
            let storage = try SQLiteStorage.open(path: directory.databasePath())
            defer { storage.close() }
            let db = storage.database
            try storage.writeSync { tx in try tx.jobs.enqueue(kind: "k", payloadJSON: "{}", runAt: 1, now: 1) }
            #expect(try probe(storage) == nil)
            // Full: no page may be added (the size of a full volume, as SQLite sees it).
            let freeBytes = try fullAsSQLiteSeesIt(db)
            let truncations = db.walTruncationCount
            let payload = String(repeating: "x", count: 20_000 + freeBytes)   // needs new pages
            let error = #expect(throws: StorageError.self) {
                try storage.writeSync { tx in try tx.jobs.enqueue(kind: "k", payloadJSON: payload, runAt: 1, now: 1) }
            }
            guard case .diskFull? = error else { Issue.record("got \(String(describing: error))"); return }
            db.waitForCheckpoints()
            #expect(db.walTruncationCount == truncations + 1, "a write that failed for space truncates the WAL")
            // Space returns: the same open storage writes again.
            try db.writeSync { conn in try conn.execute("PRAGMA max_page_count = 1073741823") }
            try storage.writeSync { tx in try tx.jobs.enqueue(kind: "k", payloadJSON: payload, runAt: 1, now: 1) }
            #expect(try probe(storage) == nil)
            #expect(try storage.readSync { tx in try tx.jobs.depth(now: 1).counts[.queued] } == 2)
        }
    }

    @Test("RL-2 (lows13): a write refused for want of space with the volume's free bytes above the bound fails the probe until a write stores rows or 64 KiB fit again")
    func aWriteRefusedForSpaceFailsTheProbeUntilAWriteSucceeds() throws {
        try withTemporaryDirectory { directory in
            let storage = try SQLiteStorage.open(path: directory.databasePath())
            defer { storage.close() }
            let db = storage.database
            // No probe ran yet: its row is not there for the first check after the refusal.
            // Full as SQLite sees it (`max_page_count`), the volume far from full: the probe's
            // free-bytes check passes, and its one-row rewrite fits in the pages there are.
            let freeBytes = try fullAsSQLiteSeesIt(db)
            let big = String(repeating: "x", count: 20_000 + freeBytes)
            #expect(throws: StorageError.self) { try storage.writeSync { tx in try tx.jobs.enqueue(kind: "k", payloadJSON: big, runAt: 1, now: 1) } }
            guard case .diskFull(let message)? = try probe(storage) else { Issue.record("the probe should fail as full"); return }
            #expect(message.contains("64 KiB"), "\(message)")
            // Writes that change nothing (an empty claim, the worker's every poll) prove nothing.
            _ = try storage.writeSync { tx in try tx.jobs.claim(kind: "none", limit: 1, leaseMilliseconds: 1, now: 1) }
            guard case .diskFull? = try probe(storage) else { Issue.record("an empty write does not clear it"); return }
            // A write that stores a row commits: writes succeed again, as far as anyone knows.
            try storage.writeSync { tx in try tx.jobs.enqueue(kind: "k", payloadJSON: "{}", runAt: 1, now: 1) }
            #expect(try probe(storage) == nil)
            #expect(db.spaceRefusal == nil)

            // Refused again; then space returns with no write meanwhile: the probe's own pages fit.
            #expect(throws: StorageError.self) { try storage.writeSync { tx in try tx.jobs.enqueue(kind: "k", payloadJSON: big, runAt: 1, now: 1) } }
            #expect(db.spaceRefusal != nil)
            guard case .diskFull? = try probe(storage) else { Issue.record("the probe should fail as full again"); return }
            try db.writeSync { conn in try conn.execute("PRAGMA max_page_count = 1073741823") }
            #expect(try probe(storage) == nil)
            #expect(db.spaceRefusal == nil)
            #expect(try probe(storage) == nil)
            // The probe's row is a time again, and the real write goes through.
            #expect(try db.readSync { conn in try conn.queryOne("SELECT typeof(written_at) FROM storage_probe")?[0, as: String.self] } == "integer")
            try storage.writeSync { tx in try tx.jobs.enqueue(kind: "k", payloadJSON: big, runAt: 1, now: 1) }
        }
    }

    @Test("issue 17: a unit of a group that fails for want of space fails as diskFull; every unit's answer matches what was kept")
    func aFullDatabaseInAGroupFailsTheUnitAndKeepsTheAnswersTrue() throws {
        try withTemporaryDirectory { directory in
            let storage = try SQLiteStorage.open(path: directory.databasePath())
            defer { storage.close() }
            let db = storage.database
            try db.writeSync { conn in
                let pages = try conn.queryOne("PRAGMA page_count")?[0, as: Int64.self] ?? 0
                try conn.execute("PRAGMA max_page_count = \(pages + 2)")
            }
            let gate = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0), done = DispatchGroup()
            let answers = Mutex<[Int: Result<Int64, any Error>]>([:])
            done.enter()
            storage.write({ _ in
                started.signal()
                gate.wait()
            }) { _ in done.leave() }
            started.wait()
            let big = String(repeating: "x", count: 40_000)   // needs more pages than are left
            for index in 1...3 {
                done.enter()
                storage.write({ tx in
                    try tx.jobs.enqueue(kind: "k\(index)", payloadJSON: index == 2 ? big : "{}", runAt: 1, now: 1)
                }) { result in
                    answers.withLock { $0[index] = result }
                    done.leave()
                }
            }
            gate.signal()
            done.wait()
            let got = answers.withLock { $0 }
            guard case .failure(let error)? = got[2], case .diskFull? = error as? StorageError else {
                Issue.record("the unit that needs space should fail as full: \(String(describing: got[2]))")
                return
            }
            try db.writeSync { conn in try conn.execute("PRAGMA max_page_count = 1073741823") }
            // Committed when answered so, absent when answered with a failure: never in between.
            let kinds = try storage.readSync { tx in try tx.jobs.list(state: .queued, limit: 10, beforeID: nil).map(\.kind) }
            for index in [1, 3] {
                let answeredCommitted = if case .success? = got[index] { true } else { false }
                #expect(kinds.contains("k\(index)") == answeredCommitted, "unit \(index)")
            }
            #expect(!kinds.contains("k2"))
        }
    }

    @Test func theProbeIsARealWriteAndFailsAsWritesDo() throws {
        try withTemporaryDirectory { directory in
            let storage = try SQLiteStorage.open(path: directory.databasePath())
            defer { storage.close() }
            #expect(try probe(storage) == nil)
            #expect(try storage.database.readSync { conn in try conn.queryOne("SELECT count(*) FROM storage_probe")?[0, as: Int.self] } == 1)
            // A read-only writer (the file or its volume turned read-only).
            try storage.database.writeSync { conn in try conn.execute("PRAGMA query_only = 1") }
            guard case .readOnly? = try probe(storage) else { Issue.record("the probe should fail read-only"); return }
            try storage.database.writeSync { conn in try conn.execute("PRAGMA query_only = 0") }
            #expect(try probe(storage) == nil)
        }
    }

    @Test func theProbeFailsAsFullWhenTheVolumeHasLessFreeThanTheWALBound() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let opened = try SQLiteStorage.open(path: path)
            let free = try #require(SQLiteStorage.freeBytes(onVolumeOf: path))
            #expect(free > 0)
            // The same database, asked to keep more free than the volume has: a volume that full
            // can still pass a one-row rewrite, so the probe must not write to find out.
            let demanding = SQLiteStorage(database: opened.database, minimumFreeBytes: free + (1 << 40))
            defer { opened.close() }
            guard case .diskFull? = try probe(demanding) else { Issue.record("the probe should fail as full"); return }
            #expect(try probe(opened) == nil)
        }
    }

    /// Lets no page be added to `db` (`max_page_count`: a full volume, as SQLite sees it).
    /// - Returns: the bytes of the free pages still there (a migration freed some: 22 rebuilds
    ///   two tables), which a write takes first.
    private func fullAsSQLiteSeesIt(_ db: Database) throws -> Int {
        try db.writeSync { conn in
            let pages = try conn.queryOne("PRAGMA page_count")?[0, as: Int64.self] ?? 0
            try conn.execute("PRAGMA max_page_count = \(pages)")
            return try (conn.queryOne("PRAGMA freelist_count")?[0, as: Int.self] ?? 0) * (conn.queryOne("PRAGMA page_size")?[0, as: Int.self] ?? 0)
        }
    }

    /// The probe's failure, nil when it wrote.
    private func probe(_ storage: SQLiteStorage) throws -> StorageError? {
        let result = Shared<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        storage.probeWrite { outcome in
            result.update { $0 = outcome }
            done.signal()
        }
        done.wait()
        switch result.value {
        case .success?: return nil
        case .failure(let error as StorageError)?: return error
        case .failure(let error)?: throw error
        case nil: return nil
        }
    }
}
