import Foundation

/// A browser's push subscription (RFC 8030 §5, RFC 8291 §2): where its push service takes
/// messages for it and the keys a message is encrypted to. What `PushSubscription.toJSON()`
/// gives a page: `{"endpoint": "https://…", "keys": {"p256dh": "…", "auth": "…"}}`.
///
/// Stored as a device's token (`devices.token`, provider `webpush`) in one line,
/// `<endpoint>#p256dh=<base64url>&auth=<base64url>` (`token`): a push service never hands out an
/// endpoint with a fragment (none is sent over HTTP), so the split is unambiguous, the endpoint
/// stays readable in listings, and the same subscription registered twice is the same token.
public struct WebPushSubscription: Sendable, Equatable {
    /// The push service's URL for this subscription: `https://` (or, where the deployment allows
    /// it, `http://` on a loopback host), no fragment, no user info, at most 2048 bytes; scheme and
    /// host in lower case, no default port.
    public let endpoint: String
    /// The user agent's P-256 public key, 65 bytes uncompressed (`0x04 || X || Y`, RFC 8291 §3.1).
    public let p256dh: [UInt8]
    /// The 16-byte authentication secret (RFC 8291 §3.2).
    public let auth: [UInt8]

    /// Longest endpoint accepted, bytes (real ones are 100–500).
    public static let maxEndpointBytes = 2048

    /// Checks a subscription as a browser sends it.
    ///
    /// - Parameters:
    ///   - endpoint: the push service URL.
    ///   - p256dh: base64url (padding tolerated) of the 65-byte uncompressed P-256 point.
    ///   - auth: base64url of the 16-byte secret.
    ///   - allowLoopbackHTTP: accept `http://` for `127.0.0.0/8`, `localhost` and `[::1]`
    ///     (dev mode and tests; a real push service is always https).
    ///   - allowPrivateHosts: accept a host that `PublicHostRule` refuses (loopback, private,
    ///     link-local… addresses, local names): `HERALD_WEBPUSH_ALLOW_PRIVATE` (dev mode, tests).
    ///     `allowLoopbackHTTP` needs it too, loopback hosts being private.
    /// - Throws: `WebPushSubscriptionError` naming the field at fault (`.endpointNotPublic` for
    ///   a host refused by `PublicHostRule`).
    public init(endpoint: String, p256dh: String, auth: String, allowLoopbackHTTP: Bool,
                allowPrivateHosts: Bool) throws(WebPushSubscriptionError) {
        try Self.checkEndpoint(endpoint, allowLoopbackHTTP: allowLoopbackHTTP)
        if !allowPrivateHosts, let reason = Self.nonPublicHost(of: endpoint) {
            throw .endpointNotPublic("endpoint host \(reason): a Web Push endpoint must be a push service on the public internet "
                                     + "(HERALD_WEBPUSH_ALLOW_PRIVATE=1 allows others, for tests)")
        }
        guard let point = Self.base64URLDecode(p256dh), point.count == 65, point[0] == 0x04 else {
            throw .p256dh("p256dh must be the base64url of a 65-byte uncompressed P-256 public key (starting with 0x04)")
        }
        guard let secret = Self.base64URLDecode(auth), secret.count == 16 else {
            throw .auth("auth must be the base64url of a 16-byte secret")
        }
        self.endpoint = Self.normalized(endpoint)
        self.p256dh = point
        self.auth = secret
    }

    /// Reads the stored form (`token`). Loopback `http://` endpoints and private hosts parse here:
    /// whether they may be registered is the API's decision, made at registration, and whether
    /// they are sent to the provider's (`nonPublicHost`).
    ///
    /// - Throws: `DeviceTokenError` with a message for field `token`.
    public init(token: String) throws(DeviceTokenError) {
        guard let hash = token.lastIndex(of: "#") else {
            throw DeviceTokenError("a web push token is <endpoint>#p256dh=<base64url>&auth=<base64url>; register the browser's subscription as \"subscription\"")
        }
        let endpoint = String(token[..<hash])
        var p256dh: String?, auth: String?
        for pair in token[token.index(after: hash)...].split(separator: "&", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            switch parts[0] {
            case "p256dh": p256dh = String(parts[1])
            case "auth": auth = String(parts[1])
            default: continue
            }
        }
        do {
            try self.init(endpoint: endpoint, p256dh: p256dh ?? "", auth: auth ?? "", allowLoopbackHTTP: true, allowPrivateHosts: true)
        } catch {
            throw DeviceTokenError(error.message, field: error.field)
        }
    }

    /// The stored form: `<endpoint>#p256dh=<base64url>&auth=<base64url>` (unpadded).
    public var token: String {
        endpoint + "#p256dh=" + Self.base64URLEncode(p256dh) + "&auth=" + Self.base64URLEncode(auth)
    }

    /// `scheme://host[:port]` of the endpoint, lower-case, default port left out: the VAPID
    /// token's `aud` (RFC 8292 §2).
    public var origin: String {
        // The endpoint is stored in that form up to its path (`normalized`), and has no user info.
        let components = URLComponents(string: endpoint)!
        return String(endpoint[..<(components.rangeOfPort ?? components.rangeOfHost)!.upperBound])
    }

    /// Whether the endpoint is plain `http://` (only ever a loopback host).
    public var isHTTP: Bool { endpoint.lowercased().hasPrefix("http:") }

    /// Why the endpoint's host is not on the public internet (`PublicHostRule.refusal(host:)`),
    /// or nil. A public name may still resolve to a private address: the transport checks that
    /// (`PushHTTPRequest.publicAddressesOnly`).
    public var nonPublicHost: String? { Self.nonPublicHost(of: endpoint) }

    private static func nonPublicHost(of endpoint: String) -> String? {
        // Foundation gives an IPv6 host without its brackets; the rule takes either.
        guard let host = URLComponents(string: endpoint)?.host else { return "of \(endpoint) cannot be read" }
        return PublicHostRule.refusal(host: host)
    }

    private static func checkEndpoint(_ endpoint: String, allowLoopbackHTTP: Bool) throws(WebPushSubscriptionError) {
        guard !endpoint.isEmpty, endpoint.utf8.count <= maxEndpointBytes, endpoint.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .endpoint("endpoint must be an https URL of 1-\(maxEndpointBytes) printable ASCII characters")
        }
        guard let components = URLComponents(string: endpoint), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty, components.user == nil, components.password == nil,
              components.fragment == nil, !endpoint.contains("#") else {
            throw .endpoint("endpoint must be an absolute https URL without user info or fragment")
        }
        // A port no connection can use would be stored and then fail every push in the transport
        // until the retry budget is spent.
        if let range = components.rangeOfPort, !range.isEmpty {
            let port = endpoint[range]
            guard port.count <= 5, let number = Int(port), (1...65535).contains(number) else {
                throw .endpoint("endpoint's port must be 1-65535, not \(port)")
            }
        }
        switch scheme {
        case "https": return
        case "http" where allowLoopbackHTTP && isLoopback(host: host): return
        case "http" where isLoopback(host: host):
            throw .endpoint("endpoint must be https (http://127.0.0.1 is allowed only in dev mode or with HERALD_WEBPUSH_ALLOW_HTTP=1)")
        default:
            throw .endpoint("endpoint must be an https URL")
        }
    }

    /// The endpoint with its scheme and host in lower case and a default port left out (RFC 3986
    /// §6.2.2.1, §6.2.3): the same subscription spelled another way is then the same token, so
    /// it registers as one device, not two that each get every push. Path and query are kept
    /// as given (a push service may tell its subscriptions apart by case there).
    private static func normalized(_ endpoint: String) -> String {
        // `checkEndpoint` accepted it, so the components are there.
        let components = URLComponents(string: endpoint)!
        guard let schemeRange = components.rangeOfScheme, let hostRange = components.rangeOfHost else { return endpoint }
        let scheme = endpoint[schemeRange].lowercased()
        var rest = endpoint[hostRange.upperBound...]
        if let port = components.rangeOfPort.map({ endpoint[$0] }), (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
            rest = endpoint[port.endIndex...]
        }
        return scheme + endpoint[schemeRange.upperBound..<hostRange.lowerBound] + endpoint[hostRange].lowercased() + rest
    }

    private static func isLoopback(host: String) -> Bool {
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    /// Strict base64url: the URL-safe alphabet only, padding tolerated at the end (some libraries
    /// pad), canonical trailing bits.
    static func base64URLDecode(_ text: String) -> [UInt8]? {
        var body = Substring(text)
        while body.hasSuffix("=") { body = body.dropLast() }
        guard !body.isEmpty, body.utf8.allSatisfy({ $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }),
              body.utf8.count % 4 != 1 else { return nil }
        var standard = body.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: standard) else { return nil }
        let bytes = [UInt8](data)
        // Non-canonical spellings (stray trailing bits) would give one key several tokens.
        guard base64URLEncode(bytes) == body else { return nil }
        return bytes
    }

    static func base64URLEncode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
    }
}

/// Why a subscription was refused at registration; each case names its field for the 400.
public enum WebPushSubscriptionError: Error, Equatable, Sendable {
    /// The endpoint is not an acceptable URL.
    case endpoint(String)
    /// `keys.p256dh` is not a 65-byte uncompressed P-256 point.
    case p256dh(String)
    /// `keys.auth` is not 16 bytes.
    case auth(String)
    /// The endpoint's host is not on the public internet (`PublicHostRule`): a 400
    /// `endpoint_not_public` on `subscription.endpoint`.
    case endpointNotPublic(String)

    /// The request field at fault, as the API names it.
    public var field: String {
        switch self {
        case .endpoint, .endpointNotPublic: "subscription.endpoint"
        case .p256dh: "subscription.keys.p256dh"
        case .auth: "subscription.keys.auth"
        }
    }

    /// The rule the value breaks.
    public var message: String {
        switch self {
        case .endpoint(let text), .p256dh(let text), .auth(let text), .endpointNotPublic(let text): text
        }
    }

    /// The API's error code: `endpoint_not_public` for a host refused by `PublicHostRule`,
    /// `invalid_request` for the rest.
    public var code: String {
        if case .endpointNotPublic = self { return "endpoint_not_public" }
        return "invalid_request"
    }
}
