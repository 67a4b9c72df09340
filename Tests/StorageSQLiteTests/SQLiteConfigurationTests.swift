import CSQLite
@testable import StorageSQLite
import Testing

/// The process-wide SQLite settings `SQLiteConnection` makes before its first open.
@Suite struct SQLiteConfigurationTests {
    @Test("issue 17: SQLite keeps no allocation statistics, so its mallocs take no global mutex")
    func allocationStatisticsAreOff() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.run("CREATE TABLE t (x TEXT)")
        try conn.run("INSERT INTO t VALUES (?)", [String(repeating: "x", count: 10_000)])
        #expect(try conn.queryOne("SELECT length(x) FROM t")?[0, as: Int.self] == 10_000)
        // With statistics on, the memory SQLite holds for this connection and its table is counted.
        #expect(sqlite3_memory_used() == 0)
    }
}
