/// Where and how `PostgresStorage` connects.
public struct PostgresConfiguration: Sendable, Equatable {
    /// The `postgres://` or `postgresql://` URI (`HERALD_DATABASE`), as libpq reads it
    /// (`postgres://user:password@host:port/db?param=value`).
    public var url: String
    /// Reader connections (each on its own queue); writes have one connection of their own.
    public var readers: Int = 2
    /// Seconds a connect may take (libpq `connect_timeout`) unless the URL sets it.
    public var connectTimeoutSeconds: Int = 5
    /// Milliseconds one statement may run (`statement_timeout`) before `StorageError.busy`.
    public var statementTimeoutMilliseconds: Int = 30_000
    /// Milliseconds this node waits for the answer to one statement before it closes the
    /// connection and fails the call with `StorageError.unavailable`: the bound on a server that
    /// is stopped or frozen, which never fires its own `statement_timeout`. Above that timeout,
    /// so a slow statement on a live server is still ended by the server (`.busy`).
    public var clientDeadlineMilliseconds: Int = 32_000
    /// Milliseconds a statement waits for a row or advisory lock (`lock_timeout`) before `.busy`.
    public var lockTimeoutMilliseconds: Int = 10_000
    /// Times a unit of work is run in all when it fails with a serialization failure or a deadlock.
    public var conflictAttempts: Int = 3
    /// The first wait after a failed connect, in milliseconds; it doubles up to `maxBackoffMilliseconds`.
    /// While waiting, units of work fail at once with `StorageError.unavailable`.
    public var initialBackoffMilliseconds: Int64 = 100
    /// The longest wait between connects, in milliseconds.
    public var maxBackoffMilliseconds: Int64 = 2_000

    public init(url: String) {
        self.url = url
    }

    /// Whether `value` names PostgreSQL (`postgres://` or `postgresql://`): `HERALD_DATABASE`
    /// selects this adapter with it and stays a SQLite path otherwise.
    public static func isPostgresURL(_ value: String) -> Bool {
        let lowered = value.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// The URL with bounded waits added where it sets none: `connect_timeout`, TCP keepalives
    /// and `tcp_user_timeout`, so neither a connect nor a call waits forever on a dead peer.
    var connectionString: String {
        var parameters: [(String, String)] = [("connect_timeout", String(connectTimeoutSeconds)), ("keepalives", "1"),
                                              ("keepalives_idle", "10"), ("keepalives_interval", "3"),
                                              ("keepalives_count", "3"), ("tcp_user_timeout", "20000"),
                                              ("application_name", "herald")]
        parameters.removeAll { url.contains($0.0 + "=") }
        guard !parameters.isEmpty else { return url }
        let query = parameters.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        return url + (url.contains("?") ? "&" : "?") + query
    }

    /// The statements each new connection runs first.
    var sessionSetup: String {
        "SET statement_timeout = \(statementTimeoutMilliseconds); SET lock_timeout = \(lockTimeoutMilliseconds); SET TIME ZONE 'UTC'"
    }

    /// The URL without its passwords, for logs, errors and `/readyz`: the user info's, and the
    /// values of the URI parameters libpq reads secrets from (`password`, `sslpassword`).
    public var redactedURL: String {
        guard let scheme = url.range(of: "://") else { return url }
        // User info is in the authority only: an @ or : in the path or query is not one.
        let authorityEnd = url[scheme.upperBound...].firstIndex { $0 == "/" || $0 == "?" } ?? url.endIndex
        var head = String(url[..<authorityEnd])
        if let at = url[scheme.upperBound..<authorityEnd].lastIndex(of: "@"),
           let colon = url[scheme.upperBound..<at].firstIndex(of: ":") {
            head = String(url[..<colon]) + ":***" + String(url[at..<authorityEnd])
        }
        let rest = url[authorityEnd...]
        guard let question = rest.firstIndex(of: "?") else { return head + rest }
        let parameters = rest[rest.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map { item in
            let name = item.prefix { $0 != "=" }
            return Self.secretParameters.contains(name.lowercased()) && name.count < item.count ? name + "=***" : String(item)
        }
        return head + rest[...question] + parameters.joined(separator: "&")
    }

    /// libpq's connection parameters whose values are secrets.
    private static let secretParameters: Set<String> = ["password", "sslpassword"]
}
