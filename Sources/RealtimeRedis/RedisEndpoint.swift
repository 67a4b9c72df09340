/// Where Redis listens: `HERALD_BROKER=redis://host:port[/db]` (SC-1). No password or TLS:
/// hiredis 0.14 has no TLS, and Redis is expected on a private network.
public struct RedisEndpoint: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: Int32
    /// The logical database (`SELECT`), 0 by default.
    public let database: Int

    public init(host: String, port: Int32 = 6379, database: Int = 0) {
        self.host = host
        self.port = port
        self.database = database
    }

    /// Parses `redis://host[:port][/db]`; an IPv6 host is bracketed, `redis://[::1]:6379`.
    /// - Returns: nil for another scheme, an empty host, a host with an unbalanced bracket or a
    ///   bare colon (an IPv6 address without brackets), a port outside 1–65535, a database that
    ///   is not a number 0–65535, or anything after the database (user info, query).
    public init?(url: String) {
        guard url.hasPrefix("redis://") else { return nil }
        let rest = url.dropFirst("redis://".count)
        let slash = rest.firstIndex(of: "/")
        let authority = slash.map { rest[..<$0] } ?? rest
        var database = 0
        if let slash {
            let path = rest[rest.index(after: slash)...]
            if !path.isEmpty {
                guard path.utf8.count <= 5, path.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let number = Int(path), number <= 65535 else { return nil }
                database = number
            }
        }
        guard !authority.isEmpty, !authority.contains("@"), !authority.contains("?") else { return nil }
        // An IPv6 literal is bracketed (RFC 3986 §3.2.2): `[::1]:6379`; hiredis takes it bare.
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard host.contains(":"), after.isEmpty || after.hasPrefix(":") else { return nil }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = Substring(authority)
        }
        // A bracket or colon left in the host is a mistyped URL (`[::1:6379`, `::1`), not a name.
        guard !host.isEmpty, authority.hasPrefix("[") || !host.contains(where: { $0 == ":" || $0 == "[" || $0 == "]" }),
              !host.contains(where: { $0 == "[" || $0 == "]" }) else { return nil }
        var port: Int32 = 6379
        if let digits = portText {
            guard (1...5).contains(digits.utf8.count), digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                  let number = Int32(digits), (1...65535).contains(number) else { return nil }
            port = number
        }
        self.init(host: String(host), port: port, database: database)
    }

    public var description: String { "redis://\(authority)/\(database)" }

    /// `host:port`, an IPv6 host in brackets, as a URL writes it.
    public var authority: String { "\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// `url` with any user info (`user:password@`) of its authority shown as `***@`, for an
    /// error message or a log line: a refused `HERALD_BROKER` must not print a password that
    /// was put there (Herald sends no `AUTH`, so such a URL is refused, not used).
    public static func redacted(url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return url }
        return String(url[..<scheme.upperBound]) + "***" + String(rest[at...])
    }
}
