/// Builds signed JWTs in JWS compact serialization (RFC 7515 §7.1):
/// `base64url(header) "." base64url(claims) "." base64url(signature)`, no padding anywhere.
///
/// Header and claims are written by `PushJSON` (compact, sorted keys), so a given header and
/// claim set always gives the same first two segments — tests compare them exactly.
public enum JWTEncoder {
    /// Signs a JWT.
    ///
    /// - Parameters:
    ///   - header: extra header members; `alg` is always set from the signer and overrides any given.
    ///     APNs wants exactly `{"alg":"ES256","kid":…}` (no `typ`); Google accepts `typ`/`kid`.
    ///   - claims: the claim set, e.g. `["iss": .string(team), "iat": .int(now)]`.
    ///   - signer: `ES256Signer` or `RS256Signer`.
    /// - Returns: the compact token, ASCII only.
    /// - Throws: `JWTSigningError` if OpenSSL fails.
    public static func encode(header: [String: PushJSON], claims: [String: PushJSON], signer: some JWTSigner) throws(JWTSigningError) -> String {
        var fullHeader = header
        fullHeader["alg"] = .string(signer.algorithm)
        let signingInput = Base64URL.encode(PushJSON.object(fullHeader).bytes) + "." + Base64URL.encode(PushJSON.object(claims).bytes)
        let signature = try signer.sign(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}
