import HeraldCore
@testable import StorageSQLite
import Testing

private let m1 = Migration(version: 1, name: "notes", sql: """
    CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;
    """)
private let m2 = Migration(version: 2, name: "notes.pinned", sql: """
    ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX notes_pinned ON notes (pinned);
    """)

@Suite struct MigratorTests {
    @Test func freshFileGetsEveryMigrationAndReopeningIsANoOp() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let first = try Database.open(path: path)
            #expect(first.appliedMigrations == HeraldSchema.migrations.map(\.version))
            #expect(try first.readSync { conn in try Migrator.version(of: conn) } == HeraldSchema.migrations.count)
            first.close()

            let second = try Database.open(path: path)
            #expect(second.appliedMigrations == [])
            second.close()
            #expect(try Database.migrate(path: path) == [])
        }
    }

    @Test func upgradeAppliesOnlyTheNewStepAndKeepsData() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let old = try Database.open(path: path, migrations: [m1])
            #expect(old.appliedMigrations == [1])
            try old.writeSync { conn in try conn.run("INSERT INTO notes (body) VALUES (?)", ["kept"]) }
            old.close()

            let new = try Database.open(path: path, migrations: [m1, m2])
            #expect(new.appliedMigrations == [2])
            let row = try #require(try new.readSync { conn in try conn.queryOne("SELECT body, pinned FROM notes") })
            #expect(try row["body", as: String.self] == "kept")
            #expect(try row["pinned", as: Int.self] == 0)
            new.close()
        }
    }

    /// ops11: opened without migrating (`herald jobs retry`, beside a server), a file at another
    /// version than the code's, older or newer, is refused and left as it was; at the code's own
    /// version it opens. The storage says what to do about it.
    @Test func openedWithoutMigratingOnlyTheCodesOwnVersionOpens() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            #expect(try Database.migrate(path: path, migrations: [m1]) == [1])
            #expect(throws: SQLiteError.schemaMismatch(found: 1, expected: 2)) {
                try Database.open(path: path, migrations: [m1, m2], migrating: false)
            }
            #expect(try Database.migrate(path: path, migrations: [m1]) == [])   // still at 1: nothing was applied
            let current = try Database.open(path: path, migrations: [m1], migrating: false)
            #expect(current.appliedMigrations == [])
            current.close()
            #expect(try Database.migrate(path: path, migrations: [m1, m2]) == [2])
            #expect(throws: SQLiteError.schemaMismatch(found: 2, expected: 1)) {
                try Database.open(path: path, migrations: [m1], migrating: false)
            }
            let older = StorageError(SQLiteError.schemaMismatch(found: 1, expected: 2))
            #expect(older == .schemaMismatch(found: 1, expected: 2) && older.description.contains("run `herald migrate`"))
            #expect(StorageError.schemaMismatch(found: 3, expected: 2).description.contains("newer than this build's 2"))
            #expect(throws: StorageError.schemaMismatch(found: 2, expected: HeraldSchema.migrations.count)) {
                try SQLiteStorage.open(path: path, migrating: false)
            }
        }
    }

    @Test func refusesAFileNewerThanTheCode() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let applied = try Database.migrate(path: path, migrations: [m1, m2])
            #expect(applied == [1, 2])
            let error = #expect(throws: SQLiteError.self) { try Database.open(path: path, migrations: [m1]) }
            guard case .migration(2, let message)? = error else { Issue.record("got \(String(describing: error))"); return }
            #expect(message.contains("newer"))
        }
    }

    @Test func aFailedStepIsRolledBackWholeAndEarlierStepsStay() throws {
        try withTemporaryDirectory { directory in
            let path = directory.databasePath()
            let broken = Migration(version: 2, name: "broken", sql: """
                ALTER TABLE notes ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE oops (;
                """)
            let error = #expect(throws: SQLiteError.self) { try Database.migrate(path: path, migrations: [m1, broken]) }
            guard case .migration(2, let message)? = error else { Issue.record("got \(String(describing: error))"); return }
            #expect(message.hasPrefix("broken: "))
            let conn = try SQLiteConnection(path: path)
            #expect(try Migrator.version(of: conn) == 1)
            #expect(try conn.query("SELECT name FROM pragma_table_info('notes')").map { try $0[0, as: String.self] } == ["id", "body"])
        }
    }

    @Test func aStepThatBreaksAForeignKeyIsRefused() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let orphan = Migration(version: 2, name: "orphan", sql: """
            PRAGMA defer_foreign_keys = ON;
            CREATE TABLE tags (note_id INTEGER NOT NULL REFERENCES notes (id));
            INSERT INTO tags VALUES (42);
            """)
        let error = #expect(throws: SQLiteError.self) { try Migrator.migrate(conn, migrations: [m1, orphan]) }
        #expect(error == .migration(version: 2, message: "orphan: leaves a broken foreign key in table tags"))
        #expect(try Migrator.version(of: conn) == 1)
    }

    @Test func versionOfANewFileIsZero() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        #expect(try Migrator.version(of: conn) == 0)
        #expect(try Migrator.migrate(conn, migrations: []) == [])
    }
}
