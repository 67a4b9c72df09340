import PushHTTP

/// Verifies JWS-compact access tokens (RFC 7515 §7.1, RFC 7519 §7.2) against one key.
///
/// Order of checks, chosen so that nothing from the payload is trusted — or even parsed — before the
/// signature is known good:
/// 1. size cap and shape (three base64url parts, no padding);
/// 2. header: strict JSON object without duplicate names, `alg` equal to the key's algorithm, no `crit`;
/// 3. signature;
/// 4. payload: strict JSON object without duplicate names, claim types;
/// 5. `exp` / `nbf` against the injected clock, with leeway.
///
/// A value type holding a shared immutable key, so it can be copied freely and used from any thread.
public struct AccessTokenVerifier: Sendable {
    /// Longest token accepted, in bytes. Bounds the work an unauthenticated request can cause, and
    /// real access tokens are a few hundred bytes.
    public static let maxTokenBytes = 8 * 1024
    /// Deepest nesting checked in the header and payload (claims are flat; `channels` is one array).
    static let maxJSONDepth = 16

    /// The key every token must be signed with; also fixes the only accepted `alg`.
    public let key: VerificationKey
    /// Clock-skew allowance in seconds, applied to `exp` and `nbf` (RFC 7519 §4.1.4/§4.1.5 allow
    /// "some small leeway"). Never negative.
    public let leewaySeconds: Int64
    /// Which claims hold the user and the session (the app's settings, AP-1/AP-5).
    var claimNames = JWTPayload.ClaimNames()

    /// - Parameters:
    ///   - key: the verification key; its algorithm is the only one accepted.
    ///   - leewaySeconds: tolerated clock skew in seconds; negative values are treated as 0.
    public init(key: VerificationKey, leewaySeconds: Int64 = 60) {
        self.key = key
        self.leewaySeconds = max(0, leewaySeconds)
    }

    /// Verifies `token` and returns its claims.
    ///
    /// - Parameters:
    ///   - token: the compact JWS, `base64url(header).base64url(payload).base64url(signature)`,
    ///     without a `Bearer ` prefix.
    ///   - now: the current time in Unix seconds; injected so that tests need no clock.
    /// - Returns: the claims, after the signature and time window have been checked.
    /// - Throws: `AccessTokenError`:
    ///   `.malformed` (size over `maxTokenBytes`, not three parts, bad base64url, `=` padding, header or
    ///   payload not a JSON object or not strict JSON (RFC 8259: valid UTF-8 and escapes, numbers within a
    ///   double's range, nesting within `maxJSONDepth`), missing/non-string `alg`, `crit` present);
    ///   `.unsupportedAlgorithm` (`none` in any case, or an `alg` Herald never supports);
    ///   `.algorithmMismatch` (a supported `alg` other than the key's);
    ///   `.duplicateName` (a header parameter or claim named twice in one object, RFC 7515 §5.2,
    ///   RFC 7519 §4); `.badSignature`; `.missingClaim` (`sub`, `exp`); `.invalidClaim` (wrong claim types);
    ///   `.expired` (`now >= exp + leeway`, RFC 7519 §4.1.4); `.notYetValid` (`now + leeway < nbf`).
    public func verify(_ token: String, now: Int64) throws(AccessTokenError) -> AccessClaims {
        var token = token
        // withUTF8 is only `rethrows` (untyped), so the typed error travels out in a Result.
        let result = token.withUTF8 { bytes in
            Result { () throws(AccessTokenError) -> AccessClaims in try verify(utf8: bytes, now: now) }
        }
        return try result.get()
    }

    private func verify(utf8 token: UnsafeBufferPointer<UInt8>, now: Int64) throws(AccessTokenError) -> AccessClaims {
        guard token.count <= Self.maxTokenBytes else {
            throw .malformed("longer than \(Self.maxTokenBytes) bytes")
        }

        var dots: [Int] = []
        for (index, byte) in token.enumerated() {
            if byte == UInt8(ascii: ".") {
                dots.append(index)
                if dots.count > 2 { break }
            } else if byte == UInt8(ascii: "=") {
                // JWS base64url has no padding (RFC 7515 §2); refusing it keeps one spelling per token.
                throw .malformed("base64url padding is not allowed")
            }
        }
        guard dots.count == 2 else { throw .malformed("expected 3 dot-separated parts") }
        let headerPart = UnsafeBufferPointer(rebasing: token[..<dots[0]])
        let payloadPart = UnsafeBufferPointer(rebasing: token[(dots[0] + 1)..<dots[1]])
        let signaturePart = UnsafeBufferPointer(rebasing: token[(dots[1] + 1)...])

        // --- Header (RFC 7515 §5.2 steps 2-5) ---
        guard let headerBytes = Base64URL.decode(utf8: headerPart) else { throw .malformed("header is not base64url") }
        // RFC 7515 §5.2 step 4 asks for "a completely valid JSON object": a parameter named twice
        // is refused (decoders disagree on which copy wins, so two parsers could read two
        // different tokens), and so is any byte that is not strict JSON, since `JSONDecoder` reads
        // strings lazily and would never look at a member it does not decode.
        switch JSONSyntax.check(headerBytes, maxDepth: Self.maxJSONDepth, rejectDuplicateKeys: true) {
        case nil: break
        case .duplicateKey(_, let name)?: throw .duplicateName(part: "header", name: logSafe(name))
        case _?: throw .malformed("header is not strict JSON")
        }
        guard let header = JWTHeader.parse(headerBytes) else { throw .malformed("header is not a JSON object") }
        let alg: String
        switch header.alg {
        case .absent: throw .malformed("header has no \"alg\"")
        case .invalid: throw .malformed("header \"alg\" is not a string")
        case .present(let value): alg = value
        }
        // Unsecured JWS (RFC 7518 §3.6) is refused however it is capitalized: some libraries once
        // compared case-insensitively and accepted "None". (The allowlist below would refuse it too;
        // this keeps the error specific.)
        if alg.lowercased() == "none" { throw .unsupportedAlgorithm(logSafe(alg)) }
        guard let tokenAlgorithm = JWTAlgorithm(rawValue: alg) else { throw .unsupportedAlgorithm(logSafe(alg)) }
        guard tokenAlgorithm == key.algorithm else {
            throw .algorithmMismatch(expected: key.algorithm, got: tokenAlgorithm.rawValue)
        }
        // RFC 7515 §4.1.11: a recipient that does not understand every listed extension MUST reject;
        // Herald understands none.
        if header.hasCrit { throw .malformed("\"crit\" header extensions are not supported") }

        // --- Signature (RFC 7515 §5.2 step 8) ---
        guard let signature = Base64URL.decode(utf8: signaturePart) else { throw .malformed("signature is not base64url") }
        let signingInput = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(token)[..<dots[1]])
        guard key.verify(signature: signature, signingInput: signingInput) else { throw .badSignature }

        // --- Claims (RFC 7519 §7.2 steps 9-10), now authenticated ---
        guard let payloadBytes = Base64URL.decode(utf8: payloadPart) else { throw .malformed("payload is not base64url") }
        // RFC 7519 §4: claim names are unique; Foundation's decoder would keep the first `exp`.
        switch JSONSyntax.check(payloadBytes, maxDepth: Self.maxJSONDepth, rejectDuplicateKeys: true) {
        case nil: break
        case .duplicateKey(_, let name)?: throw .duplicateName(part: "payload", name: logSafe(name))
        case _?: throw .malformed("payload is not strict JSON")
        }
        guard let payload = JWTPayload.parse(payloadBytes, names: claimNames) else { throw .malformed("payload is not a JSON object") }
        let claims = try AccessClaims(payload: payload)

        // Saturating adds: a crafted exp near Int64.max must not trap the server.
        if now >= claims.expiresAt.addingSaturating(leewaySeconds) { throw .expired }  // RFC 7519 §4.1.4: on or after
        if let notBefore = claims.notBefore, now.addingSaturating(leewaySeconds) < notBefore { throw .notYetValid }
        return claims
    }
}

extension Int64 {
    /// `self + other`, clamped to the type's range instead of trapping (token times are attacker-chosen).
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }
}

/// Makes attacker-supplied header text safe to embed in log messages: at most 32 characters,
/// printable ASCII only, so a crafted `alg` cannot forge log lines or flood them.
private func logSafe(_ text: String) -> String {
    var out = ""
    for scalar in text.unicodeScalars.prefix(32) {
        out.unicodeScalars.append((0x20...0x7E).contains(scalar.value) ? scalar : "?")
    }
    if text.unicodeScalars.count > 32 { out += "…" }
    return out
}
