/// Something that signs a JWS signing input (RFC 7515 §5.1: `base64url(header) "." base64url(payload)`).
///
/// Implementations are immutable and thread-safe, so one signer serves every sender.
public protocol JWTSigner: Sendable {
    /// The JWS `alg` header value (RFC 7518 §3.1), e.g. `ES256`.
    var algorithm: String { get }
    /// The JWS signature bytes for `signingInput` (the ASCII bytes of `header.payload`).
    func sign(_ signingInput: [UInt8]) throws(JWTSigningError) -> [UInt8]
}
