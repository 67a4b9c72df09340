#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HeraldCore

/// The claims Herald reads from an access token's payload (RFC 7519 §4).
///
/// Times are NumericDate values: whole seconds since the Unix epoch, UTC (RFC 7519 §2).
/// Unknown claims are ignored, as RFC 7519 §4 requires for claims a recipient does not understand.
public struct AccessClaims: Sendable, Equatable {
    /// `sub` (RFC 7519 §4.1.2): the user the token was issued to. Required and non-empty, because every
    /// authorization decision downstream is keyed on it.
    public var subject: String
    /// `sid`: the login session the token belongs to, so a session can be revoked as a whole. Optional.
    public var sessionID: String?
    /// `exp` (RFC 7519 §4.1.4), Unix seconds. Required: Herald refuses tokens that never expire.
    /// Fractional values in the token are rounded down, erring towards expiry.
    public var expiresAt: Int64
    /// `nbf` (RFC 7519 §4.1.5), Unix seconds. Fractional values are rounded up, erring towards refusal.
    public var notBefore: Int64?
    /// `iat` (RFC 7519 §4.1.6), Unix seconds. Informational only: not checked against the clock.
    public var issuedAt: Int64?
    /// `channels` (private claim): channels the bearer may subscribe to. Each entry is an exact
    /// channel name or a `"prefix:*"` pattern; interpretation belongs to the authorization layer.
    /// Empty when the claim is absent.
    public var channels: [String]
    /// `session_exp` (private claim), Unix seconds: when the underlying login session ends, which may be
    /// later than `exp`; lets connections outlive one access token but not the session.
    public var sessionExpiresAt: Int64?
    /// `iss` (RFC 7519 §4.1.1), when present: checked against the app's `issuer` (ADR 0006).
    public var issuer: String?
    /// `aud` (RFC 7519 §4.1.3): a string or an array of strings, here always a list; empty when absent.
    public var audience: [String] = []
    /// `app` (private claim): the app the token says it is for, a routing hint (ADR 0006).
    public var appClaim: String?
    /// The app the token was verified for (set by the `Authenticator`; `default` until then).
    public var app: AppID = .default

    /// Creates claims; defaults match a token that carries only `sub` and `exp`.
    ///
    /// - Parameters:
    ///   - subject: `sub`; must be non-empty for the verifier to accept a token carrying it.
    ///   - sessionID: `sid`.
    ///   - expiresAt: `exp`, Unix seconds.
    ///   - notBefore: `nbf`, Unix seconds.
    ///   - issuedAt: `iat`, Unix seconds.
    ///   - channels: `channels`; omitted from issued tokens when empty.
    ///   - sessionExpiresAt: `session_exp`, Unix seconds.
    public init(
        subject: String,
        sessionID: String? = nil,
        expiresAt: Int64,
        notBefore: Int64? = nil,
        issuedAt: Int64? = nil,
        channels: [String] = [],
        sessionExpiresAt: Int64? = nil
    ) {
        self.subject = subject
        self.sessionID = sessionID
        self.expiresAt = expiresAt
        self.notBefore = notBefore
        self.issuedAt = issuedAt
        self.channels = channels
        self.sessionExpiresAt = sessionExpiresAt
    }
}

// MARK: - Parsing

/// One claim as found in the JSON: absent, of the wrong type, or a usable value. Kept apart from
/// `AccessTokenError` so decoding never has to smuggle typed errors through `JSONDecoder`.
enum JWTField<Value: Sendable>: Sendable {
    case absent
    case invalid
    case present(Value)
}

/// Reads only the members Herald uses, straight from a keyed container. Decoding into a general
/// JSON tree first costs several failed `try?` probes per value; measured, it nearly halved HS256
/// verification throughput (29k/s vs 52k/s in release).
/// A payload that is not a JSON object fails `container(keyedBy:)`, which the verifier reports as malformed.
struct JWTPayload: Decodable {
    var sub: JWTField<String>
    var sid: JWTField<String>
    var exp: JWTField<Int64>
    var nbf: JWTField<Int64>
    var iat: JWTField<Int64>
    var channels: JWTField<[String]>
    var sessionExp: JWTField<Int64>
    var iss: JWTField<String>
    var aud: JWTField<[String]>
    var app: JWTField<String>
    /// The claim `sub` was read from, for error messages.
    var userClaimName = "sub"
    /// The claim `sid` was read from, for error messages.
    var sessionClaimName = "sid"

    /// The claim names an app reads user and session from (AP-1, AP-5), passed through the
    /// decoder's `userInfo`; absent: `sub` and `sid`.
    static let claimNamesKey = CodingUserInfoKey(rawValue: "herald.claimNames")!

    /// Which claims hold the user and the session; `session` nil: the app's tokens have none (AP-5).
    struct ClaimNames: Sendable {
        var user = "sub"
        var session: String? = "sid"
    }

    private struct Name: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
        static let exp = Name("exp"), nbf = Name("nbf"), iat = Name("iat"), channels = Name("channels")
        static let sessionExp = Name("session_exp"), iss = Name("iss"), aud = Name("aud"), app = Name("app")
    }

    init(from decoder: any Decoder) throws {
        let names = decoder.userInfo[Self.claimNamesKey] as? ClaimNames ?? ClaimNames()
        userClaimName = names.user
        sessionClaimName = names.session ?? "sid"
        let c = try decoder.container(keyedBy: Name.self)
        sub = c.field(Name(names.user))
        sid = names.session.map { c.field(Name($0)) } ?? .absent
        iss = c.field(.iss)
        app = c.field(.app)
        // RFC 7519 §4.1.3: one string or an array of strings.
        if !c.contains(.aud) {
            aud = .absent
        } else if let one = try? c.decode(String.self, forKey: .aud) {
            aud = .present([one])
        } else {
            aud = c.field(.aud)
        }
        exp = c.numericDate(.exp, rounding: .down)
        nbf = c.numericDate(.nbf, rounding: .up)
        iat = c.numericDate(.iat, rounding: .down)
        channels = c.field(.channels)
        sessionExp = c.numericDate(.sessionExp, rounding: .down)
    }

    static func parse(_ bytes: [UInt8], names: ClaimNames? = nil) -> JWTPayload? {
        let decoder = JSONDecoder()
        if let names { decoder.userInfo[claimNamesKey] = names }
        return try? decoder.decode(JWTPayload.self, from: Data(bytes))
    }
}

/// The protected header members Herald looks at (RFC 7515 §4.1). Everything else (`typ`, `kid`, ...)
/// is ignored, as §4 allows for members a recipient does not use — except `crit`, which must be honored.
struct JWTHeader: Decodable {
    var alg: JWTField<String>
    var kid: JWTField<String>
    var hasCrit: Bool

    private enum CodingKeys: String, CodingKey {
        case alg, crit, kid
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        alg = c.field(.alg)
        kid = c.field(.kid)
        hasCrit = c.contains(.crit)
    }

    static func parse(_ bytes: [UInt8]) -> JWTHeader? {
        try? JSONDecoder().decode(JWTHeader.self, from: Data(bytes))
    }
}

extension KeyedDecodingContainer {
    /// `decodeIfPresent` would read JSON `null` as absent; here `null` is a wrong type, like PyJWT treats it.
    fileprivate func field<T: Decodable & Sendable>(_ key: Key) -> JWTField<T> {
        guard contains(key) else { return .absent }
        guard let value = try? decode(T.self, forKey: key) else { return .invalid }
        return .present(value)
    }

    /// RFC 7519 §2 allows non-integer NumericDates; they are rounded in the direction that can only make
    /// the token *less* valid. Strings, booleans, `null` and values outside Int64 are invalid
    /// (swift-foundation's JSONDecoder never reads `true` as a number).
    fileprivate func numericDate(_ key: Key, rounding rule: FloatingPointRoundingRule) -> JWTField<Int64> {
        guard contains(key) else { return .absent }
        if let whole = try? decode(Int64.self, forKey: key) { return .present(whole) }
        guard let seconds = try? decode(Double.self, forKey: key), seconds.isFinite,
              let whole = Int64(exactly: seconds.rounded(rule))
        else { return .invalid }
        return .present(whole)
    }
}

extension AccessClaims {
    /// The longest user claim accepted, in characters of the channel alphabet (so also bytes):
    /// `user:{sub}` must be a channel name of at most 200 (SPEC RT-1), as a user id must
    /// (`PUT /v1/users/{id}`).
    public static let maxSubjectLength = ChannelName.maxLength - "user:".utf8.count

    /// The longest session claim accepted, in UTF-8 bytes: `DELETE|PUT /v1/sessions/{sid}` take
    /// ids of at most this many, and every session a token may open must be one the backend can
    /// end (SPEC DV-4).
    public static let maxSessionIDLength = 200

    /// Whether `sid` can name a session a token opens: 1-`maxSessionIDLength` bytes of UTF-8 in
    /// Unicode Normalization Form C, not starting with `~`.
    ///
    /// The standing session of a user of an app without a session claim is `~{app}~{user}`
    /// (`DeviceRegistration.userSessionID`, SPEC AP-5): a token's sid or a `/v1/sessions/{sid}` of
    /// that spelling would take the user's standing session (breaker10).
    ///
    /// NFC (ADR 0019): the database compares a sid byte for byte (RFC 7519 §2: no
    /// canonicalization), Swift's `String ==` by canonical equivalence, so `e` + U+0301 and U+00E9,
    /// or U+212A KELVIN SIGN and `K`, were one session in memory (presence, ended sessions, the
    /// streams a session end closes) and two in storage. Two different NFC strings are never
    /// canonically equivalent, so for an NFC sid both agree. Refused rather than normalised: a
    /// normalised sid is one the backend never sent, and its `DELETE` of its own spelling would miss.
    ///
    /// No NUL: PostgreSQL's text cannot hold it and libpq ends a parameter there, so `a\u{0}b` was
    /// stored, ended and conflicted as the session `a`, another session than the one in memory.
    public static func isUsableSessionID(_ sid: String) -> Bool {
        !sid.isEmpty && sid.utf8.count <= maxSessionIDLength && sid.utf8.first != UInt8(ascii: "~") && !sid.utf8.contains(0) && isNFC(sid)
    }

    /// Whether `text` is in Unicode Normalization Form C; ASCII (every sid seen so far) without
    /// looking further.
    static func isNFC(_ text: String) -> Bool {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return true }
        var span = text.utf8Span
        return span.checkForNFC(quickCheck: false)
    }

    /// Applies presence and type rules. Time windows are *not* checked here; the verifier does that
    /// against its injected clock.
    init(payload: JWTPayload) throws(AccessTokenError) {
        let subject: String
        switch payload.sub {
        case .absent: throw .missingClaim(payload.userClaimName)
        case .present(let sub) where !sub.isEmpty:
            guard sub.utf8.count <= Self.maxSubjectLength, ChannelName.personal(userID: sub) != nil else {
                throw .unusableSubject(payload.userClaimName)
            }
            subject = sub
        case .present, .invalid: throw .invalidClaim(payload.userClaimName)
        }
        let expiresAt: Int64
        switch payload.exp {
        case .absent: throw .missingClaim("exp")
        case .invalid: throw .invalidClaim("exp")
        case .present(let exp): expiresAt = exp
        }
        let sessionID = try Self.optional(payload.sid, payload.sessionClaimName)
        if let sessionID, !Self.isUsableSessionID(sessionID) {
            throw .unusableSessionID(payload.sessionClaimName)
        }
        self.init(
            subject: subject,
            sessionID: sessionID,
            expiresAt: expiresAt,
            notBefore: try Self.optional(payload.nbf, "nbf"),
            issuedAt: try Self.optional(payload.iat, "iat"),
            channels: try Self.optional(payload.channels, "channels") ?? [],
            sessionExpiresAt: try Self.optional(payload.sessionExp, "session_exp"))
        issuer = try Self.optional(payload.iss, "iss")
        audience = try Self.optional(payload.aud, "aud") ?? []
        appClaim = try Self.optional(payload.app, "app")
    }

    private static func optional<T>(_ field: JWTField<T>, _ name: String) throws(AccessTokenError) -> T? {
        switch field {
        case .absent: nil
        case .invalid: throw .invalidClaim(name)
        case .present(let value): value
        }
    }
}
