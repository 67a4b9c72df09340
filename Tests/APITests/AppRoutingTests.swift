import Foundation
import HeraldCore
import PushHTTP
import Testing

@testable import API
@testable import Realtime

/// ADR 0006: which app a token or server key reaches, per-app verification (issuer, audience,
/// JWKS by `kid` with rotation, claim names), and app-scoped channel names.
@Suite("App routing")
struct AppRoutingTests {
    static let now: Int64 = 1_800_000_000
    static let defaultSecret = Array("default-secret-0123456789abcdef0".utf8)
    static let chatSecret = Array("chat-secret-0123456789abcdef0123".utf8)

    /// A compact HS256 or ES256 JWS over `claims` (JSON object members, already encoded).
    static func token(_ claims: [String: Any], hs256 secret: [UInt8]? = nil, es256 signer: ES256Signer? = nil, kid: String? = nil) -> String {
        var header: [String: Any] = ["alg": secret != nil ? "HS256" : "ES256", "typ": "JWT"]
        if let kid { header["kid"] = kid }
        func part(_ object: [String: Any]) -> String {
            Base64URL.encode(Array(try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }
        let input = part(header) + "." + part(claims)
        let signature: [UInt8]
        if let secret {
            signature = Array(input.utf8).withUnsafeBytes { VerificationKey.hmacSHA256(key: secret, data: $0) }
        } else {
            signature = try! signer!.sign(Array(input.utf8))
        }
        return input + "." + Base64URL.encode(signature)
    }

    static func claims(_ extra: [String: Any] = [:]) -> [String: Any] {
        ["sub": "carol", "sid": "s1", "exp": now + 600].merging(extra) { _, new in new }
    }

    static func directory(_ apps: [(AppRecord, [UInt8]?)]) throws -> Authenticator {
        var configuration = APIConfiguration(serverKey: "default-server-key", verificationKeys: [try VerificationKey.hmac(secret: defaultSecret)])
        let directory = AppDirectory(configuration: configuration)
        for (record, secret) in apps { directory.install(try ResolvedApp(record: record, jwtSecret: secret)) }
        configuration.apps = directory
        return Authenticator(configuration: configuration)
    }

    static func chat(issuer: String? = "https://chat.example", audience: String? = nil, keys: [String] = []) -> AppRecord {
        var settings = AppSettings()
        settings.tokens.issuer = issuer
        settings.tokens.audience = audience
        return AppRecord(id: AppID("chat")!, settings: settings,
                         serverKeys: keys.map { ServerKeyEntry(hash: SecretBox.sha256Hex(Array($0.utf8)), createdAt: 0) }, createdAt: 0, updatedAt: 0)
    }

    static func refused(_ authenticator: Authenticator, _ token: String) -> Bool {
        do {
            _ = try authenticator.verify(token: token, now: now)
            return false
        } catch {
            return error.status == 401
        }
    }

    @Test func aTokenRoutesByAppClaimThenIssuerElseDefault() throws {
        let auth = try Self.directory([(Self.chat(), Self.chatSecret)])
        #expect(try auth.verify(token: Self.token(Self.claims(), hs256: Self.defaultSecret), now: Self.now).app == .default)
        let byIssuer = try auth.verify(token: Self.token(Self.claims(["iss": "https://chat.example"]), hs256: Self.chatSecret), now: Self.now)
        #expect(byIssuer.app == AppID("chat") && byIssuer.subject == "carol")
        let byClaim = Self.token(Self.claims(["app": "chat", "iss": "https://chat.example"]), hs256: Self.chatSecret)
        #expect(try auth.verify(token: byClaim, now: Self.now).app == AppID("chat"))
        // Routed to chat, so only chat's key counts; never retried with another app's.
        #expect(Self.refused(auth, Self.token(Self.claims(["iss": "https://chat.example"]), hs256: Self.defaultSecret)))
        #expect(Self.refused(auth, Self.token(Self.claims(["app": "nope"]), hs256: Self.defaultSecret)))
        // The app claim routes, then the app's issuer check applies.
        #expect(Self.refused(auth, Self.token(Self.claims(["app": "chat"]), hs256: Self.chatSecret)))
        // An issuer no app has is the default app's token.
        #expect(try auth.verify(token: Self.token(Self.claims(["iss": "https://else"]), hs256: Self.defaultSecret), now: Self.now).app == .default)
        // An app claim that is not a string does not route (the issuer does), and the claim is then refused by name.
        let numeric = Self.token(Self.claims(["app": 5, "iss": "https://chat.example"]), hs256: Self.chatSecret)
        #expect(throws: HTTPError(401, "invalid_token", "token claim \"app\" has an invalid type or value")) {
            try auth.verify(token: numeric, now: Self.now)
        }
        #expect(try auth.verify(token: Self.token(Self.claims(["app": "default"]), hs256: Self.defaultSecret), now: Self.now).app == .default)
    }

    @Test func anAppClaimNamingNoAppIsRefusedEvenWithoutStoredApps() throws {
        let auth = try Self.directory([])
        #expect(Self.refused(auth, Self.token(Self.claims(["app": "chat"]), hs256: Self.defaultSecret)))
        #expect(try auth.verify(token: Self.token(Self.claims(["app": "default"]), hs256: Self.defaultSecret), now: Self.now).app == .default)
        #expect(try auth.verify(token: Self.token(Self.claims(), hs256: Self.defaultSecret), now: Self.now).app == .default)
    }

    @Test func theAudienceMustBeListed() throws {
        let auth = try Self.directory([(Self.chat(audience: "herald"), Self.chatSecret)])
        for aud in ["herald", ["x", "herald"]] as [Any] {
            let token = Self.token(Self.claims(["iss": "https://chat.example", "aud": aud]), hs256: Self.chatSecret)
            #expect(try auth.verify(token: token, now: Self.now).audience.contains("herald"))
        }
        #expect(Self.refused(auth, Self.token(Self.claims(["iss": "https://chat.example", "aud": "other"]), hs256: Self.chatSecret)))
        #expect(Self.refused(auth, Self.token(Self.claims(["iss": "https://chat.example"]), hs256: Self.chatSecret)))
    }

    @Test func jwksKeysAreChosenByKidAndReplacingTheDocumentRotatesThem() throws {
        let signer = try ES256Signer(pem: JWTVectors.ecPrivateKeyPEM)
        let der = Array(Data(base64Encoded: signer.publicKeyPEM().split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined())!)
        let point = Array(der.suffix(64))
        func jwks(_ kid: String) -> String {
            "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"\(kid)\",\"x\":\"\(Base64URL.encode(point.prefix(32)))\",\"y\":\"\(Base64URL.encode(point.suffix(32)))\"}]}"
        }
        var record = Self.chat()
        record.settings.tokens.jwks = jwks("k1")
        record.settings.tokens.userClaim = "uid"
        let auth = try Self.directory([(record, nil)])
        let claims = ["uid": "ivan", "sid": "s1", "exp": Self.now + 600, "iss": "https://chat.example"] as [String: Any]
        let verified = try auth.verify(token: Self.token(claims, es256: signer, kid: "k1"), now: Self.now)
        #expect(verified.subject == "ivan" && verified.app == AppID("chat"))
        #expect(Self.refused(auth, Self.token(claims, es256: signer, kid: "k2")))
        record.settings.tokens.jwks = jwks("k2")
        auth.apps.install(try ResolvedApp(record: record, jwtSecret: nil))
        #expect(Self.refused(auth, Self.token(claims, es256: signer, kid: "k1")))
        #expect(try auth.verify(token: Self.token(claims, es256: signer, kid: "k2"), now: Self.now).subject == "ivan")
        // The user claim is uid: a token with only sub is missing it.
        #expect(Self.refused(auth, Self.token(["sub": "ivan", "exp": Self.now + 600, "iss": "https://chat.example"], es256: signer, kid: "k2")))
    }

    @Test func badJWKSDocumentsAndAlgorithmsAreRefusedNamingTheField() {
        var record = Self.chat()
        for (document, fragment) in [("{}", "keys"), ("{\"keys\":[]}", "no keys"), ("{\"keys\":[{\"kty\":\"oct\"}]}", "kty"),
                                     ("{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"}]}", "P-256")] {
            record.settings.tokens.jwks = document
            #expect(throws: AppSettingError.self) { try ResolvedApp(record: record, jwtSecret: nil) }
            do { _ = try ResolvedApp(record: record, jwtSecret: nil) } catch {
                #expect(error.field == "tokens.jwks" && error.message.contains(fragment), "\(error)")
            }
        }
        record.settings.tokens.jwks = nil
        record.settings.tokens.algorithms = ["RS256"]
        do {
            _ = try ResolvedApp(record: record, jwtSecret: Self.chatSecret)
            Issue.record("an HS256 secret with only RS256 accepted should be refused")
        } catch {
            #expect(error.field == "tokens.algorithms")
        }
    }

    @Test func serverKeysNameTheirApp() throws {
        let auth = try Self.directory([(Self.chat(keys: ["chat-key-0123456789"]), Self.chatSecret)])
        func context(_ key: String) -> RequestContext {
            RequestContext(request: HTTPRequest(method: .get, target: "/", headers: ["Authorization": "Bearer \(key)"], body: []),
                           pathParameters: [:], remoteAddress: "127.0.0.1", loopIndex: 0)
        }
        #expect(try auth.server(context("default-server-key")) == .default)
        #expect(try auth.server(context("chat-key-0123456789")) == AppID("chat"))
        #expect(throws: HTTPError.self) { try auth.server(context("chat-key-012345678")) }
        auth.apps.remove(AppID("chat")!)
        #expect(throws: HTTPError.self) { try auth.server(context("chat-key-0123456789")) }
    }

    @Test func theLastServerKeyFoundIsForgottenWhenTheKeysChange() throws {
        // The key last found is answered without hashing (issue 17); rotating or removing it
        // must take effect at the next request all the same.
        let auth = try Self.directory([(Self.chat(keys: ["chat-key-0123456789"]), Self.chatSecret)])
        func context(_ key: String) -> RequestContext {
            RequestContext(request: HTTPRequest(method: .get, target: "/", headers: ["Authorization": "Bearer \(key)"], body: []),
                           pathParameters: [:], remoteAddress: "127.0.0.1", loopIndex: 0)
        }
        for _ in 0..<2 { #expect(try auth.server(context("chat-key-0123456789")) == AppID("chat")) }
        #expect(throws: HTTPError.self) { try auth.server(context("chat-key-012345678X")) }
        auth.apps.install(try ResolvedApp(record: Self.chat(keys: ["chat-key-rotated-000"]), jwtSecret: Self.chatSecret))
        #expect(throws: HTTPError.self) { try auth.server(context("chat-key-0123456789")) }
        for _ in 0..<2 { #expect(try auth.server(context("chat-key-rotated-000")) == AppID("chat")) }
        // Another app's key in between: each is still named by its own app.
        #expect(try auth.server(context("default-server-key")) == .default)
        #expect(try auth.server(context("chat-key-rotated-000")) == AppID("chat"))
        auth.apps.remove(AppID("chat")!)
        #expect(throws: HTTPError.self) { try auth.server(context("chat-key-rotated-000")) }
        #expect(try auth.server(context("default-server-key")) == .default)
    }

    @Test func theEnvironmentsServerKeyIsHashedAtFirstUseAndStillWins() throws {
        // HERALD_SERVER_KEY is hashed at its first use, not at start (issue 17); a stored app
        // installed before that first use with the same key must not take it over.
        let auth = try Self.directory([(Self.chat(keys: ["default-server-key", "chat-key-0123456789"]), Self.chatSecret)])
        func context(_ key: String) -> RequestContext {
            RequestContext(request: HTTPRequest(method: .get, target: "/", headers: ["Authorization": "Bearer \(key)"], body: []),
                           pathParameters: [:], remoteAddress: "127.0.0.1", loopIndex: 0)
        }
        #expect(try auth.server(context("default-server-key")) == .default)
        #expect(try auth.server(context("chat-key-0123456789")) == AppID("chat"))
        #expect(auth.apps.serverKeyTaken(SecretBox.sha256Hex(Array("default-server-key".utf8)), except: AppID("chat")!))
        #expect(auth.apps.app(.default)?.hasServerKey == true)
    }

    @Test func withoutAServerKeyTheServerAPIIsOff() throws {
        let configuration = APIConfiguration(serverKey: nil, verificationKeys: [])
        let directory = AppDirectory(configuration: configuration)
        #expect(directory.app(.default)?.hasServerKey == false)
        #expect(directory.snapshot.byServerKey.isEmpty)
    }

    @Test func channelNamesAreScopedPerApp() {
        let name = ChannelName("user:42")!
        #expect(ChannelName.scoped(name, app: "default") == name)
        let scoped = ChannelName.scoped(name, app: "chat")
        #expect(scoped.rawValue == "~chat~user:42" && scoped.clientName == "user:42" && scoped.app == "chat")
        #expect(scoped.unscoped == name && name.app == "default" && name.clientName == "user:42")
        #expect(ChannelName("~chat~user:42") == nil)  // no request can name it
        // What a broker or presence store wrote reads back as it was (Redis frames, remote presence).
        #expect(ChannelName(storedRawValue: scoped.rawValue) == scoped && ChannelName(storedRawValue: "user:42") == name)
        for bad in ["~chat", "~~user:42", "~Chat~user:42", "~chat~", "~chat~a b", "~a_b~user:42"] {
            #expect(ChannelName(storedRawValue: bad) == nil, "\(bad)")
        }
        // Presence keys: no user id of one app names another app's user.
        #expect(Presence.userKey(app: "default", userID: "42") == "42" && Presence.userKey(app: "chat", userID: "42") == "~chat~42")
        #expect(Presence.userKey(app: "default", userID: "~chat~42") != Presence.userKey(app: "chat", userID: "42"))
        #expect(Presence.userID(fromKey: Presence.userKey(app: "default", userID: "~chat~42")) == "~chat~42")
        var identity = StreamIdentity(userID: "42", sessionID: nil, grants: [ChannelGrant("orders:*")!], expiresAt: nil)
        identity.app = "chat"
        #expect(identity.personalChannel == scoped)
        #expect(identity.allows(name) && identity.allows(ChannelName("orders:1")!) && !identity.allows(ChannelName("user:7")!))
        #expect(identity.scoped(ChannelName("orders:1")!).rawValue == "~chat~orders:1")
    }

    @Test func appIDsAreNarrow() {
        for good in ["chat", "a", "app-2", String(repeating: "a", count: 63)] { #expect(AppID(good) != nil, "\(good)") }
        for bad in ["", "-x", "Chat", "a_b", "a~b", "a:b", String(repeating: "a", count: 64)] { #expect(AppID(bad) == nil, "\(bad)") }
    }
}
