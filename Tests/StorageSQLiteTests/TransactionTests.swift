import HeraldCore
@testable import StorageSQLite
import Testing

private struct Boom: Error, Equatable {}

@Suite struct TransactionTests {
    private func connection() throws -> SQLiteConnection {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.execute("CREATE TABLE t (v INTEGER)")
        return conn
    }

    @Test func commitsWhenTheBodyReturns() throws {
        let conn = try connection()
        let result = try conn.transaction { conn in
            try conn.run("INSERT INTO t VALUES (1)")
            try conn.run("INSERT INTO t VALUES (2)")
            #expect(conn.isInTransaction)
            return "done"
        }
        #expect(result == "done")
        #expect(!conn.isInTransaction)
        #expect(try count(conn, "t") == 2)
    }

    @Test func rollsBackEverythingWhenTheBodyThrows() throws {
        let conn = try connection()
        #expect(throws: Boom()) {
            try conn.transaction { conn in
                try conn.run("INSERT INTO t VALUES (1)")
                try conn.run("INSERT INTO t VALUES (2)")
                throw Boom()
            }
        }
        #expect(!conn.isInTransaction)
        #expect(try count(conn, "t") == 0)
    }

    @Test func rollsBackWhenAStatementFails() throws {
        let conn = try connection()
        try conn.execute("CREATE UNIQUE INDEX t_v ON t (v)")
        let error = #expect(throws: SQLiteError.self) {
            try conn.transaction { conn in
                try conn.run("INSERT INTO t VALUES (1)")
                try conn.run("INSERT INTO t VALUES (1)")
            }
        }
        #expect(error?.isUniqueViolation == true)
        #expect(try count(conn, "t") == 0)
    }

    @Test func nestedTransactionsAreSavepoints() throws {
        let conn = try connection()
        try conn.transaction { conn in
            try conn.run("INSERT INTO t VALUES (1)")
            do {
                try conn.transaction { conn in
                    try conn.run("INSERT INTO t VALUES (2)")
                    throw Boom()
                }
            } catch is Boom {}  // the inner work is undone, the outer goes on
            try conn.transaction { conn in try conn.run("INSERT INTO t VALUES (3)") }
            #expect(conn.isInTransaction)
        }
        #expect(try conn.query("SELECT v FROM t ORDER BY v").map { try $0[0, as: Int.self] } == [1, 3])
    }

    @Test func deferredAndExclusiveModes() throws {
        let conn = try connection()
        try conn.transaction(.deferred) { conn in try conn.run("INSERT INTO t VALUES (1)") }
        try conn.transaction(.exclusive) { conn in try conn.run("INSERT INTO t VALUES (2)") }
        #expect(try count(conn, "t") == 2)
    }
}
