import Foundation
import HeraldCore
import PushHTTP
import Testing

@testable import API
@testable import Realtime

/// Issue 14, "the demo can switch between two apps": dev mode's demo app key (`DevAppKey`), the
/// issuer's `app` claim and ES256 tokens, and `POST /v1/dev/token`'s `app`.
@Suite("Dev tokens per app")
struct DevTokenTests {
    static let secret = Array("dev-secret-0123456789abcdef01234".utf8)
    static let demo = AppID("demo-b")!

    // MARK: - DevAppKey

    @Test func theKeyFollowsSecretAndAppOnly() throws {
        let one = try DevAppKey.signer(secret: Self.secret, app: Self.demo).publicKeyPEM()
        #expect(try DevAppKey.signer(secret: Self.secret, app: Self.demo).publicKeyPEM() == one)
        #expect(try DevAppKey.signer(secret: Self.secret, app: AppID("demo-c")!).publicKeyPEM() != one)
        #expect(try DevAppKey.signer(secret: Array("another-secret-0123456789abcdef0".utf8), app: Self.demo).publicKeyPEM() != one)
        #expect(one.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        // The public half is what a stored app's `tokens.public_keys` takes: an ES256 key.
        #expect(try VerificationKey.publicKey(pem: one).algorithm == .es256)
    }

    @Test func onlyScalarsInOneToNMinusOneAreKeys() {
        let n = DevAppKey.groupOrder
        var below = n
        below[31] -= 1
        var above = n
        above[31] += 1
        #expect(DevAppKey.isValidScalar(below))
        #expect(DevAppKey.isValidScalar([UInt8](repeating: 0, count: 31) + [1]))
        #expect(!DevAppKey.isValidScalar(n))
        #expect(!DevAppKey.isValidScalar(above))
        #expect(!DevAppKey.isValidScalar([UInt8](repeating: 0xFF, count: 32)))
        #expect(!DevAppKey.isValidScalar([UInt8](repeating: 0, count: 32)))
        #expect(!DevAppKey.isValidScalar([UInt8](repeating: 1, count: 31)))
        #expect(DevAppKey.isValidScalar(DevAppKey.scalar(secret: Self.secret, app: Self.demo)))
    }

    @Test func theSEC1EncodingIsTheKeyOpenSSLReads() throws {
        // Scalar 1: the public key is the curve's generator G (SEC 2 §2.4.2), x = 6B17D1F2….
        let signer = try ES256Signer(pem: DevAppKey.pem(scalar: [UInt8](repeating: 0, count: 31) + [1]))
        let der = try #require(Data(base64Encoded: signer.publicKeyPEM().split(separator: "\n").dropFirst().dropLast().joined()))
        #expect(Array(der.suffix(65).prefix(5)) == [0x04, 0x6B, 0x17, 0xD1, 0xF2])
    }

    // MARK: - Issuer

    @Test func anES256TokenCarriesTheAppClaimAndVerifiesWithThePublicKey() throws {
        let signer = try DevAppKey.signer(secret: Self.secret, app: Self.demo)
        var claims = AccessClaims(subject: "carol", sessionID: "s1", expiresAt: 2_000_000_000, issuedAt: 1_900_000_000, channels: ["room:*"])
        claims.appClaim = "demo-b"
        let token = try AccessTokenIssuer.issue(claims, signer: signer)
        let parts = token.split(separator: ".").map { String(decoding: Base64URL.decode($0) ?? [], as: UTF8.self) }
        #expect(parts[0] == #"{"alg":"ES256","typ":"JWT"}"#)
        #expect(parts[1] == #"{"sub":"carol","sid":"s1","iat":1900000000,"exp":2000000000,"channels":["room:*"],"app":"demo-b"}"#)
        let verifier = AccessTokenVerifier(key: try VerificationKey.publicKey(pem: signer.publicKeyPEM()))
        #expect(try verifier.verify(token, now: 1_900_000_000) == claims)
        // Another app's key does not verify it.
        let other = AccessTokenVerifier(key: try VerificationKey.publicKey(
            pem: DevAppKey.signer(secret: Self.secret, app: AppID("demo-c")!).publicKeyPEM()))
        #expect(throws: AccessTokenError.badSignature) { try other.verify(token, now: 1_900_000_000) }
    }

    @Test func theHS256IssuerWritesTheAppClaimLast() throws {
        var claims = AccessClaims(subject: "u", expiresAt: 5)
        claims.appClaim = "demo-b"
        let token = AccessTokenIssuer(secret: Self.secret).issue(claims)
        let payload = try #require(Base64URL.decode(token.split(separator: ".")[1]))
        #expect(String(decoding: payload, as: UTF8.self) == #"{"sub":"u","exp":5,"app":"demo-b"}"#)
    }

    // MARK: - POST /v1/dev/token

    /// The routes with `default` (HS256 `secret`) and, when `installed`, the stored app `demo-b`
    /// verifying with the dev key, as dev mode sets it up; and the authenticator over them.
    static func routes(installed: Bool = true) throws -> (DevRoutes, Authenticator) {
        var configuration = APIConfiguration(serverKey: "k", verificationKeys: [try VerificationKey.hmac(secret: secret)])
        let directory = AppDirectory(configuration: configuration)
        let signer = try DevAppKey.signer(secret: secret, app: demo)
        if installed {
            var settings = AppSettings()
            settings.tokens.publicKeys = [signer.publicKeyPEM()]
            settings.tokens.algorithms = ["ES256"]
            directory.install(try ResolvedApp(record: AppRecord(id: demo, settings: settings, createdAt: 0, updatedAt: 0), jwtSecret: nil))
        }
        configuration.apps = directory
        let routes = DevRoutes(issuer: AccessTokenIssuer(secret: secret), appSigners: [demo: signer], apps: directory)
        return (routes, Authenticator(configuration: configuration))
    }

    static func post(_ routes: DevRoutes, _ body: String) throws -> (Int, [String: Any]) {
        let request = HTTPRequest(method: .post, target: "/v1/dev/token", headers: ["Content-Type": "application/json"], body: Array(body.utf8))
        let response: HTTPResponse
        do {
            guard case .response(let answer) = try routes.token(RequestContext(request: request, pathParameters: [:],
                                                                                remoteAddress: "127.0.0.1", loopIndex: 0)) else {
                Issue.record("the dev token is answered at once")
                return (0, [:])
            }
            response = answer
        } catch let error as HTTPError {
            response = error.response
        }
        let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
        return (response.status, object)
    }

    @Test func eachAppGetsATokenThatRoutesToIt() throws {
        let (routes, authenticator) = try Self.routes()
        let now = unixSeconds()
        for (body, app) in [(#"{"user_id":"carol","session_id":"s1"}"#, AppID.default),
                            (#"{"user_id":"carol","session_id":"s1","app":"default"}"#, .default),
                            (#"{"user_id":"carol","session_id":"s1","app":"demo-b"}"#, Self.demo)] {
            let (status, answer) = try Self.post(routes, body)
            #expect(status == 200, "\(answer)")
            #expect(answer["app"] as? String == app.rawValue)
            #expect(answer["apps"] as? [String] == ["default", "demo-b"])
            let claims = try authenticator.verify(token: try #require(answer["access_token"] as? String), now: now)
            #expect(claims.app == app && claims.subject == "carol" && claims.sessionID == "s1")
        }
    }

    @Test func anAppNotServedIsRefusedNamingTheField() throws {
        let (routes, _) = try Self.routes()
        for app in ["nope", "Demo-B", "", "chat"] {
            let (status, answer) = try Self.post(routes, #"{"user_id":"carol","app":"\#(app)"}"#)
            #expect(status == 400 && answer["field"] as? String == "app", "\(app): \(answer)")
            #expect((answer["message"] as? String)?.hasSuffix("they are: default, demo-b") == true, "\(answer)")
        }
        // Dev mode could not store the demo app: only `default` is minted for.
        let (unstored, _) = try Self.routes(installed: false)
        let (status, answer) = try Self.post(unstored, #"{"user_id":"carol","app":"demo-b"}"#)
        #expect(status == 400 && answer["field"] as? String == "app", "\(answer)")
        let (ok, plain) = try Self.post(unstored, #"{"user_id":"carol"}"#)
        #expect(ok == 200 && plain["apps"] as? [String] == ["default"], "\(plain)")
        let (wrongType, typed) = try Self.post(routes, #"{"user_id":"carol","app":7}"#)
        #expect(wrongType == 400, "\(typed)")
    }

    /// lows13: Foundation's decoder refused `1.5` without naming the field; a value with a
    /// fractional part, or beyond 64 bits, is a 400 naming it.
    @Test(arguments: ["1.5", "1000.5", "1e-3", "99999999999999999999", "9.3e18"])
    func aTTLThatIsNotAWholeNumberIsRefusedNamingIt(_ ttl: String) throws {
        let (routes, _) = try Self.routes()
        let (status, answer) = try Self.post(routes, #"{"user_id":"carol","ttl_seconds":\#(ttl)}"#)
        #expect(status == 400 && answer["error"] as? String == "invalid_request" && answer["field"] as? String == "ttl_seconds", "\(ttl): \(answer)")
        #expect((answer["message"] as? String)?.contains("without a fractional part") == true, "\(answer)")
    }

    /// api14 (ADR 0029): JSON Schema's `integer` is a value, so `1000.0` and `1e3` are 1000 (the
    /// token lives 1000 s), and `-0.0` is 0, refused by the range as `0` is.
    @Test(arguments: ["1e3", "1E3", "1000.0", "1.0E3", "10000e-1", "1000"])
    func aTTLWhoseValueIsWholeIsTakenHoweverWritten(_ ttl: String) throws {
        let (routes, _) = try Self.routes()
        let before = Int(Date().timeIntervalSince1970)
        let (status, answer) = try Self.post(routes, #"{"user_id":"carol","ttl_seconds":\#(ttl)}"#)
        let lifetime = (answer["expires_at"] as? Int ?? 0) - before
        #expect(status == 200 && (1000...1001).contains(lifetime), "\(ttl): \(answer)")
        let (zero, refusal) = try Self.post(routes, #"{"user_id":"carol","ttl_seconds":-0.0}"#)
        #expect(zero == 400 && (refusal["message"] as? String)?.contains("between 1 and") == true, "\(refusal)")
    }

    @Test func aTTLWrittenAsAnIntegerOrLeftOutIsTaken() throws {
        let (routes, _) = try Self.routes()
        for body in [#"{"user_id":"carol","ttl_seconds":1000}"#, #"{"ttl_seconds" : 60 , "user_id":"carol"}"#,
                     #"{"user_id":"carol","ttl_seconds":null}"#, #"{"user_id":"carol"}"#] {
            let (status, answer) = try Self.post(routes, body)
            #expect(status == 200, "\(body): \(answer)")
        }
        // Another type is still the decoder's 400, naming the field.
        let (status, answer) = try Self.post(routes, #"{"user_id":"carol","ttl_seconds":"60"}"#)
        #expect(status == 400 && answer["field"] as? String == "ttl_seconds", "\(answer)")
    }
}
