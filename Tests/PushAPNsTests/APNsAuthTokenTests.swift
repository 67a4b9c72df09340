import Foundation
import Dispatch
import HeraldCore
import PushHTTP
import PushTestSupport
import Synchronization
import Testing

@testable import PushAPNs

@Suite struct APNsAuthTokenTests {
    let signer = try! ES256Signer(pem: TestKeys.ecP256PKCS8)

    func make(_ clock: FakeClock) -> APNsAuthToken {
        APNsAuthToken(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", signer: signer, clock: clock.closure)
    }

    @Test func tokenHasExactlyApplesFieldsAndVerifies() throws {
        let clock = FakeClock(1_437_179_036)
        let token = try make(clock).current()
        let jwt = try #require(DecodedJWT(token))
        #expect(jwt.headerText == #"{"alg":"ES256","kid":"ABC123DEFG"}"#)
        #expect(jwt.claimsText == #"{"iat":1437179036,"iss":"DEF123GHIJ"}"#)
        #expect(OpenSSLVerify.verifyES256(token: token, publicKeyPEM: signer.publicKeyPEM()))
    }

    @Test func reusedUntilFortyMinutesThenRefreshed() throws {
        let clock = FakeClock(1_000_000)
        let cache = make(clock)
        let first = try cache.current()
        for _ in 0..<100 { #expect(try cache.current() == first) }
        clock.advance(40 * 60 - 1)
        #expect(try cache.current() == first)
        clock.advance(1)
        let second = try cache.current()
        #expect(second != first)
        #expect(cache.issuedAt == 1_000_000 + 2400)
    }

    @Test func expiredProviderTokenRegeneratesOnceForManyRejections() throws {
        let clock = FakeClock(1_000_000)
        let cache = make(clock)
        let old = try cache.current()
        clock.advance(60)  // fresh by our clock: the double's /apns/expire-next-token case
        #expect(cache.invalidate(rejected: old) == .willRegenerate)
        #expect(cache.invalidate(rejected: old) == .alreadyReplaced)  // a second in-flight 403
        let fresh = try cache.current()
        #expect(fresh != old)
        #expect(cache.issuedAt == 1_000_060)
        #expect(cache.invalidate(rejected: old) == .alreadyReplaced)
        #expect(try cache.current() == fresh)
    }

    /// Issue 18: a second `ExpiredProviderToken` within Apple's 20 minutes used to keep the
    /// rejected token (and so block APNs) for the rest of the window; a rejected token is replaced.
    @Test func aSecondRejectionWithinTwentyMinutesIsRefreshedToo() throws {
        let clock = FakeClock(1_000_000)
        let cache = make(clock)
        let first = try cache.current()
        #expect(cache.invalidate(rejected: first) == .willRegenerate)
        let second = try cache.current()
        clock.advance(5 * 60)
        #expect(cache.invalidate(rejected: second) == .willRegenerate)
        let third = try cache.current()
        #expect(third != second && third != first)
        #expect(cache.issuedAt == 1_000_000 + 300)
    }

    @Test func forcedRefreshesAreAMinuteApartAndTheRejectedTokenIsNeverReused() throws {
        let clock = FakeClock(1_000_000)
        let cache = make(clock)
        let first = try cache.current()
        #expect(cache.invalidate(rejected: first) == .willRegenerate)
        let second = try cache.current()
        clock.advance(20)
        // Refused again 20 s after the refresh: dropped, its replacement 40 s away.
        #expect(cache.invalidate(rejected: second) == .deferred(secondsLeft: 40))
        #expect(throws: APNsAuthTokenError.refreshDeferred(secondsLeft: 40)) { try cache.current() }
        clock.advance(39)
        #expect(throws: APNsAuthTokenError.refreshDeferred(secondsLeft: 1)) { try cache.current() }
        clock.advance(1)
        let third = try cache.current()
        #expect(third != second && cache.issuedAt == 1_000_060)
        #expect(try cache.current() == third)
        // That refresh counts: another rejection right away waits a minute again.
        #expect(cache.invalidate(rejected: third) == .deferred(secondsLeft: 60))
    }

    @Test func clockGoingBackwardsKeepsTheToken() throws {
        let clock = FakeClock(1_000_000)
        let cache = make(clock)
        let token = try cache.current()
        clock.advance(-3600)
        #expect(try cache.current() == token)
    }

    @Test func concurrentCallersShareOneToken() async throws {
        let clock = FakeClock(1_000_000)
        let cache = make(clock)
        let tokens = Mutex<Set<String>>([])
        DispatchQueue.concurrentPerform(iterations: 200) { _ in
            let token = try! cache.current()
            tokens.withLock { _ = $0.insert(token) }
        }
        #expect(tokens.withLock { $0.count } == 1)
    }

    @Test func credentialsConvenience() throws {
        let credentials = APNsCredentials(keyID: "K", teamID: "T", topic: "com.x", signer: signer, keySource: "test")
        let cache = APNsAuthToken(credentials: credentials, clock: { 5 })
        let jwt = try #require(DecodedJWT(try cache.current()))
        #expect(jwt.headerText == #"{"alg":"ES256","kid":"K"}"#)
        #expect(jwt.claimsText == #"{"iat":5,"iss":"T"}"#)
    }
}

@Suite struct APNsTokenPyJWTExport {
    /// Writes tokens for the PyJWT cross-check when PUSHBRIDGE_JWT_OUT names a directory:
    /// see the report for the `python3 -c 'import jwt…'` line that verifies them.
    @Test func writesTokensForPyJWTWhenAsked() throws {
        guard let directory = ProcessInfo.processInfo.environment["PUSHBRIDGE_JWT_OUT"] else { return }
        let es = try ES256Signer(pem: TestKeys.ecP256PKCS8.replacingOccurrences(of: "\n", with: "\\n"))
        let apns = APNsAuthToken(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", signer: es)
        var many: [String] = []
        for _ in 0..<2000 { many.append(try JWTEncoder.encode(header: ["kid": .string("ABC123DEFG")], claims: ["iss": .string("DEF123GHIJ"), "iat": .int(Int64(systemUnixClock()))], signer: es)) }
        let files: [(String, String)] = [
            ("es256.pub.pem", es.publicKeyPEM()), ("es256.p8", TestKeys.ecP256PKCS8), ("apns.jwt", try apns.current()),
            ("es256-many.txt", many.joined(separator: "\n")),
        ]
        for (name, text) in files {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
    }
}
