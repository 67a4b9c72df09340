import Foundation
import FuzzSupport
@testable import API
import HeraldCore
import PushHTTP

/// The access-token verifier on hostile tokens, shared by `APIFuzzTests` and `scripts/fuzz jwt`.
/// An input is either a whole token (`jwt-token` corpus), mutated as text, or a header and a
/// payload JSON separated by a NUL byte (`jwt-claims` corpus), which the oracle signs with the
/// key so the mutants reach the claim checks behind the signature.
/// - never traps, whatever the bytes;
/// - a mutated token is accepted only if it is, byte for byte, one the key's owner issued
///   (`isGenuine`): base64url has one spelling and the signature covers the rest;
/// - for a signed header and payload, the verdict agrees with Foundation's reading of the same
///   JSON (`JSONValue` through `JSONDecoder`, after the strict check): accepted claims are the payload's, each refusal
///   names a header member or claim that really is absent or of the wrong type, and the time
///   window (`exp`, `nbf`, leeway) is honoured.
enum JWTFuzzOracle {
    static let secret = Array("herald-fuzz-secret".utf8)
    static let verifier = AccessTokenVerifier(key: try! VerificationKey.hmac(secret: secret), leewaySeconds: 60)
    /// The verifier's clock for every input: 2023-11-14T22:13:20Z.
    static let now: Int64 = 1_700_000_000

    static func check(_ input: [UInt8]) -> (failure: String?, keep: Bool) {
        if let separator = input.firstIndex(of: 0) {
            return checkSigned(header: Array(input[..<separator]), payload: Array(input[(separator + 1)...]))
        }
        let token = String(decoding: input, as: UTF8.self)
        switch Result(catching: { () throws(AccessTokenError) in try verifier.verify(token, now: now) }) {
        case .success:
            return isGenuine(token) ? (nil, true) : ("accepted a token nobody signed: \(token)", false)
        case .failure:
            return (nil, false)
        }
    }

    /// Whether `token` is exactly what signing its decoded header and payload with the key gives.
    static func isGenuine(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let header = Base64URL.decode(parts[0]), let payload = Base64URL.decode(parts[1]) else { return false }
        return sign(header: header, payload: payload) == token
    }

    static func sign(header: [UInt8], payload: [UInt8]) -> String {
        let input = Base64URL.encode(header) + "." + Base64URL.encode(payload)
        let mac = Array(input.utf8).withUnsafeBytes { VerificationKey.hmacSHA256(key: secret, data: $0) }
        return input + "." + Base64URL.encode(mac)
    }

    static func checkSigned(header: [UInt8], payload: [UInt8]) -> (failure: String?, keep: Bool) {
        let token = sign(header: header, payload: payload)
        let verdict = Result(catching: { () throws(AccessTokenError) in try verifier.verify(token, now: now) })
        if token.utf8.count > AccessTokenVerifier.maxTokenBytes {
            if case .failure(.malformed) = verdict { return (nil, false) }
            return ("a token over the size limit was not refused as malformed: \(verdict)", false)
        }
        // Strict JSON is `JSONSyntax`'s, itself fuzzed against Foundation (`JSONSyntaxFuzzOracle`).
        let headerValue = strict(header) ? try? JSONDecoder().decode(JSONValue.self, from: Data(header)) : nil
        guard case .object(let headerMembers)? = headerValue else {
            switch verdict {
            case .failure(.malformed), .failure(.duplicateName(part: "header", _)): return (nil, false)
            default: break
            }
            return ("header is not an object for Foundation, yet \(verdict)", false)
        }
        let h = Dictionary(headerMembers, uniquingKeysWith: { a, _ in a })
        guard case .string(let alg)? = h["alg"] else {
            if case .failure(.malformed) = verdict { return (nil, false) }
            return ("no string alg, yet \(verdict)", false)
        }
        guard alg == "HS256" else {
            switch verdict {
            case .failure(.unsupportedAlgorithm), .failure(.algorithmMismatch): return (nil, false)
            default: return ("alg \(alg.debugDescription), yet \(verdict)", false)
            }
        }
        guard h["crit"] == nil else {
            if case .failure(.malformed) = verdict { return (nil, false) }
            return ("crit present, yet \(verdict)", false)
        }
        let payloadValue = strict(payload) ? try? JSONDecoder().decode(JSONValue.self, from: Data(payload)) : nil
        guard case .object(let payloadMembers)? = payloadValue else {
            switch verdict {
            case .failure(.malformed), .failure(.duplicateName(part: "payload", _)): return (nil, false)
            default: break
            }
            return ("payload is not an object for Foundation, yet \(verdict)", false)
        }
        let p = Dictionary(payloadMembers, uniquingKeysWith: { a, _ in a })
        switch verdict {
        case .success(let claims):
            guard case .string(claims.subject)? = p["sub"], !claims.subject.isEmpty else { return ("sub \(String(describing: p["sub"])) accepted as \(claims.subject)", false) }
            guard matches(p["exp"], claims.expiresAt, rounding: .down), matchesOptional(p["nbf"], claims.notBefore, rounding: .up),
                  matchesOptional(p["iat"], claims.issuedAt, rounding: .down),
                  matchesOptional(p["session_exp"], claims.sessionExpiresAt, rounding: .down) else {
                return ("times \(claims) are not the payload's \(p)", false)
            }
            if case .string(let sid)? = p["sid"] {
                guard claims.sessionID == sid, !sid.isEmpty, sid.utf8.count <= AccessClaims.maxSessionIDLength, !sid.hasPrefix("~") else {
                    return ("sid \(sid.debugDescription) accepted", false)
                }
            } else if claims.sessionID != nil { return ("sid", false) }
            let channels: [String] = if case .array(let values)? = p["channels"] {
                values.compactMap { if case .string(let s) = $0 { s } else { nil } }
            } else { [] }
            guard claims.channels == channels else { return ("channels \(claims.channels), payload \(channels)", false) }
            guard now < claims.expiresAt.addingSaturating(60) else { return ("accepted an expired token", false) }
            if let nbf = claims.notBefore, now.addingSaturating(60) < nbf { return ("accepted a token before its nbf", false) }
            return (nil, true)
        case .failure(.missingClaim(let name)):
            return p[name] == nil ? (nil, true) : ("\(name) reported missing, payload has \(p[name]!.compactText)", false)
        case .failure(.invalidClaim(let name)):
            guard let value = p[name] else { return ("\(name) reported invalid but absent", false) }
            switch (name, value) {
            case ("sub", .string(let s)) where !s.isEmpty:
                return ("\(name) \(value.compactText) reported invalid", false)
            case ("sid", .string):
                return ("\(name) \(value.compactText) reported invalid", false)
            case ("channels", .array(let values)) where values.allSatisfy({ if case .string = $0 { true } else { false } }):
                return ("\(name) \(value.compactText) reported invalid", false)
            case ("exp", .integer), ("nbf", .integer), ("iat", .integer), ("session_exp", .integer):
                return ("\(name) \(value.compactText) reported invalid", false)
            default:
                return (nil, true)
            }
        case .failure(.unusableSubject(let name)):
            // A non-empty string that cannot form `user:{sub}` (too long, or outside the channel alphabet).
            guard case .string(let s)? = p[name], !s.isEmpty else { return ("\(name) reported unusable: \(p[name]?.compactText ?? "absent")", false) }
            return s.utf8.count > AccessClaims.maxSubjectLength || ChannelName.personal(userID: s) == nil
                ? (nil, true) : ("\(name) \(s.debugDescription) reported unusable", false)
        case .failure(.unusableSessionID(let name)):
            // An empty string, one longer than `DELETE /v1/sessions/{sid}` takes, one spelled
            // like a sessionless app's standing session (`~` first), or one not in NFC (ADR 0019).
            guard case .string(let s)? = p[name] else { return ("\(name) reported unusable: \(p[name]?.compactText ?? "absent")", false) }
            var span = s.utf8Span
            return s.isEmpty || s.utf8.count > AccessClaims.maxSessionIDLength || s.hasPrefix("~") || !span.checkForNFC(quickCheck: false)
                ? (nil, true) : ("\(name) \(s.debugDescription) reported unusable", false)
        case .failure(.expired):
            guard case .integer(let exp)? = p["exp"] else { return (nil, true) }
            return now >= exp.addingSaturating(60) ? (nil, true) : ("exp \(exp) reported expired", false)
        case .failure(.notYetValid):
            guard case .integer(let nbf)? = p["nbf"] else { return (nil, true) }
            return now.addingSaturating(60) < nbf ? (nil, true) : ("nbf \(nbf) reported not yet valid", false)
        case .failure(let error):
            return ("a signed HS256 token with JSON-object header and payload refused: \(error)", false)
        }
    }

    private static func strict(_ json: [UInt8]) -> Bool {
        JSONSyntax.check(json, maxDepth: AccessTokenVerifier.maxJSONDepth, rejectDuplicateKeys: true) == nil
    }

    /// A NumericDate as the verifier must read it: an integer as is, another number rounded.
    private static func matches(_ value: JSONValue?, _ claim: Int64, rounding: FloatingPointRoundingRule) -> Bool {
        switch value {
        case .integer(let whole)?: return whole == claim
        case .number(let seconds)?: return seconds.isFinite && Int64(exactly: seconds.rounded(rounding)) == claim
        default: return false
        }
    }

    private static func matchesOptional(_ value: JSONValue?, _ claim: Int64?, rounding: FloatingPointRoundingRule) -> Bool {
        guard let claim else { return value == nil }
        return matches(value, claim, rounding: rounding)
    }
}

