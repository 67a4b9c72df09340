/// A Swift value bound to a statement parameter, sent in PostgreSQL's text format (the server
/// parses it as the parameter's type, which the SQL fixes with a cast where the context does not).
protocol PostgresBindable {
    /// The text the server parses; nil for SQL NULL.
    var postgresText: String? { get }
}

extension String: PostgresBindable {
    var postgresText: String? { self }
}

extension Int64: PostgresBindable {
    var postgresText: String? { String(self) }
}

extension Int: PostgresBindable {
    var postgresText: String? { String(self) }
}

extension Bool: PostgresBindable {
    var postgresText: String? { self ? "true" : "false" }
}

extension Optional: PostgresBindable where Wrapped: PostgresBindable {
    var postgresText: String? { self?.postgresText }
}

/// A text array parameter (`$1::text[]`), quoted as PostgreSQL's array input syntax wants:
/// every element in double quotes, with `"` and `\` escaped.
struct PostgresTextArray: PostgresBindable {
    let elements: [String]

    var postgresText: String? {
        "{" + elements.map { element in
            var quoted = "\""
            for character in element {
                if character == "\"" || character == "\\" { quoted.append("\\") }
                quoted.append(character)
            }
            return quoted + "\""
        }.joined(separator: ",") + "}"
    }
}

/// A bigint array parameter (`$1::bigint[]`).
struct PostgresInt64Array: PostgresBindable {
    let elements: [Int64]

    var postgresText: String? { "{" + elements.map(String.init).joined(separator: ",") + "}" }
}

/// A Swift type a result column (text format) is read as.
protocol PostgresDecodable {
    /// Parses the server's text for the value; nil when it is not one.
    init?(postgresText: String)
}

extension String: PostgresDecodable {
    init?(postgresText: String) { self = postgresText }
}

extension Int64: PostgresDecodable {
    init?(postgresText: String) { self.init(postgresText) }
}

extension Int: PostgresDecodable {
    init?(postgresText: String) { self.init(postgresText) }
}

extension Bool: PostgresDecodable {
    /// `t`/`f` as the server writes a boolean.
    init?(postgresText: String) {
        switch postgresText {
        case "t", "true": self = true
        case "f", "false": self = false
        default: return nil
        }
    }
}

/// One result row, its values as the server's text (nil for NULL), read by column name.
struct PostgresRow {
    /// Column name → index, shared by the rows of one result.
    let columns: [String: Int]
    let values: [String?]

    /// The non-NULL value of `column`.
    /// - Throws: `PostgresError.decode` when the column is missing, NULL or not a `T`.
    func value<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        guard let value = try nullable(column, as: T.self) else {
            throw PostgresError.decode(column: column, expected: "\(T.self)", found: "NULL")
        }
        return value
    }

    /// The value of `column`, nil for NULL.
    /// - Throws: `PostgresError.decode` when the column is missing or not a `T`.
    func nullable<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T? {
        guard let index = columns[column] else {
            throw PostgresError.decode(column: column, expected: "\(T.self)", found: "no such column")
        }
        guard let text = values[index] else { return nil }
        guard let value = T(postgresText: text) else {
            throw PostgresError.decode(column: column, expected: "\(T.self)", found: text)
        }
        return value
    }
}
