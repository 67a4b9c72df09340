import Foundation

/// An origin as a browser writes it in its `Origin` header (RFC 6454 §6.2): `http` or `https`,
/// `://`, the host in lower case (a name, an IPv4 address or a bracketed IPv6 one), a port only
/// when it is not the scheme's default, nothing after. CORS compares the header with the allowed
/// origins as written, so an allowed origin in any other form would never match and would
/// silently leave CORS off; `HERALD_CORS_ORIGINS` and an app's `cors_origins` are checked with it.
public struct CORSOrigin: Sendable, Hashable {
    /// The origin, exactly as a browser sends it (`https://app.example`, `http://127.0.0.1:8080`).
    public let rawValue: String

    /// - Throws: `CORSOriginError` saying what is wrong and, where it can, the form a browser sends.
    public init(_ origin: String) throws(CORSOriginError) {
        if let problem = Self.problem(origin) { throw CORSOriginError(origin: origin, reason: problem) }
        rawValue = origin
    }

    /// Checks a list of allowed origins (`HERALD_CORS_ORIGINS`, an app's `cors_origins`): each
    /// is `*` (every origin) or an origin.
    /// - Throws: `CORSOriginError` for the first that is neither.
    public static func checkAllowed(_ values: [String]) throws(CORSOriginError) {
        for value in values where value != "*" { _ = try CORSOrigin(value) }
    }

    private static func problem(_ origin: String) -> String? {
        let scheme: String
        if origin.hasPrefix("https://") { scheme = "https" } else if origin.hasPrefix("http://") { scheme = "http" } else {
            return origin.lowercased().hasPrefix("http") && origin.contains("://")
                ? "write the scheme in lower case, as browsers send it (\(origin.lowercased()))"
                : "the scheme must be http or https"
        }
        let rest = origin.dropFirst(scheme.count + 3)
        guard !rest.isEmpty else { return "the host is missing" }
        let authority = rest[..<(rest.firstIndex(where: { "/?#".contains($0) }) ?? rest.endIndex)]
        if authority.contains("@") {
            return "an origin has no user info; browsers send \(suggestion(scheme, authority))"
        }
        if authority.endIndex != rest.endIndex {
            return "an origin has no path, query or fragment; browsers send \(suggestion(scheme, authority))"
        }
        var host = Substring(rest)
        var port: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return "an IPv6 host needs its closing ]" }
            let after = host[host.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return "only :port may follow the host" }
                port = after.dropFirst()
            }
            host = host[...close]
            guard host.dropFirst().dropLast().allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }), host.count > 2 else {
                return "not an IPv6 address"
            }
        } else if let colon = host.firstIndex(of: ":") {
            port = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty else { return "the host is missing" }
        if !host.hasPrefix("[") {
            guard host.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == ".") }) else {
                return "a host is letters, digits, - and . (an international name in its xn-- form)"
            }
        }
        if host != host.lowercased() {
            return "write the host in lower case, as browsers send it (\(suggestion(scheme, rest)))"
        }
        if let port {
            guard !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }), port.first != "0",
                  let number = Int(port), (1...65535).contains(number) else {
                return "the port must be 1-65535"
            }
            if (scheme == "https" && number == 443) || (scheme == "http" && number == 80) {
                return "browsers leave out the scheme's default port: \(scheme)://\(host)"
            }
        }
        return nil
    }


    /// `scheme://authority` as a browser would write it: lower case, without user info or the default port.
    private static func suggestion(_ scheme: String, _ authority: Substring) -> String {
        var hostPort = authority.lowercased()
        if let at = hostPort.lastIndex(of: "@") { hostPort = String(hostPort[hostPort.index(after: at)...]) }
        let defaultPort = scheme == "https" ? ":443" : ":80"
        if hostPort.hasSuffix(defaultPort) { hostPort.removeLast(defaultPort.count) }
        return "\(scheme)://\(hostPort)"
    }
}

/// Why a text is not a `CORSOrigin`.
public struct CORSOriginError: Error, Sendable, Equatable {
    /// The text refused.
    public let origin: String
    /// What is wrong with it, with the browser's form where one can be given.
    public let reason: String

    /// `<origin> is not an origin (scheme://host[:port]) or *: <reason>`.
    public var message: String { "\(origin) is not an origin (scheme://host[:port]) or *: \(reason)" }
}
