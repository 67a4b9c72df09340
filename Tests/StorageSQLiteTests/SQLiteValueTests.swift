import Foundation
import HeraldCore
@testable import StorageSQLite
import Testing

/// Bind → store → read back, for every storage class and the edges of each.
@Suite struct SQLiteValueTests {
    static let roundTripValues: [SQLiteValue] = [
        .null,
        .integer(0), .integer(-1), .integer(42), .integer(Int64.min), .integer(Int64.max),
        .real(0.1), .real(-2.5), .real(.infinity), .real(-.infinity),
        .real(.greatestFiniteMagnitude), .real(.leastNonzeroMagnitude),
        .text(""), .text("plain"), .text("héllo wörld"), .text("日本語のテキスト"),
        .text("👩‍👩‍👧‍👦 family + e\u{301} combining"), .text("nul\u{0}inside"),
        .text(String(repeating: "ab", count: 50_000)),
        .blob([]), .blob([0]), .blob([0, 255, 0, 1]), .blob((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }),
    ]

    @Test(arguments: roundTripValues)
    func valueSurvivesATableRoundTrip(_ value: SQLiteValue) throws {
        let conn = try SQLiteConnection(path: ":memory:")
        try conn.execute("CREATE TABLE t (v)")  // no declared type: no affinity, values kept as bound
        try conn.run("INSERT INTO t (v) VALUES (?)", [value])
        let row = try #require(try conn.queryOne("SELECT v, typeof(v) AS type FROM t"))
        #expect(try row["v", as: SQLiteValue.self] == value)
        #expect(try row["type", as: String.self] == value.typeName.lowercased())
    }

    @Test func emptyTextAndEmptyBlobAreNotNull() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let row = try #require(try conn.queryOne("SELECT ?1 IS NULL, typeof(?1), length(?1), ?2 IS NULL, typeof(?2), length(?2)",
                                                 ["", [UInt8]()]))
        #expect(row.values == [0, "text", 0, 0, "blob", 0])
    }

    @Test func nanIsStoredAsNull() throws {
        // SQLite's documented behaviour for sqlite3_bind_double(NaN): callers must not rely on NaN.
        let conn = try SQLiteConnection(path: ":memory:")
        #expect(try conn.queryOne("SELECT ?", [Double.nan])!.values == [.null])
    }

    @Test func swiftTypesBindAndDecode() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let moment = Date(unixMilliseconds: 1_700_000_000_123)
        let bytes: [UInt8] = [1, 2, 3]
        let missing: String? = nil
        let row = try #require(try conn.queryOne(
            "SELECT ? AS int, ? AS int64, ? AS int32, ? AS double, ? AS yes, ? AS no, ? AS text, ? AS bytes, ? AS date, ? AS missing, ? AS present",
            [Int.max, Int64.min, Int32.min, 1.5, true, false, "ü", bytes, moment, missing, Optional("here")]))
        #expect(try row["int", as: Int.self] == .max)
        #expect(try row["int64", as: Int64.self] == .min)
        #expect(try row["int32", as: Int32.self] == .min)
        #expect(try row["double", as: Double.self] == 1.5)
        #expect(try row["yes", as: Bool.self] == true)
        #expect(try row["no", as: Bool.self] == false)
        #expect(try row["text", as: String.self] == "ü")
        #expect(try row["bytes", as: [UInt8].self] == bytes)
        #expect(try row["date", as: Date.self] == moment)
        #expect(try row["date", as: Int64.self] == 1_700_000_000_123)
        #expect(try row["missing", as: String?.self] == nil)
        #expect(try row["present", as: String?.self] == "here")
        let byIndex: String = try row[6]
        #expect(byIndex == "ü")
        #expect(row.columnNames.first == "int")
    }

    @Test func dateIsStoredAsUnixMillisecondsRoundedToTheNearest() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let date = Date(timeIntervalSince1970: 1.2346)  // 1234.6 ms
        #expect(try conn.queryOne("SELECT ?", [date])!.values == [.integer(1235)])
        // Every millisecond survives Date's Double (seconds since 2001) thanks to the rounding.
        let now: Int64 = 1_764_000_000_000
        for ms in [Int64(-1), 0, 1, 253_402_300_799_999] + Array(now..<(now + 10_000)) {
            #expect(Date(unixMilliseconds: ms).unixMilliseconds == ms)
        }
    }

    @Test func integerReadsAsDoubleButNotTheOtherWay() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let row = try #require(try conn.queryOne("SELECT 3 AS i, 3.5 AS r"))
        #expect(try row["i", as: Double.self] == 3)
        #expect(throws: SQLiteError.decode(column: "r", expected: "Int64", found: "REAL")) {
            try row["r", as: Int64.self]
        }
    }

    @Test func decodeErrorsNameColumnExpectedAndFound() throws {
        let conn = try SQLiteConnection(path: ":memory:")
        let row = try #require(try conn.queryOne("SELECT NULL AS gone, 'x' AS word, 2 AS two, 5000000000 AS big, x'00' AS blob"))
        #expect(throws: SQLiteError.decode(column: "gone", expected: "String", found: "NULL")) { try row["gone", as: String.self] }
        #expect(throws: SQLiteError.decode(column: "word", expected: "Int", found: "TEXT")) { try row["word", as: Int.self] }
        #expect(throws: SQLiteError.decode(column: "two", expected: "Bool", found: "INTEGER")) { try row["two", as: Bool.self] }
        #expect(throws: SQLiteError.decode(column: "big", expected: "Int32", found: "INTEGER")) { try row["big", as: Int32.self] }
        #expect(throws: SQLiteError.decode(column: "blob", expected: "String", found: "BLOB")) { try row["blob", as: String.self] }
        #expect(throws: SQLiteError.decode(column: "word", expected: "Optional<Int64>", found: "TEXT")) { try row["word", as: Int64?.self] }
        #expect(throws: SQLiteError.decode(column: "nope", expected: "Int", found: "no such column")) { try row["nope", as: Int.self] }
    }

    @Test func literalsBuildValues() {
        let values: [SQLiteValue] = [nil, 1, 2.5, "x", true]
        #expect(values == [.null, .integer(1), .real(2.5), .text("x"), .integer(1)])
    }
}
