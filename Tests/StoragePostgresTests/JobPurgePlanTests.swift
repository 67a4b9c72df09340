@testable import StoragePostgres
import Testing

/// PostgreSQL's plan of a done-job retention batch: the old done jobs found by an index walk in id
/// order (the primary key or `jobs_state_id`, as the statistics say) that stops at the limit, each
/// deleted by its key; never a sequential scan of the jobs kept. On 20,000 jobs, analysed: 18,000
/// done (2,000 of them old) and 2,000 queued.
@Suite struct JobPurgePlanTests {
    @Test(.enabled(if: PostgresServer.isAvailable)) func aBatchWalksAnIndexInIDOrderAndDeletesByKey() throws {
        let server = try #require(PostgresServer.shared)
        let connection = try server.migratedConnection()
        defer { connection.close() }
        try connection.execute("""
            INSERT INTO jobs (kind, payload_json, state, run_at, created_at)
                SELECT 'push.deliver', '{}', CASE WHEN g > 18000 THEN 'queued' ELSE 'done' END, g, g
                FROM generate_series(1, 20000) AS g;
            ANALYZE jobs;
            """)
        let plan = try connection.plan(of: PostgresJobQueue.purgeDoneBatch, [Int64(2_001), Int64(1_000)])
        #expect(plan.contains("Index Cond: (id = ANY"), "\(plan)")
        #expect(!plan.contains("Seq Scan"), "\(plan)")
        // And it deletes what it says: the first 1,000 of the 2,000 old ones, then the rest.
        #expect(try connection.run(PostgresJobQueue.purgeDoneBatch, [Int64(2_001), Int64(1_000)]) == 1_000)
        #expect(try connection.queryOne("SELECT min(id) AS n FROM jobs")?.value("n", as: Int64.self) == 1_001)
        #expect(try connection.run(PostgresJobQueue.purgeDoneBatch, [Int64(2_001), Int64(1_000)]) == 1_000)
        #expect(try connection.run(PostgresJobQueue.purgeDoneBatch, [Int64(2_001), Int64(1_000)]) == 0)
        #expect(try connection.queryOne("SELECT count(*) AS n FROM jobs")?.value("n", as: Int64.self) == 18_000)
    }
}
