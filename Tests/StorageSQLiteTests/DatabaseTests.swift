import Dispatch
import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

private let upsertDevice = """
    INSERT INTO devices (id, user_id, platform, provider, token, created_at, last_seen_at)
    VALUES (:id, :user, 'ios', 'apns', :token, :now, :now)
    ON CONFLICT (app, platform, token) DO UPDATE
    SET user_id = excluded.user_id, last_seen_at = max(last_seen_at, excluded.last_seen_at)
    """

private let counterSchema = [Migration(version: 1, name: "events", sql: "CREATE TABLE events (writer INTEGER NOT NULL, n INTEGER NOT NULL) STRICT;")]

@Suite struct DatabaseTests {
    @Test func aReaderSeesCommittedRowsOnly() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let writer = try SQLiteConnection(path: path)
            try Migrator.migrate(writer, migrations: counterSchema)
            let reader = try SQLiteConnection(path: path, mode: .readOnly)

            try writer.execute("BEGIN IMMEDIATE")
            try writer.run("INSERT INTO events VALUES (1, 1)")
            #expect(try count(writer, "events") == 1)  // the writer sees its own work
            #expect(try count(reader, "events") == 0)  // nobody else does yet, and nobody waits
            try writer.execute("COMMIT")
            #expect(try count(reader, "events") == 1)
        }
    }

    @Test func databaseReadsSeeCommittedWritesNotInFlightOnes() throws {
        try withTemporaryDirectory { directory in
            let db = try Database.open(path: directory.databasePath())
            defer { db.close() }
            let seenDuring = try db.writeSync { conn in
                try conn.transaction { conn in
                    try conn.run("INSERT INTO sessions (sid, user_id, created_at, last_seen_at) VALUES (?, ?, ?, ?)", ["s1", "u1", 1, 1])
                    // A reader runs now, on its own connection, while this transaction is open.
                    return try db.readSync { reader in try count(reader, "sessions") }
                }
            }
            #expect(seenDuring == 0)
            #expect(try db.readSync { reader in try count(reader, "sessions") } == 1)
        }
    }

    @Test func concurrentUpsertsFromManyTasksEndInOneRow() async throws {
        try await withTemporaryDirectory { directory in
            let db = try Database.open(path: directory.databasePath())
            defer { db.close() }
            let observed = try await withThrowingTaskGroup(of: Int?.self) { group in
                for i in 0..<200 {
                    group.addTask {
                        try await db.write { conn in
                            try conn.run(upsertDevice, [":id": "d\(i)", ":user": "u\(i % 7)", ":token": "tok", ":now": Int64(i)])
                        }
                        return nil
                    }
                    group.addTask {  // reads interleaved with the writes, on the reader connections
                        try await db.read { conn in try count(conn, "devices") }
                    }
                }
                var counts: [Int] = []
                for try await value in group { if let value { counts.append(value) } }
                return counts
            }
            #expect(observed.allSatisfy { $0 == 0 || $0 == 1 })
            let rows = try await db.read { conn in try conn.query("SELECT id, last_seen_at FROM devices") }
            #expect(rows.count == 1)
            #expect(try rows[0]["last_seen_at", as: Int64.self] == 199)
            #expect(try rows[0]["id", as: String.self].hasPrefix("d"))
        }
    }

    @Test func completionHandlersDeliverResultsAndErrors() throws {
        let db = try Database.open(path: ":memory:")
        #expect(db.readerCount == 0)
        let done = DispatchSemaphore(value: 0)
        let results = Shared<[String]>([])
        db.write({ conn in
            try conn.run("INSERT INTO jobs (kind, payload_json, state, run_at, created_at) VALUES ('push.deliver', '{}', 'queued', 1, 1)")
            return conn.lastInsertRowID
        }, completion: { result in
            results.update { $0.append("write \((try? result.get()).map(String.init) ?? "failed")") }
            done.signal()
        })
        db.read({ conn in try conn.run("INSERT INTO nowhere VALUES (1)") }, completion: { result in
            if case .failure(let error as SQLiteError) = result, case .prepare = error { results.update { $0.append("read failed") } }
            done.signal()
        })
        done.wait()
        done.wait()
        #expect(results.value == ["write 1", "read failed"])  // in-memory: reads share the writer queue, FIFO
    }

    @Test func readersCannotWrite() async throws {
        try await withTemporaryDirectory { directory in
            let db = try Database.open(path: directory.databasePath(), readers: 1)
            defer { db.close() }
            do {
                try await db.read { conn in
                    try conn.run("INSERT INTO sessions (sid, user_id, created_at, last_seen_at) VALUES ('s', 'u', 1, 1)")
                }
                Issue.record("a reader must not write")
            } catch let error as SQLiteError {
                guard case .step(let code, _) = error else { Issue.record("got \(error)"); return }
                #expect(code.primary == .readOnly)
            }
        }
    }

    @Test func aBodyThatLeavesATransactionOpenIsRolledBackAndReported() async throws {
        let db = try Database.open(path: ":memory:")
        await #expect(throws: SQLiteError.self) {
            try await db.write { conn in
                try conn.execute("BEGIN")
                try conn.run("INSERT INTO sessions (sid, user_id, created_at, last_seen_at) VALUES ('s', 'u', 1, 1)")
            }
        }
        let state = try await db.write { conn in (conn.isInTransaction, try count(conn, "sessions")) }
        #expect(state == (false, 0))
    }

    @Test func closedDatabaseFailsWithClosed() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let db = try Database.open(path: path)
            db.close()
            await #expect(throws: SQLiteError.closed) { try await db.write { _ in 1 } }
            await #expect(throws: SQLiteError.closed) { try await db.read { _ in 1 } }
            // The writer closed last, so the WAL was checkpointed into the file and removed.
            #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        }
    }

    @Test func twoWriterConnectionsOnTwoThreadsWaitInsteadOfFailing() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            try Database.migrate(path: path, migrations: counterSchema)
            let errors = Shared<[String]>([])
            let finished = DispatchSemaphore(value: 0)
            let perWriter = 300
            for writer in 0..<2 {
                let thread = Thread {
                    do {
                        let conn = try SQLiteConnection(path: path, busyTimeoutMS: 5000)
                        for n in 0..<perWriter {
                            try conn.transaction { conn in try conn.run("INSERT INTO events VALUES (?, ?)", [writer, n]) }
                        }
                    } catch {
                        errors.update { $0.append("\(error)") }
                    }
                    finished.signal()
                }
                thread.start()
            }
            finished.wait()
            finished.wait()
            #expect(errors.value == [])
            #expect(try count(SQLiteConnection(path: path, mode: .readOnly), "events") == 2 * perWriter)
        }
    }

    @Test func withoutABusyTimeoutALockedDatabaseIsBusy() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            try Database.migrate(path: path, migrations: counterSchema)
            let holder = try SQLiteConnection(path: path)
            let impatient = try SQLiteConnection(path: path, busyTimeoutMS: 0)
            try holder.execute("BEGIN IMMEDIATE")
            let error = #expect(throws: SQLiteError.self) {
                try impatient.transaction { conn in try conn.run("INSERT INTO events VALUES (2, 2)") }
            }
            guard case .busy(let message)? = error else { Issue.record("got \(String(describing: error))"); return }
            #expect(message == "database is locked")
            try holder.execute("COMMIT")
            try impatient.transaction { conn in try conn.run("INSERT INTO events VALUES (2, 2)") }
        }
    }

    @Test func openFailsWithSQLitesReason() throws {
        let error = #expect(throws: SQLiteError.self) {
            try SQLiteConnection(path: "/nonexistent-dir/x.db", mode: .readOnly)
        }
        guard case .open("/nonexistent-dir/x.db", let code, _)? = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(code.primary == SQLiteResultCode(rawValue: 14))  // SQLITE_CANTOPEN
    }

    @Test func theWALIsCheckpointedOffTheWriterAndStaysBounded() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let db = try Database.open(path: path, migrations: counterSchema)
            let wal = path + "-wal"
            var largest = 0
            // Each commit of a 4 KiB row adds a page or two; 3 000 of them cross the threshold
            // (1 000 pages) several times.
            for n in 0..<3_000 {
                try db.writeSync { conn in try conn.run("INSERT INTO events VALUES (?, length(zeroblob(4000)))", [n]) }
                let size = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
                largest = max(largest, size)
            }
            let deadline = Date().addingTimeInterval(5)
            while db.checkpointCount == 0, Date() < deadline { usleep(1_000) }
            #expect(db.checkpointCount > 0)
            // Restarted after checkpoints instead of growing with every commit (6 000 pages): about
            // the writer's own threshold at most (a few commits more while the queue's checkpoint
            // holds the checkpoint lock).
            #expect(largest <= (Int(Checkpointer.writerThreshold) + 100) * (4096 + 24) + 32, "the WAL grew to \(largest) bytes")
            #expect(try db.readSync { try count($0, "events") } == 3_000)
            db.close()
            #expect(!FileManager.default.fileExists(atPath: wal), "the writer, closing last, checkpoints and removes the WAL")
            let reopened = try Database.open(path: path, migrations: counterSchema)
            defer { reopened.close() }
            #expect(try reopened.readSync { try count($0, "events") } == 3_000)
        }
    }

    @Test func walIsOnForFiles() throws {
        try withTemporaryDirectory { directory in
            let conn = try SQLiteConnection(path: directory.databasePath())
            #expect(try conn.queryOne("PRAGMA journal_mode")?[0, as: String.self] == "wal")
            #expect(try conn.queryOne("PRAGMA synchronous")?[0, as: Int.self] == 1)  // NORMAL
            #expect(try conn.queryOne("PRAGMA foreign_keys")?[0, as: Int.self] == 1)
            #expect(try conn.queryOne("PRAGMA busy_timeout")?[0, as: Int.self] == 5000)
        }
    }
}
