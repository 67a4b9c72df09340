import PushHTTP

/// Issues HS256 access tokens (RFC 7519 §7.1) for dev mode, where Herald is its own identity provider.
///
/// Production deployments should have their auth service issue tokens and give Herald only the
/// verification key; this type exists so a local setup needs no second service.
///
/// Output is deterministic: header `{"alg":"HS256","typ":"JWT"}`, then the payload with members in the
/// fixed order `sub, sid, iat, nbf, exp, channels, session_exp, app`, compact (no whitespace), nil members
/// omitted, `channels` omitted when empty; `app` is `claims.appClaim` (ADR 0006: it routes the token to
/// that app). Strings escape only what RFC 8259 §7 requires (`"`, `\`,
/// control characters) — the same bytes as Python's `json.dumps(..., separators=(",", ":"),
/// ensure_ascii=False)`, which the test vectors rely on.
public struct AccessTokenIssuer: Sendable {
    private let secret: [UInt8]

    /// Base64url of `{"alg":"HS256","typ":"JWT"}`, computed once since it never varies.
    private static let encodedHeader = Base64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))

    /// - Parameter secret: the raw HMAC secret; must be non-empty (traps otherwise, because tokens
    ///   signed with an empty secret can be forged by anyone and `VerificationKey.hmac` refuses it).
    public init(secret: [UInt8]) {
        precondition(!secret.isEmpty, "AccessTokenIssuer needs a non-empty HMAC secret")
        self.secret = secret
    }

    /// Encodes and signs `claims`.
    ///
    /// - Parameter claims: the claims to embed; not validated (an empty `subject` yields a token the
    ///   verifier will refuse).
    /// - Returns: the compact JWS `header.payload.signature`.
    public func issue(_ claims: AccessClaims) -> String {
        let signingInput = Self.encodedHeader + "." + Base64URL.encode(Self.payload(claims))
        let mac = Array(signingInput.utf8).withUnsafeBytes { VerificationKey.hmacSHA256(key: secret, data: $0) }
        return signingInput + "." + Base64URL.encode(mac)
    }

    /// Encodes `claims` as `issue` does and signs them with `signer` (dev mode's stored demo app,
    /// whose tokens verify with a public key: `DevAppKey`). Header `{"alg":<signer's>,"typ":"JWT"}`.
    ///
    /// - Throws: `JWTSigningError` when OpenSSL cannot sign.
    public static func issue(_ claims: AccessClaims, signer: some JWTSigner) throws(JWTSigningError) -> String {
        let header = Base64URL.encode(Array(#"{"alg":"\#(signer.algorithm)","typ":"JWT"}"#.utf8))
        let signingInput = header + "." + Base64URL.encode(payload(claims))
        return signingInput + "." + Base64URL.encode(try signer.sign(Array(signingInput.utf8)))
    }

    /// The payload bytes, members in the documented order.
    static func payload(_ claims: AccessClaims) -> [UInt8] {
        var json = JSONObjectWriter()
        json.add("sub", string: claims.subject)
        if let sid = claims.sessionID { json.add("sid", string: sid) }
        if let iat = claims.issuedAt { json.add("iat", number: iat) }
        if let nbf = claims.notBefore { json.add("nbf", number: nbf) }
        json.add("exp", number: claims.expiresAt)
        if !claims.channels.isEmpty { json.add("channels", strings: claims.channels) }
        if let sessionExp = claims.sessionExpiresAt { json.add("session_exp", number: sessionExp) }
        if let app = claims.appClaim { json.add("app", string: app) }
        return json.finish()
    }
}

/// Minimal JSON object writer with a caller-controlled member order (JSONEncoder cannot promise one
/// short of `.sortedKeys`, and byte-stable output is what makes issuer test vectors possible).
private struct JSONObjectWriter {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]

    mutating func add(_ name: String, string value: String) {
        member(name)
        appendString(value)
    }

    mutating func add(_ name: String, number value: Int64) {
        member(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func add(_ name: String, strings values: [String]) {
        member(name)
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            appendString(value)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    mutating func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private mutating func member(_ name: String) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        appendString(name)
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func appendString(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case 0x08: bytes.append(contentsOf: #"\b"#.utf8)
            case 0x0C: bytes.append(contentsOf: #"\f"#.utf8)
            case 0x0A: bytes.append(contentsOf: #"\n"#.utf8)
            case 0x0D: bytes.append(contentsOf: #"\r"#.utf8)
            case 0x09: bytes.append(contentsOf: #"\t"#.utf8)
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0x0F)])
            default:
                // Multi-byte UTF-8 passes through untouched: valid JSON, and Swift Strings are valid UTF-8.
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
