import HeraldCore
import PushHTTP
import COpenSSL
import Dispatch
import Synchronization
import Testing

@testable import API

// MARK: - Vector model (instances live in the generated JWTVectors.swift)

/// Which verification key a vector is checked against.
enum JWTVectorKey: String, Sendable {
    case hs256, rs256, es256
}

/// Expected refusal. `.malformed` ignores the detail text so that rewording a message does not
/// require regenerating vectors; everything else must match exactly.
enum JWTRejection: Sendable {
    case malformed
    case exactly(AccessTokenError)

    func matches(_ error: AccessTokenError) -> Bool {
        switch (self, error) {
        case (.malformed, .malformed): true
        case (.exactly(let expected), _): expected == error
        default: false
        }
    }
}

enum JWTVectorOutcome: Sendable {
    case accept(AccessClaims)
    case reject(JWTRejection)
}

struct JWTVector: Sendable, CustomTestStringConvertible {
    let name: String
    let key: JWTVectorKey
    let token: String
    let outcome: JWTVectorOutcome
    var testDescription: String { name }
}

/// Keys parsed once; VerificationKey is Sendable, so sharing them across parallel tests is the point.
enum JWTTestKeys {
    static let hs256 = try! VerificationKey.hmac(secret: JWTVectors.hmacSecret)
    static let rs256 = try! VerificationKey.publicKey(pem: JWTVectors.rsaPublicKeyPEM)
    static let es256 = try! VerificationKey.publicKey(pem: JWTVectors.ecPublicKeyPEM)

    static func key(_ which: JWTVectorKey) -> VerificationKey {
        switch which {
        case .hs256: hs256
        case .rs256: rs256
        case .es256: es256
        }
    }

    static func verifier(_ which: JWTVectorKey) -> AccessTokenVerifier {
        AccessTokenVerifier(key: key(which), leewaySeconds: JWTVectors.leeway)
    }
}

/// Runs `verify` and returns the typed error, or records an issue if it unexpectedly succeeded.
private func refusal(
    _ verifier: AccessTokenVerifier, _ token: String, now: Int64 = JWTVectors.now,
    sourceLocation: SourceLocation = #_sourceLocation
) -> AccessTokenError? {
    do {
        let claims = try verifier.verify(token, now: now)
        Issue.record("expected refusal, got \(claims)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}

// MARK: - PyJWT vectors

@Suite("PyJWT vectors")
struct AccessTokenVectorTests {
    @Test("vector", arguments: JWTVectors.all)
    func vector(_ vector: JWTVector) throws {
        let verifier = JWTTestKeys.verifier(vector.key)
        switch vector.outcome {
        case .accept(let expected):
            var claims = try verifier.verify(vector.token, now: JWTVectors.now)
            // The vectors predate apps (ADR 0006), which read iss and aud: those are checked in
            // AppRoutingTests; here the claims the vectors state.
            claims.issuer = nil
            claims.audience = []
            #expect(claims == expected)
        case .reject(let rejection):
            let error = refusal(verifier, vector.token)
            if let error {
                #expect(rejection.matches(error), "got \(error)")
            }
        }
    }

    @Test func everyAlgorithmHasAcceptedAndRejectedVectors() {
        for key in [JWTVectorKey.hs256, .rs256, .es256] {
            let mine = JWTVectors.all.filter { $0.key == key }
            #expect(mine.contains { if case .accept = $0.outcome { true } else { false } })
            #expect(mine.contains { if case .reject(.exactly(.badSignature)) = $0.outcome { true } else { false } })
        }
    }

    /// Guards against comparing only a prefix of the MAC or dropping part of r||s.
    @Test("every signature byte matters", arguments: [JWTVectorKey.hs256, .rs256, .es256])
    func everySignatureByteMatters(_ key: JWTVectorKey) throws {
        let valid = try #require(JWTVectors.all.first { $0.name == "\(key.rawValue.uppercased()) valid" })
        let parts = valid.token.split(separator: ".")
        let signature = try #require(Base64URL.decode(parts[2]))
        let verifier = JWTTestKeys.verifier(key)
        for index in signature.indices {
            var forged = signature
            forged[index] ^= 0x80
            let token = "\(parts[0]).\(parts[1]).\(Base64URL.encode(forged))"
            #expect(refusal(verifier, token) == .badSignature, "byte \(index)")
        }
    }

    @Test func validTokenIsRefusedOnceTheClockMovesPastExpiryPlusLeeway() throws {
        let valid = try #require(JWTVectors.all.first { $0.name == "RS256 valid" })
        guard case .accept(let claims) = valid.outcome else { Issue.record("not an accept vector"); return }
        let verifier = JWTTestKeys.verifier(.rs256)
        #expect(throws: Never.self) { try verifier.verify(valid.token, now: claims.expiresAt + JWTVectors.leeway - 1) }
        #expect(refusal(verifier, valid.token, now: claims.expiresAt + JWTVectors.leeway) == .expired)
    }
}

// MARK: - Issuer

@Suite("AccessTokenIssuer")
struct AccessTokenIssuerTests {
    let issuer = AccessTokenIssuer(secret: JWTVectors.hmacSecret)
    let verifier = JWTTestKeys.verifier(.hs256)

    @Test("byte-identical to PyJWT", arguments: 0..<JWTVectors.issuer.count)
    func matchesPyJWT(_ index: Int) throws {
        let (claims, token) = JWTVectors.issuer[index]
        #expect(issuer.issue(claims) == token)
        // The issuer writes any subject; the verifier serves only one that forms `user:{sub}`.
        if ChannelName.personal(userID: claims.subject) != nil {
            #expect(try verifier.verify(token, now: claims.expiresAt) == claims)
        } else {
            #expect(throws: AccessTokenError.unusableSubject("sub")) { try verifier.verify(token, now: claims.expiresAt) }
        }
    }

    @Test func roundTrip() throws {
        let claims = AccessClaims(
            subject: "user-9", sessionID: "s-1", expiresAt: JWTVectors.now + 900, notBefore: JWTVectors.now,
            issuedAt: JWTVectors.now, channels: ["room:a", "team:7:*", "ünï/“quoted”"],
            sessionExpiresAt: JWTVectors.now + 3600)
        #expect(try verifier.verify(issuer.issue(claims), now: JWTVectors.now) == claims)
    }

    @Test func omitsNilClaimsAndEmptyChannels() throws {
        let token = issuer.issue(AccessClaims(subject: "u", expiresAt: 5))
        let payload = try #require(Base64URL.decode(token.split(separator: ".")[1]))
        #expect(String(decoding: payload, as: UTF8.self) == #"{"sub":"u","exp":5}"#)
    }

    @Test func differentSecretFailsSignature() {
        let other = AccessTokenIssuer(secret: Array("another secret".utf8))
        let token = other.issue(AccessClaims(subject: "u", expiresAt: JWTVectors.now + 60))
        #expect(refusal(verifier, token) == .badSignature)
    }

    /// DV-4: a session the backend cannot end (`DELETE /v1/sessions/{sid}` takes 1-200 bytes)
    /// must not be opened: such a `sid` is refused at verification, on every route.
    @Test func sessionIDsThatNoSessionRouteCanNameAreRefused() throws {
        func claims(_ sid: String) -> AccessClaims {
            AccessClaims(subject: "u", sessionID: sid, expiresAt: JWTVectors.now + 60)
        }
        let longest = String(repeating: "s", count: AccessClaims.maxSessionIDLength)
        #expect(try verifier.verify(issuer.issue(claims(longest)), now: JWTVectors.now).sessionID == longest)
        // 100 two-byte characters: 200 bytes, the route's limit.
        let wide = String(repeating: "é", count: AccessClaims.maxSessionIDLength / 2)
        #expect(try verifier.verify(issuer.issue(claims(wide)), now: JWTVectors.now).sessionID == wide)
        for refused in [longest + "s", String(repeating: "s", count: 1000), wide + "a", ""] {
            #expect(refusal(verifier, issuer.issue(claims(refused))) == .unusableSessionID("sid"), "sid of \(refused.utf8.count) bytes")
        }
        #expect(AccessTokenError.unusableSessionID("sid").message.contains("1-200 bytes"))
    }

    /// ADR 0019: storage compares a sid's bytes, memory by canonical equivalence (Swift's `==`),
    /// so a sid is taken only in NFC, where the two agree; other spellings are refused, not
    /// normalised into a sid the backend never sent.
    @Test func sessionIDsNotInNFCAreRefused() throws {
        func claims(_ sid: String) -> AccessClaims {
            AccessClaims(subject: "u", sessionID: sid, expiresAt: JWTVectors.now + 60)
        }
        // NFD é, KELVIN SIGN (canonically "K"), conjoining jamo (canonically one syllable), a mark before its base's pair.
        let refused = ["cafe\u{301}", "\u{212A}", "\u{1100}\u{1161}\u{11A8}", "a\u{323}\u{302}x\u{302}\u{323}"]
        for sid in refused {
            #expect(refusal(verifier, issuer.issue(claims(sid))) == .unusableSessionID("sid"), "sid \(sid.unicodeScalars.map(\.value))")
            #expect(!AccessClaims.isUsableSessionID(sid))
        }
        #expect("cafe\u{301}" == "caf\u{E9}" && "\u{212A}" == "K", "the equivalence the rule exists for")
        for accepted in ["caf\u{E9}", "K", "\u{AC01}", "日本-1", "\u{1E0D}\u{302}", "s1"] {
            #expect(try verifier.verify(issuer.issue(claims(accepted)), now: JWTVectors.now).sessionID == accepted)
        }
        #expect(AccessTokenError.unusableSessionID("sid").message.contains("NFC"))
    }

    /// AP-5 (breaker10): a sessionless app's user binds to the standing session `~{app}~{user}`; a
    /// token's sid of that spelling (any app's) would take it, so a sid may not start with `~`.
    @Test func sessionIDsSpelledLikeAStandingSessionAreRefused() throws {
        func claims(_ sid: String) -> AccessClaims {
            AccessClaims(subject: "u", sessionID: sid, expiresAt: JWTVectors.now + 60)
        }
        for refused in ["~chat~pat", "~default~u", "~", "~x"] {
            #expect(refusal(verifier, issuer.issue(claims(refused))) == .unusableSessionID("sid"), "sid \(refused)")
        }
        for accepted in ["web~1", "a~chat~pat", "é~"] {
            #expect(try verifier.verify(issuer.issue(claims(accepted)), now: JWTVectors.now).sessionID == accepted)
        }
        #expect(AccessTokenError.unusableSessionID("sid").message.contains("not start with ~"))
        // NUL: PostgreSQL's text would end the sid there, another session than the one in memory.
        #expect(!AccessClaims.isUsableSessionID("a\u{0}b"))
        #expect(AccessClaims.isUsableSessionID("a\u{1}b"))
        #expect(AccessTokenError.unusableSessionID("sid").message.contains("NUL"))
    }

    @Test func tokensOverEightKiBAreMalformedEvenIfSigned() throws {
        func token(channelBytes: Int) -> String {
            issuer.issue(AccessClaims(
                subject: "u", expiresAt: JWTVectors.now + 60, channels: [String(repeating: "c", count: channelBytes)]))
        }
        let big = token(channelBytes: 6_200)
        #expect(big.utf8.count > AccessTokenVerifier.maxTokenBytes)
        guard case .malformed = refusal(verifier, big) else { Issue.record("expected malformed"); return }

        let fits = token(channelBytes: 6_000)
        #expect(fits.utf8.count <= AccessTokenVerifier.maxTokenBytes)
        #expect(throws: Never.self) { try verifier.verify(fits, now: JWTVectors.now) }
    }
}

// MARK: - Time rules

@Suite("exp / nbf boundaries")
struct AccessTokenTimeTests {
    let issuer = AccessTokenIssuer(secret: JWTVectors.hmacSecret)
    let now = JWTVectors.now

    func verify(_ claims: AccessClaims, leeway: Int64 = 60) throws(AccessTokenError) -> AccessClaims {
        try AccessTokenVerifier(key: JWTTestKeys.hs256, leewaySeconds: leeway).verify(issuer.issue(claims), now: now)
    }

    @Test func expBoundary() {
        #expect(throws: Never.self) { try verify(AccessClaims(subject: "u", expiresAt: now - 59)) }
        #expect(throws: AccessTokenError.expired) { try verify(AccessClaims(subject: "u", expiresAt: now - 60)) }
    }

    @Test func nbfBoundary() {
        #expect(throws: Never.self) { try verify(AccessClaims(subject: "u", expiresAt: now + 600, notBefore: now + 60)) }
        #expect(throws: AccessTokenError.notYetValid) {
            try verify(AccessClaims(subject: "u", expiresAt: now + 600, notBefore: now + 61))
        }
    }

    @Test func zeroAndNegativeLeeway() {
        #expect(throws: Never.self) { try verify(AccessClaims(subject: "u", expiresAt: now + 1), leeway: 0) }
        #expect(throws: AccessTokenError.expired) { try verify(AccessClaims(subject: "u", expiresAt: now), leeway: 0) }
        // Negative leeway would silently shorten every token's life; it is clamped to 0.
        #expect(AccessTokenVerifier(key: JWTTestKeys.hs256, leewaySeconds: -5).leewaySeconds == 0)
        #expect(throws: Never.self) { try verify(AccessClaims(subject: "u", expiresAt: now + 1), leeway: -5) }
    }

    @Test func extremeTimesDoNotTrap() throws {
        #expect(try verify(AccessClaims(subject: "u", expiresAt: .max)).expiresAt == .max)
        #expect(throws: AccessTokenError.expired) { try verify(AccessClaims(subject: "u", expiresAt: .min)) }
        let verifier = AccessTokenVerifier(key: JWTTestKeys.hs256, leewaySeconds: .max)
        let token = issuer.issue(AccessClaims(subject: "u", expiresAt: .max, notBefore: .max))
        #expect(throws: Never.self) { try verifier.verify(token, now: .max - 1) }
    }
}

// MARK: - Header edge cases built in Swift

@Suite("header handling")
struct AccessTokenHeaderTests {
    let verifier = JWTTestKeys.verifier(.hs256)

    /// Correctly HS256-signs arbitrary header/payload JSON, so only the header rule under test can fail.
    func token(header: String, payload: String = #"{"sub":"u","exp":1900000000}"#) -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload.utf8))
        let mac = Array(input.utf8).withUnsafeBytes { VerificationKey.hmacSHA256(key: JWTVectors.hmacSecret, data: $0) }
        return input + "." + Base64URL.encode(mac)
    }

    @Test func controlCharactersInAlgAreNotEchoedIntoLogs() {
        let error = refusal(verifier, token(header: #"{"alg":"x\nINFO forged line"}"#))
        #expect(error == .unsupportedAlgorithm("x?INFO forged line"))
    }

    @Test func longAlgIsTruncatedInErrors() {
        let error = refusal(verifier, token(header: #"{"alg":"\#(String(repeating: "A", count: 500))"}"#))
        #expect(error == .unsupportedAlgorithm(String(repeating: "A", count: 32) + "…"))
    }

    /// Found by the fuzz loop (Tests/Fuzz/corpus/jwt/regression-raw-newline-in-claim):
    /// `JSONDecoder` reads strings lazily, so bytes that are not JSON in a member nobody reads
    /// went through. (A member named twice is `.duplicateName`, tested with the vectors.)
    @Test(arguments: [
        (#"{"alg":"HS256"}"#, "{\"sub\":\"u\",\"exp\":1900000000,\"note\":\"a\nb\"}"),
        (#"{"alg":"HS256"}"#, "{\"sub\":\"u\n\",\"exp\":1900000000}"),
        ("{\"alg\":\"HS256\",\"kid\":\"a\u{1}\"}", #"{"sub":"u","exp":1900000000}"#),
        (#"{"alg":"HS256"}"#, #"{"sub":"u","exp":1900000000,"x":1e400}"#),
        (#"{"alg":"HS256"}"#, #"{"sub":"u","exp":1900000000,}"#),
        (#"{"alg":"HS256"}"#, #"{"sub":"u","exp":1900000000,"x":"\udc00"}"#),
    ])
    func headerAndPayloadMustBeStrictJSON(_ header: String, _ payload: String) {
        guard case .malformed = refusal(verifier, token(header: header, payload: payload)) else {
            Issue.record("expected malformed"); return
        }
    }

    @Test func strictJSONWithUnreadMembersIsAccepted() throws {
        let claims = try verifier.verify(token(header: #"{"alg":"HS256","kid":"k\n1"}"#,
                                               payload: #"{"sub":"u","exp":1900000000,"note":"a\nb","x":[1e300,{"y":null}]}"#),
                                         now: JWTVectors.now)
        #expect(claims.subject == "u")
    }

    @Test func emptyCritIsStillRefused() {
        guard case .malformed = refusal(verifier, token(header: #"{"alg":"HS256","crit":[]}"#)) else {
            Issue.record("expected malformed"); return
        }
    }

    @Test func deeplyNestedHeaderIsRefusedWithoutCrashing() {
        let nested = String(repeating: "[", count: 3_000) + String(repeating: "]", count: 3_000)
        guard case .malformed = refusal(verifier, token(header: #"{"alg":"HS256","x":\#(nested)}"#)) else {
            Issue.record("expected malformed"); return
        }
    }

    @Test func aHeaderParameterNamedTwiceIsRefused() {
        // RFC 7515 §5.2 step 4; the second `alg` would otherwise be ignored.
        #expect(refusal(verifier, token(header: #"{"alg":"HS256","alg":"none"}"#)) == .duplicateName(part: "header", name: "alg"))
    }

    @Test("a claim named twice is refused (RFC 7519 §4)", arguments: [
        #"{"sub":"u","exp":1900000000,"exp":1}"#,
        #"{"sub":"u","exp":1,"exp":1900000000}"#,
        #"{"sub":"u","exp":1900000000,"\u0065xp":1900000000}"#,
    ])
    func aClaimNamedTwiceIsRefused(_ payload: String) {
        #expect(refusal(verifier, token(header: #"{"alg":"HS256"}"#, payload: payload)) == .duplicateName(part: "payload", name: "exp"))
    }

    @Test func theSameNameInDifferentObjectsIsNotADuplicate() throws {
        let claims = try verifier.verify(token(header: #"{"alg":"HS256"}"#, payload: #"{"sub":"u","exp":1900000000,"x":{"sub":1}}"#),
                                         now: JWTVectors.now)
        #expect(claims.subject == "u")
    }

    @Test func allZeroES256SignatureIsBad() throws {
        let valid = try #require(JWTVectors.all.first { $0.name == "ES256 valid" })
        let parts = valid.token.split(separator: ".")
        let forged = "\(parts[0]).\(parts[1]).\(Base64URL.encode([UInt8](repeating: 0, count: 64)))"
        #expect(refusal(JWTTestKeys.verifier(.es256), forged) == .badSignature)
    }

    @Test func failedVerificationLeavesOpenSSLErrorQueueEmpty() throws {
        let valid = try #require(JWTVectors.all.first { $0.name == "RS256 flipped signature byte" })
        _ = refusal(JWTTestKeys.verifier(.rs256), valid.token)
        _ = try? VerificationKey.publicKey(pem: "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
        #expect(ERR_peek_error() == 0)
    }

    @Test func everyErrorHasADistinctMessage() {
        let all: [AccessTokenError] = [
            .malformed("x"), .unsupportedAlgorithm("none"), .algorithmMismatch(expected: .rs256, got: "HS256"),
            .badSignature, .expired, .notYetValid, .missingClaim("sub"), .invalidClaim("exp"),
            .duplicateName(part: "payload", name: "exp"), .unusableSubject("sub"), .unusableSessionID("sid"),
        ]
        #expect(Set(all.map(\.message)).count == all.count)
        #expect(all.allSatisfy { !$0.message.isEmpty && $0.description == $0.message })
    }
}

// MARK: - Keys

@Suite("VerificationKey")
struct VerificationKeyLoadingTests {
    @Test func algorithmsFollowKeyType() {
        #expect(JWTTestKeys.hs256.algorithm == .hs256)
        #expect(JWTTestKeys.rs256.algorithm == .rs256)
        #expect(JWTTestKeys.es256.algorithm == .es256)
    }

    @Test func pemWithSurroundingTextLoads() throws {
        let key = try VerificationKey.publicKey(pem: "issuer: test\n\n" + JWTVectors.ecPublicKeyPEM + "\n\ntrailing")
        #expect(key.algorithm == .es256)
    }

    /// OpenSSL 3's decoder-based PEM_read_bio_PUBKEY also reads PKCS#1 `BEGIN RSA PUBLIC KEY`;
    /// pinned here so a behavior change in OpenSSL shows up as a test failure, not a startup surprise.
    @Test func pkcs1RSAPublicKeyAlsoLoads() throws {
        let key = try VerificationKey.publicKey(pem: JWTVectors.rsaPKCS1PublicKeyPEM)
        #expect(key.algorithm == .rs256)
        let valid = try #require(JWTVectors.all.first { $0.name == "RS256 valid" })
        #expect(throws: Never.self) { try AccessTokenVerifier(key: key).verify(valid.token, now: JWTVectors.now) }
    }

    @Test func emptySecret() {
        #expect(throws: VerificationKeyError.emptySecret) { try VerificationKey.hmac(secret: []) }
    }

    @Test("unreadable PEM", arguments: [
        "", "garbage", "-----BEGIN PUBLIC KEY-----\nnot base64!\n-----END PUBLIC KEY-----\n",
        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        JWTVectors.ecPrivateKeyPEM,
    ])
    func unreadable(_ pem: String) {
        do {
            _ = try VerificationKey.publicKey(pem: pem)
            Issue.record("accepted \(pem.prefix(40))")
        } catch {
            guard case .unreadablePEM = error else { Issue.record("got \(error)"); return }
        }
    }

    @Test("unsupported key types", arguments: [
        JWTVectors.ecP384PublicKeyPEM, JWTVectors.rsa1024PublicKeyPEM, JWTVectors.ed25519PublicKeyPEM,
    ])
    func unsupported(_ pem: String) {
        do {
            _ = try VerificationKey.publicKey(pem: pem)
            Issue.record("accepted \(pem.prefix(40))")
        } catch {
            guard case .unsupportedKeyType(let what) = error else { Issue.record("got \(error)"); return }
            #expect(!what.isEmpty)
        }
    }

    @Test func p384ErrorNamesTheCurve() {
        #expect(throws: VerificationKeyError.self) { try VerificationKey.publicKey(pem: JWTVectors.ecP384PublicKeyPEM) }
        do { _ = try VerificationKey.publicKey(pem: JWTVectors.ecP384PublicKeyPEM) } catch {
            #expect(error.message.contains("secp384r1"))
        }
    }
}

// MARK: - Thread safety

@Suite("concurrency")
struct AccessTokenConcurrencyTests {
    @Test func manyThreadsShareOneKeyPerAlgorithm() {
        let cases = JWTVectors.all.filter { vector in
            if case .accept = vector.outcome { vector.name.hasSuffix(" valid") } else { vector.name.hasSuffix("flipped signature byte") }
        }
        let failures = Atomic<Int>(0)
        let iterations = 3_000
        DispatchQueue.concurrentPerform(iterations: iterations) { i in
            let vector = cases[i % cases.count]
            let verifier = JWTTestKeys.verifier(vector.key)
            let ok: Bool
            switch vector.outcome {
            case .accept(let expected): ok = (try? verifier.verify(vector.token, now: JWTVectors.now)) == expected
            case .reject: ok = (try? verifier.verify(vector.token, now: JWTVectors.now)) == nil
            }
            if !ok { failures.add(1, ordering: .relaxed) }
        }
        #expect(cases.count == 6)
        #expect(failures.load(ordering: .relaxed) == 0)
    }
}

// MARK: - Base64URL

@Suite("Base64URL")
struct Base64URLCodecTests {
    // RFC 4648 §10 vectors (the base64url and base64 alphabets agree on these).
    @Test("RFC 4648 vectors", arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ])
    func rfc4648(_ plain: String, _ encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test func urlSafeCharacters() {
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(Base64URL.decode("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test func roundTripsEveryLengthAndByte() {
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 7) }
        for length in 0...bytes.count {
            let slice = bytes.prefix(length)
            #expect(Base64URL.decode(Base64URL.encode(slice)) == Array(slice))
        }
        let all = (0...255).map(UInt8.init)
        #expect(Base64URL.decode(Base64URL.encode(all)) == all)
    }

    @Test func acceptsCorrectPadding() {
        #expect(Base64URL.decode("Zg==") == Array("f".utf8))
        #expect(Base64URL.decode("Zm8=") == Array("fo".utf8))
        #expect(Base64URL.decode(Substring("xxZm9vxx").dropFirst(2).dropLast(2)) == Array("foo".utf8))
    }

    @Test("rejects", arguments: [
        "Zm9v+g", "Zm9v/g", "Zm=9v", "Z=m9", "Zg=", "Zg===", "Zm9v=", "=", "Z", "Zm9vY", "Zh", "Zm9", "Zm9 v",
        "Zm9v\n", "Zé", "Zm9v.", "Zg==Zg",
    ])
    func rejects(_ text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
