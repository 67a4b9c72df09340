@testable import StoragePostgres
import Testing

/// PostgreSQL's plan of a retention batch (ADR 0012): index scans of what it deletes, never a scan
/// of the rows kept. On 20,000 notifications with two records each, analysed, a tenth of them old.
@Suite struct NotificationPurgePlanTests {
    @Test(.enabled(if: PostgresServer.isAvailable)) func aBatchReadsTheCreationIndexAndTheRecordsByNotification() throws {
        let server = try #require(PostgresServer.shared)
        let connection = try server.migratedConnection()
        defer { connection.close() }
        try connection.execute("""
            INSERT INTO notifications (id, user_id, kind, priority, created_at)
                SELECT 'n-' || g, 'u-' || (g % 500), 'k', 'normal', g FROM generate_series(1, 20000) AS g;
            INSERT INTO deliveries (notification_id, user_id, outcome, at)
                SELECT 'n-' || g, 'u', o, g FROM generate_series(1, 20000) AS g, (VALUES ('queued'), ('sent')) AS v(o);
            ANALYZE notifications;
            ANALYZE deliveries;
            """)
        let plan = try connection.plan(of: NotificationPurgeSQL.batch, [Int64(2_001), Int64(1_000)])
        #expect(plan.contains("Index Scan using notifications_created_at on notifications"), "\(plan)")
        #expect(plan.contains("deliveries_notification"), "\(plan)")
        #expect(!plan.contains("Seq Scan"), "\(plan)")
        // And it deletes what it says: 1,000 of the 2,000 old ones, with their records.
        #expect(try connection.queryOne(NotificationPurgeSQL.batch, [Int64(2_001), Int64(1_000)])?.value("n", as: Int64.self) == 1_000)
        #expect(try connection.queryOne("SELECT count(*) AS n FROM deliveries")?.value("n", as: Int64.self) == 38_000)
    }
}
