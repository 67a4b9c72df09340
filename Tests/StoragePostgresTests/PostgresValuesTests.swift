import HeraldCore
@testable import StoragePostgres
import Testing

/// The adapter's pure parts: the error mapping, parameter texts, row decoding, the URL handling.
@Suite struct PostgresValuesTests {
    @Test(arguments: [
        ("23505", "notifications_id_key", StorageError.ConstraintKind.unique),
        ("23505", "idempotency_keys_pkey", .primaryKey),
        ("23503", nil, .foreignKey),
        ("23514", nil, .check),
        ("23502", nil, .notNull),
        ("23P01", nil, .other),
    ] as [(String, String?, StorageError.ConstraintKind)])
    func constraintViolationsKeepTheirKind(state: String, constraint: String?, kind: StorageError.ConstraintKind) {
        let error = StorageError(PostgresError.server(sqlState: state, message: "m", constraint: constraint))
        guard case .constraint(let found, let message) = error else { Issue.record("got \(error)"); return }
        #expect(found == kind && message.contains(state))
    }

    @Test func serverStatesMapToTheirMeaning() {
        func meaning(_ state: String) -> StorageError { StorageError(PostgresError.server(sqlState: state, message: "m", constraint: nil)) }
        #expect({ if case .busy = meaning("40001") { true } else { false } }())
        #expect({ if case .busy = meaning("40P01") { true } else { false } }())
        #expect({ if case .busy = meaning("55P03") { true } else { false } }())
        #expect({ if case .busy = meaning("57014") { true } else { false } }())
        #expect({ if case .diskFull = meaning("53100") { true } else { false } }())
        #expect({ if case .unavailable = meaning("53300") { true } else { false } }())
        #expect({ if case .unavailable = meaning("57P01") { true } else { false } }())
        #expect({ if case .unavailable = meaning("08006") { true } else { false } }())
        #expect({ if case .readOnly = meaning("25006") { true } else { false } }())
        #expect({ if case .corrupt = meaning("XX001") { true } else { false } }())
        #expect({ if case .misuse = meaning("42601") { true } else { false } }())
        #expect({ if case .failed = meaning("22012") { true } else { false } }())
        #expect({ if case .unavailable = StorageError(PostgresError.connect(message: "refused")) { true } else { false } }())
        #expect({ if case .unavailable = StorageError(PostgresError.connectionLost(message: "eof")) { true } else { false } }())
        #expect(StorageError(PostgresError.closed) == .closed)
        #expect(StorageError(PostgresError.decode(column: "c", expected: "Int64", found: "x")) == .decode(field: "c", expected: "Int64", found: "x"))
        #expect(PostgresError.server(sqlState: "40001", message: "", constraint: nil).isRetryableConflict)
        #expect(!PostgresError.server(sqlState: "23505", message: "", constraint: nil).isRetryableConflict)
    }

    @Test func aBodysOwnErrorCrossesUnchanged() {
        struct Mine: Error, Equatable {}
        #expect(StorageError.mapped(Mine()) is Mine)
        #expect(throws: StorageError.self) { try mapped { throw PostgresError.connect(message: "down") } }
    }

    @Test func parametersAreSentAsPostgresText() {
        #expect(PostgresTextArray(elements: ["a", "b\"c", "d\\e", "", "x,y"]).postgresText == #"{"a","b\"c","d\\e","","x,y"}"#)
        #expect(PostgresInt64Array(elements: [1, -2]).postgresText == "{1,-2}")
        #expect(PostgresInt64Array(elements: []).postgresText == "{}")
        #expect(true.postgresText == "true" && Int64(-5).postgresText == "-5")
        #expect((nil as String?).postgresText == nil && ("x" as String?).postgresText == "x")
    }

    @Test func rowsDecodeByNameAndRefuseWhatTheyCannotRead() throws {
        let row = PostgresRow(columns: ["n": 0, "b": 1, "missing": 2, "s": 3], values: ["42", "t", nil, "text"])
        #expect(try row.value("n", as: Int64.self) == 42)
        #expect(try row.value("b", as: Bool.self))
        #expect(try row.nullable("missing", as: Int64.self) == nil)
        #expect(throws: PostgresError.decode(column: "missing", expected: "Int64", found: "NULL")) { try row.value("missing", as: Int64.self) }
        #expect(throws: PostgresError.decode(column: "s", expected: "Int64", found: "text")) { try row.value("s", as: Int64.self) }
        #expect(throws: PostgresError.decode(column: "nope", expected: "String", found: "no such column")) { try row.value("nope", as: String.self) }
        let job = PostgresRow(columns: ["state": 0], values: ["sleeping"])
        #expect(throws: PostgresError.decode(column: "state", expected: "queued|leased|done|dead", found: "sleeping")) {
            try JobRecord(row: job)
        }
        #expect(throws: PostgresError.self) { try StringArrayJSON.decode("{not json", column: "permissions_json") }
        #expect(try StringArrayJSON.decode(try StringArrayJSON.encode(["a/b", "é"]), column: "c") == ["a/b", "é"])
    }

    @Test func urlsSelectTheAdapterAndGetBoundedWaits() {
        #expect(PostgresConfiguration.isPostgresURL("postgres://u@h/db"))
        #expect(PostgresConfiguration.isPostgresURL("PostgreSQL://u@h:5/db"))
        #expect(!PostgresConfiguration.isPostgresURL("./herald.db"))
        #expect(!PostgresConfiguration.isPostgresURL(":memory:"))
        let plain = PostgresConfiguration(url: "postgres://u@h/db").connectionString
        #expect(plain.hasPrefix("postgres://u@h/db?connect_timeout=5&") && plain.contains("keepalives=1") && plain.contains("tcp_user_timeout="))
        let own = PostgresConfiguration(url: "postgres://u@h/db?sslmode=require&connect_timeout=9").connectionString
        #expect(own.contains("sslmode=require&connect_timeout=9&keepalives=1") && !own.contains("connect_timeout=5"))
        #expect(PostgresConfiguration(url: "postgres://u:secret@h:5432/db").redactedURL == "postgres://u:***@h:5432/db")
        #expect(PostgresConfiguration(url: "postgres://u@h/db").redactedURL == "postgres://u@h/db")
    }

    /// libpq also reads a password (and a client key's passphrase) from the URI's parameters; the
    /// start log line and `/readyz`'s problems showed them (breaker8).
    @Test func aPasswordGivenAsAURIParameterIsRedactedToo() {
        #expect(PostgresConfiguration(url: "postgres://u@h:5432/db?sslmode=require&password=s3cret").redactedURL
                == "postgres://u@h:5432/db?sslmode=require&password=***")
        #expect(PostgresConfiguration(url: "postgresql://u:a@h/db?PassWord=b&sslpassword=c&application_name=x").redactedURL
                == "postgresql://u:***@h/db?PassWord=***&sslpassword=***&application_name=x")
        // An @ or : in the query is not user info.
        #expect(PostgresConfiguration(url: "postgres://h:5432/db?password=x@y:z").redactedURL == "postgres://h:5432/db?password=***")
        #expect(PostgresConfiguration(url: "postgres://u@h/db?passwordless=1").redactedURL == "postgres://u@h/db?passwordless=1")
    }
}
