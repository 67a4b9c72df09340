import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

@Suite struct StatementTests {
    @Test func namedParametersBindWithAnyPrefixAndRepeat() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let row = try #require(try conn.queryOne("SELECT :a AS a, @b AS b, $c AS c, :a + 1 AS again",
                                                 [":a": 1, "@b": "x", "c": 2.5]))
        #expect(row.values == [1, "x", 2.5, 2])
    }

    @Test("issue 17: rows read in place give what a copied Row gives, and a type mismatch names its column")
    func rowsReadInPlace() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.execute("CREATE TABLE t (a TEXT, b INTEGER, c TEXT); INSERT INTO t VALUES ('x', 1, NULL), ('', 2, 'a longer text than fifteen bytes')")
        let sql = "SELECT a, b, c FROM t WHERE b >= :min ORDER BY b"
        let read = try conn.prepare(sql).query([":min": 0]) { row throws(SQLiteError) in
            (try row[0, as: String.self], try row[1, as: Int64.self], try row[2, as: String?.self])
        }
        #expect(read.map(\.0) == ["x", ""] && read.map(\.1) == [1, 2] && read.map(\.2) == [nil, "a longer text than fifteen bytes"])
        #expect(try conn.query(sql, [":min": 0]).map(\.values) == [["x", 1, nil], ["", 2, "a longer text than fifteen bytes"]])
        #expect(try conn.prepare(sql).query([":min": 3]) { row throws(SQLiteError) in try row[0, as: String.self] }.isEmpty)
        #expect(throws: SQLiteError.decode(column: "b", expected: "String", found: "INTEGER")) {
            try conn.prepare(sql).query([":min": 0]) { row throws(SQLiteError) in try row[1, as: String.self] }
        }
        // Reset after use: a write may follow (no read left open), and the statement is reused.
        try conn.run("INSERT INTO t VALUES ('y', 3, NULL)")
        #expect(try conn.prepare(sql).query([":min": 3]) { row throws(SQLiteError) in try row[0, as: String.self] } == ["y"])
    }

    @Test("issue 17: the typed column readers give what the subscript gives, and its errors for any other type")
    func typedColumnReaders() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.execute("""
            CREATE TABLE t (a ANY, b ANY) STRICT;
            INSERT INTO t VALUES ('x', 1), ('', -9007199254740993), ('a longer text than fifteen bytes, ünï', NULL),
                                 (2.5, 'seven'), (x'00', 3.0), (NULL, x'01');
            """)
        let rows = try conn.prepare("SELECT a, b FROM t WHERE rowid > :min ORDER BY rowid").query([":min": 0]) { row throws(SQLiteError) in
            (try? row.text(0), try? row.optionalText(0), try? row.integer(1), try? row[0, as: String?.self], try? row[1, as: Int64.self])
        }
        #expect(rows.map(\.0) == ["x", "", "a longer text than fifteen bytes, ünï", nil, nil, nil])
        // `try?` flattens: NULL and an error both read nil here; the errors are checked below.
        #expect(rows.map(\.1) == ["x", "", "a longer text than fifteen bytes, ünï", nil, nil, nil])
        #expect(rows.map(\.1) == rows.map(\.3))
        #expect(rows.map(\.2) == [1, -9_007_199_254_740_993, nil, nil, nil, nil])
        #expect(rows.map(\.2) == rows.map(\.4))
        let sql = "SELECT a, b FROM t WHERE rowid = :id"
        #expect(throws: SQLiteError.decode(column: "a", expected: "String", found: "REAL")) {
            try conn.prepare(sql).query([":id": 4]) { row throws(SQLiteError) in try row.text(0) }
        }
        #expect(throws: SQLiteError.decode(column: "a", expected: "Optional<String>", found: "BLOB")) {
            try conn.prepare(sql).query([":id": 5]) { row throws(SQLiteError) in try row.optionalText(0) }
        }
        #expect(throws: SQLiteError.decode(column: "a", expected: "String", found: "NULL")) {
            try conn.prepare(sql).query([":id": 6]) { row throws(SQLiteError) in try row.text(0) }
        }
        #expect(throws: SQLiteError.decode(column: "b", expected: "Int64", found: "TEXT")) {
            try conn.prepare(sql).query([":id": 4]) { row throws(SQLiteError) in try row.integer(1) }
        }
    }

    @Test func namedBindOneByOne() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let statement = try conn.prepare("SELECT :sid, :user")
        try statement.bind("s1", named: ":sid")
        try statement.bind(Optional<String>.none, named: "user")
        #expect(try statement.step())
        #expect(try statement.row().values == ["s1", nil])
        #expect(try !statement.step())
    }

    @Test func bindingMistakesAreErrorsNotSilentNulls() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        #expect(throws: SQLiteError.bind(parameter: "?3", code: .range, message: "statement has 3 parameters, 2 values given")) {
            try conn.query("SELECT ?, ?, ?", [1, 2])
        }
        #expect(throws: SQLiteError.self) { try conn.query("SELECT ?", [1, 2]) }
        let unknown = #expect(throws: SQLiteError.self) { try conn.query("SELECT :a", [":b": 1]) }
        guard case .bind(":b", _, _)? = unknown else { Issue.record("got \(String(describing: unknown))"); return }
        let missing = #expect(throws: SQLiteError.self) { try conn.query("SELECT :a, :b", [":a": 1]) }
        guard case .bind(":b", _, "no value given for :b in `SELECT :a, :b`")? = missing else {
            Issue.record("got \(String(describing: missing))"); return
        }
        let statement = try conn.prepare("SELECT ?")
        #expect(throws: SQLiteError.self) { try statement.bind(1, at: 2) }
    }

    @Test("named binding past 64 parameters still finds the one left unbound")
    func manyNamedParameters() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let sql = "SELECT " + (1...70).map { ":p\($0)" }.joined(separator: " + ")
        var values: [String: any SQLiteBindable] = [:]
        for i in 1...70 { values[":p\(i)"] = i }
        #expect(try conn.queryOne(sql, values)?[0, as: Int.self] == 70 * 71 / 2)
        for gap in [3, 64, 65, 70] {
            var missing = values
            missing[":p\(gap)"] = nil
            let error = #expect(throws: SQLiteError.self) { try conn.query(sql, missing) }
            guard case .bind(let name, _, _)? = error, name == ":p\(gap)" else {
                Issue.record("gap \(gap): got \(String(describing: error))"); continue
            }
        }
    }

    @Test func statementCacheReusesCompiledStatements() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let sql = "SELECT ? + 1"
        let compiledBefore = conn.compiledStatementCount
        for i in 0..<10 {
            #expect(try conn.queryOne(sql, [i])![0, as: Int.self] == i + 1)
        }
        #expect(conn.compiledStatementCount == compiledBefore + 1)
        let first = try conn.prepare(sql).handle
        let second = try conn.prepare(sql).handle
        #expect(first == second)
    }

    @Test("issue 17: the cache's key hashes a sample of the SQL's bytes; equal texts built apart share a statement, texts alike in that sample do not")
    func statementCacheKeyByTextNotByStorage() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        // Every length the sampled hash reads differently: empty-ish, one word, a partial word, long.
        let texts = ["SELECT 1", "SELECT 12", "SELECT 123456789012", "SELECT 1234567890123456789012345",
                     "SELECT " + String(repeating: "1 + ", count: 100) + "1"]
        for sql in texts {
            let compiledBefore = conn.compiledStatementCount
            _ = try conn.queryOne(sql)
            // The same text in another buffer (not the literal's storage) finds the cached one.
            let rebuilt = String(decoding: Array(sql.utf8), as: UTF8.self)
            _ = try conn.queryOne(rebuilt)
            #expect(conn.compiledStatementCount == compiledBefore + 1, "\(sql)")
        }
        // Same length, same first 32 and last 16 bytes and middle word: only the bytes between differ.
        let head = "SELECT 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', ", tail = ", 'zzzzzzzzzzzzzzzzzzzzzzz'"
        let one = head + "'x" + String(repeating: "m", count: 40) + "1'" + tail
        let other = head + "'y" + String(repeating: "m", count: 40) + "2'" + tail
        #expect(one.utf8.count == other.utf8.count)
        #expect(try conn.queryOne(one)?.values[1] == .text("x" + String(repeating: "m", count: 40) + "1"))
        #expect(try conn.queryOne(other)?.values[1] == .text("y" + String(repeating: "m", count: 40) + "2"))
        #expect(try conn.queryOne(one)?.values[1] == .text("x" + String(repeating: "m", count: 40) + "1"))
    }

    @Test("issue 17: more texts than the cache's slots by address, used in turn, each finds its own statement and is compiled once")
    func manyTextsShareTheSlotsByAddress() throws {
        let conn = try SQLiteConnection(path: ":memory:", statementCacheCapacity: 200)
        let texts = (0..<150).map { "SELECT \($0) AS n" }
        let compiledBefore = conn.compiledStatementCount
        for round in 0..<3 {
            for (index, sql) in texts.enumerated() {
                #expect(try conn.queryOne(sql)?[0, as: Int.self] == index, "round \(round)")
            }
        }
        #expect(conn.compiledStatementCount == compiledBefore + texts.count)
    }

    @Test("issue 17: each type binds itself as the value its sqliteValue names")
    func everyBindableTypeBindsAsItsValue() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let none: String? = nil, some: String? = "s", number: Int? = 7, date = Date(timeIntervalSince1970: 1.5)
        let values: [any SQLiteBindable] = [Int64(-3), 4, Int32(5), 2.5, true, false, "text", "", [UInt8]([1, 2]), [UInt8](),
                                            none, some, number, date, SQLiteValue.null, SQLiteValue.text("v"), SQLiteValue.blob([])]
        let sql = "SELECT " + values.indices.map { _ in "?" }.joined(separator: ", ")
        let row = try #require(try conn.queryOne(sql, values))
        #expect(row.values == values.map(\.sqliteValue))
        #expect(row.values[7] == .text(""))
        #expect(row.values[9] == .blob([]))
    }

    @Test("issue 17: a cached statement keeps its column names, and a schema change that alters them is seen")
    func cachedColumnNamesFollowTheSchema() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.execute("CREATE TABLE t (a INTEGER, b TEXT)")
        try conn.run("INSERT INTO t VALUES (1, 'x')")
        let sql = "SELECT * FROM t"
        for _ in 0..<3 {
            let row = try #require(try conn.queryOne(sql))
            #expect(row.columnNames == ["a", "b"])
            #expect(try row["b", as: String.self] == "x")
        }
        // SQLite prepares the cached statement again behind the same handle; `*` now has three columns.
        try conn.execute("ALTER TABLE t ADD COLUMN c INTEGER NOT NULL DEFAULT 7")
        let rows = try conn.query(sql)
        #expect(rows.first?.columnNames == ["a", "b", "c"])
        #expect(try rows.first?["c", as: Int.self] == 7)
        // Aliases are names too: two statements, two sets of names.
        #expect(try conn.queryOne("SELECT a AS first FROM t")?.columnNames == ["first"])
        #expect(try conn.queryOne("SELECT a AS second FROM t")?.columnNames == ["second"])
    }

    @Test func aStatementInUseIsNeverSharedWithANestedUse() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) SELECT x FROM c"
        let outer = try conn.prepare(sql)
        try outer.bind(3, at: 1)
        var pairs: [[Int]] = []
        while try outer.step() {
            let x: Int = try outer.row()[0]
            // Same SQL while `outer` is mid-iteration: must be a second compiled statement.
            let inner = try conn.query(sql, [x]).map { try $0[0, as: Int.self] }
            pairs.append(inner)
        }
        #expect(pairs == [[1], [1, 2], [1, 2, 3]])
        #expect(conn.compiledStatementCount == 2)
    }

    @Test func cacheIsBounded() throws {
        let conn = try SQLiteConnection(path: ":memory:", statementCacheCapacity: 2)
        for n in 0..<5 { _ = try conn.query("SELECT \(n)") }
        #expect(conn.cachedStatementCount == 2)
        let uncached = try SQLiteConnection(path: ":memory:", statementCacheCapacity: 0)
        _ = try uncached.query("SELECT 1")
        #expect(uncached.cachedStatementCount == 0)
    }

    @Test func queryOneStopsAndResetsSoNoSnapshotStaysOpen() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let statement = try conn.prepare("SELECT 1 UNION ALL SELECT 2")
        #expect(try statement.queryOne()?[0, as: Int.self] == 1)
        #expect(!statement.isActive)
        _ = try statement.step()
        #expect(statement.isActive)
        statement.reset()
        #expect(!statement.isActive)
    }

    @Test func prepareRejectsBadSQLWithSQLitesMessage() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let syntax = #expect(throws: SQLiteError.self) { try conn.prepare("SELEC 1") }
        guard case .prepare(let sql, let code, let message)? = syntax else { Issue.record("got \(String(describing: syntax))"); return }
        #expect(sql == "SELEC 1")
        #expect(code.primary == .error)
        #expect(message.contains("syntax error"))
        #expect(throws: SQLiteError.self) { try conn.prepare("SELECT * FROM no_such_table") }
        #expect(throws: SQLiteError.self) { try conn.prepare("   -- nothing") }
        #expect(throws: SQLiteError.prepare(sql: "SELECT 1; SELECT 2", code: .misuse, message: "more than one statement; use execute(_:) for scripts")) {
            try conn.prepare("SELECT 1; SELECT 2")
        }
        _ = try conn.prepare("SELECT 1; -- trailing comment is fine\n")
    }

    @Test func executeRunsAScriptAndReportsTheFailingStatement() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.execute("""
            CREATE TABLE a (x INTEGER);  -- comment
            INSERT INTO a VALUES (1);
            INSERT INTO a VALUES (2);
            """)
        #expect(try count(conn, "a") == 2)
        let failure = #expect(throws: SQLiteError.self) {
            try conn.execute("INSERT INTO a VALUES (3); INSERT INTO nowhere VALUES (4); INSERT INTO a VALUES (5);")
        }
        guard case .prepare(let sql, _, let message)? = failure else { Issue.record("got \(String(describing: failure))"); return }
        #expect(sql.hasPrefix(" INSERT INTO nowhere"))
        #expect(message.contains("no such table"))
        #expect(try count(conn, "a") == 3)  // statements before the failure ran (no transaction)
    }

    @Test func constraintViolationsAreSeparatedByKind() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.execute("""
            CREATE TABLE parent (id INTEGER PRIMARY KEY);
            CREATE TABLE t (
                k TEXT UNIQUE,
                n INTEGER NOT NULL CHECK (n >= 0),
                p INTEGER REFERENCES parent (id)
            );
            """)
        try conn.run("INSERT INTO t (k, n) VALUES ('a', 1)")
        let duplicate = #expect(throws: SQLiteError.self) { try conn.run("INSERT INTO t (k, n) VALUES (?, ?)", ["a", 2]) }
        #expect(duplicate == .constraint(.unique, message: "UNIQUE constraint failed: t.k"))
        #expect(duplicate?.isUniqueViolation == true)
        #expect(throws: SQLiteError.constraint(.notNull, message: "NOT NULL constraint failed: t.n")) {
            try conn.run("INSERT INTO t (k, n) VALUES ('b', NULL)")
        }
        #expect(throws: SQLiteError.constraint(.check, message: "CHECK constraint failed: n >= 0")) {
            try conn.run("INSERT INTO t (k, n) VALUES ('b', -1)")
        }
        #expect(throws: SQLiteError.constraint(.foreignKey, message: "FOREIGN KEY constraint failed")) {
            try conn.run("INSERT INTO t (k, n, p) VALUES ('b', 1, 99)")
        }
        try conn.run("INSERT INTO parent (id) VALUES (1)")
        #expect(throws: SQLiteError.constraint(.primaryKey, message: "UNIQUE constraint failed: parent.id")) {
            try conn.run("INSERT INTO parent (id) VALUES (1)")
        }
        // The statement is reusable after a failure.
        try conn.run("INSERT INTO t (k, n) VALUES (?, ?)", ["c", 3])
        #expect(try count(conn, "t") == 2)
    }

    @Test func lastInsertRowIDAndChanges() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)")
        try conn.run("INSERT INTO t (v) VALUES (?)", [10])
        try conn.run("INSERT INTO t (v) VALUES (?)", [20])
        #expect(conn.lastInsertRowID == 2)
        try conn.run("UPDATE t SET v = v + 1")
        #expect(conn.changes == 2)
        let returned = try conn.query("UPDATE t SET v = 0 WHERE id = ? RETURNING id, v", [1])
        #expect(returned.map(\.values) == [[1, 0]])
    }

    @Test("issue 17: texts bound from the connection's arena are stored as given, whatever their sizes and however many")
    func arenaTextsRoundTrip() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT, d TEXT) STRICT")
        // Sizes around a chunk's: several chunks in one execution, one larger than a chunk
        // (copied by SQLite), empty, multi-byte and with a NUL inside.
        let chunk = TextArena.chunkBytes
        let texts: [[String]] = [
            ["x", "", "ünïcødé ✓", "with\u{0}nul"],
            [String(repeating: "a", count: chunk - 10), String(repeating: "b", count: 20), String(repeating: "c", count: chunk), "d"],
            [String(repeating: "e", count: chunk + 1), String(repeating: "f", count: chunk / 2), String(repeating: "g", count: chunk / 2 + 1), ""],
        ]
        for (index, row) in texts.enumerated() {
            try conn.run("INSERT INTO t (id, a, b, c, d) VALUES (?, ?, ?, ?, ?)", [index, row[0], row[1], row[2], Optional(row[3])])
            // Another execution in between reuses the arena: the stored row must not change.
            #expect(try conn.queryOne("SELECT ? || ?", ["p", "q"])?[0, as: String.self] == "pq")
        }
        try conn.run("UPDATE t SET d = :d WHERE id = :id", [":d": "named", ":id": 0])
        for (index, row) in texts.enumerated() {
            let stored = try #require(try conn.queryOne("SELECT a, b, c, d FROM t WHERE id = ?", [index]))
            let expected = index == 0 ? [row[0], row[1], row[2], "named"] : row
            #expect(try (0..<4).map { try stored[$0, as: String.self] } == expected)
        }
        #expect(try conn.queryOne("SELECT count(*) FROM t WHERE a = ? AND b = ?", [texts[1][0], texts[1][1]])?[0, as: Int.self] == 1)
    }

    @Test("issue 17: a one-call execution leaves no binding pointing into the arena")
    func oneCallExecutionsClearTheirBindings() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let statement = try conn.prepare("SELECT ?")
        #expect(try statement.queryOne(["arena text"])?[0, as: String?.self] == "arena text")
        #expect(try conn.queryOne("SELECT ?, ?", ["other", "texts"]) != nil)   // reuses the arena
        // The same statement, stepped by hand without binding: its parameter is NULL again.
        #expect(try statement.step())
        #expect(try statement.row()[0, as: String?.self] == nil)
        statement.reset()
    }

    @Test("issue 17: a one-call execution sees only its own values, whatever a manual use bound before it")
    func oneCallExecutionsBindEveryParameterAfresh() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let statement = try conn.prepare("SELECT ?1, ?2, :name")
        // A manual use binds copies and leaves them bound.
        try statement.bind("kept 1", at: 1)
        try statement.bind("kept 2", at: 2)
        try statement.bind("kept 3", named: ":name")
        #expect(try statement.step())
        statement.reset()
        let row = try #require(try statement.queryOne([nil as String?, "new", nil as String?]))
        #expect(try row[0, as: String?.self] == nil)
        #expect(try row[1, as: String?.self] == "new")
        #expect(try row[2, as: String?.self] == nil)
        let byName = try conn.prepare("SELECT :a, :b")
        try byName.bind("kept a", named: ":a")
        try byName.bind("kept b", named: ":b")
        #expect(try byName.step())
        byName.reset()
        let named = try #require(try byName.queryOne([":a": nil as String?, ":b": "b"]))
        #expect(try named[0, as: String?.self] == nil)
        #expect(try named[1, as: String?.self] == "b")
    }

    @Test("issue 17: a cached statement given back after a manual use is lent again with every parameter NULL; after a one-call use too")
    func aStatementGivenBackIsLentWithoutBindings() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let sql = "SELECT ?1, ?2"
        do {
            let manual = try conn.prepare(sql)
            try manual.bind("left bound", at: 1)
        }
        do {
            let next = try conn.prepare(sql)
            #expect(try next.step())
            #expect(try next.row()[0, as: String?.self] == nil)
            next.reset()
            // A one-call use, then a manual bind on the same borrower before it is given back.
            #expect(try next.queryOne(["a", "b"])?[1, as: String?.self] == "b")
            try next.bind("bound after", at: 2)
        }
        let third = try conn.prepare(sql)
        #expect(try third.step())
        let row = try third.row()
        #expect(try row[0, as: String?.self] == nil)
        #expect(try row[1, as: String?.self] == nil)
        third.reset()
        _ = try conn.queryOne(sql, ["x", "y"])
        let fourth = try conn.prepare(sql)
        #expect(try fourth.step())
        #expect(try fourth.row()[0, as: String?.self] == nil)
        fourth.reset()
    }
}
