/// Why an access token was refused.
///
/// Every case maps to the same HTTP 401 `{"error":"invalid_token"}` upstream: telling a client
/// *which* check failed helps an attacker more than it helps a legitimate client. The cases exist
/// for logs and tests; `message` is the human-readable text for logs.
public enum AccessTokenError: Error, Equatable, Sendable {
    /// The token is not a well-formed JWS compact serialization (RFC 7515 §7.1) or its
    /// header/payload is not the JSON object this server requires. The string says what was wrong.
    case malformed(String)
    /// The header names an algorithm this server never accepts, notably `none` in any spelling
    /// (RFC 7518 §3.6 unsecured JWS) or an algorithm outside `JWTAlgorithm`.
    /// The string is the (sanitized) `alg` value.
    case unsupportedAlgorithm(String)
    /// The header names a supported algorithm that is not the configured key's algorithm. Refusing this
    /// prevents the key-confusion attack (an HS256 token "signed" with an RSA public key's PEM bytes).
    case algorithmMismatch(expected: JWTAlgorithm, got: String)
    /// The header (`part` "header") or claims set ("payload") names one member twice in an
    /// object: RFC 7515 §5.2 and RFC 7519 §4 require rejecting it rather than picking one copy.
    /// `name` is the (sanitized) member name.
    case duplicateName(part: String, name: String)
    /// The signature did not verify, including signatures of the wrong length.
    case badSignature
    /// `exp` (RFC 7519 §4.1.4) is in the past by more than the leeway.
    case expired
    /// `nbf` (RFC 7519 §4.1.5) is in the future by more than the leeway.
    case notYetValid
    /// A claim this server requires (`sub`, `exp`) is absent. The string is the claim name.
    case missingClaim(String)
    /// A claim is present with the wrong JSON type or an unusable value. The string is the claim name.
    case invalidClaim(String)
    /// The user claim (`sub`, or the configured one: the string) is a non-empty string that cannot
    /// form the user's personal channel `user:{sub}` (SPEC RT-1): longer than
    /// `AccessClaims.maxSubjectLength` or a character outside `A-Z a-z 0-9 _ - : . @`. Refused on
    /// every route, so a user no stream can serve is not served by REST either.
    case unusableSubject(String)
    /// The session claim (`sid`, or the configured one: the string) is an empty string, longer
    /// than `AccessClaims.maxSessionIDLength` bytes (`DELETE /v1/sessions/{sid}` could not name it,
    /// so the session could never be ended, SPEC DV-4), starts with `~` (the spelling of a
    /// sessionless app's standing sessions, AP-5) or is not in Unicode NFC (memory and storage
    /// would disagree on which session it is, ADR 0019): `AccessClaims.isUsableSessionID`.
    /// Refused on every route.
    case unusableSessionID(String)

    /// Human-readable description for logs. Never sent to clients.
    public var message: String {
        switch self {
        case .malformed(let detail): "malformed token: \(detail)"
        case .unsupportedAlgorithm(let alg): "unsupported token algorithm \"\(alg)\""
        case .algorithmMismatch(let expected, let got):
            "token algorithm \"\(got)\" does not match the key's algorithm \(expected.rawValue)"
        case .duplicateName(let part, let name): "token \(part) names \"\(name)\" twice (RFC 7519 §4: names must be unique)"
        case .badSignature: "token signature verification failed"
        case .expired: "token expired"
        case .notYetValid: "token not yet valid (nbf)"
        case .missingClaim(let name): "token is missing required claim \"\(name)\""
        case .invalidClaim(let name): "token claim \"\(name)\" has an invalid type or value"
        case .unusableSubject(let name):
            "token claim \"\(name)\" must be 1-\(AccessClaims.maxSubjectLength) characters of A-Z a-z 0-9 _ - : . @ (it names the user's channel user:{\(name)})"
        case .unusableSessionID(let name):
            "token claim \"\(name)\" must be 1-\(AccessClaims.maxSessionIDLength) bytes (UTF-8), so that DELETE /v1/sessions/{\(name)} can end the session, in Unicode NFC, without NUL (U+0000), and not start with ~ (Herald's names of the standing sessions of apps without sessions)"
        }
    }
}

extension AccessTokenError: CustomStringConvertible {
    /// Same as `message`, so string interpolation in log lines reads naturally.
    public var description: String { message }
}
