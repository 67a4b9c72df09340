import HeraldCore
import PushHTTP
import PushTestSupport
import Synchronization
import Testing

@testable import PushAPNs

@Suite struct APNsProviderTests {
    static let token = "00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"
    let credentials = APNsCredentials(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", topic: "com.mobiari.merchant",
                                      signer: try! ES256Signer(pem: TestKeys.ecP256PKCS8), keySource: "test")
    let target = PushTarget(provider: .apns, token: token, environment: "sandbox")

    func send(_ provider: APNsProvider, pushID: PushID = .random(),
              _ notification: PushNotification = PushNotification(title: "t", body: "b")) -> PushClassification? {
        let result = Mutex<PushClassification?>(nil)
        provider.send(notification, to: target, pushID: pushID) { c in result.withLock { $0 = c } }
        return result.withLock { $0 }
    }

    @Test func tokenRuleIsRegistrations() throws {
        #expect(APNsProvider.id == .apns)
        #expect(try APNsProvider.validate(token: "ABCDEF0123456789") == "abcdef0123456789")
        let message = "an APNs token is an even number (16-200) of hex digits"
        for bad in ["abcdef012345678", "abcdef0123456789a", "abcdef012345678g", String(repeating: "a", count: 202), ""] {
            #expect(throws: DeviceTokenError(message)) { try APNsProvider.validate(token: bad) }
        }
        #expect(try APNsProvider.validate(token: String(repeating: "A", count: 200)) == String(repeating: "a", count: 200))
    }

    @Test func sendsToTheDevicesGatewayWithThePushID() throws {
        let transport = ScriptedTransport([response(200, headers: [("apns-id", "eabeae54-14a8-11e5-b60b-1697f925ec7b")])])
        let provider = APNsProvider(credentials: credentials, gateways: APNsGateways(), transport: transport, clock: ManualClock())
        let id = try #require(PushID("eabeae54-14a8-11e5-b60b-1697f925ec7b"))
        #expect(send(provider, pushID: id)?.outcome == .delivered(providerMessageID: "eabeae54-14a8-11e5-b60b-1697f925ec7b"))
        let request = try #require(transport.requests.first)
        #expect(request.url == "https://api.sandbox.push.apple.com/3/device/\(Self.token)")
        #expect(request.headerLines.contains("apns-id: eabeae54-14a8-11e5-b60b-1697f925ec7b"))
        #expect(request.headerLines.contains("apns-expiration: \(1_767_225_600 + 3600)"))  // the injected clock
    }

    /// ADR 0018: an answer saying its connection is unusable retires that connection (the
    /// queue's retry then goes on a new one); the push is not sent again here, and its outcome is
    /// the counted retry it always was. Other answers retire nothing.
    @Test(arguments: [(400, "IdleTimeout"), (503, "Shutdown"), (403, "UnrelatedKeyIdInToken"), (429, "TooManyProviderTokenUpdates")])
    func anAnswerThatCondemnsItsConnectionRetiresIt(status: Int, reason: String) throws {
        var condemned = response(status, #"{"reason":"\#(reason)"}"#)
        condemned.connection = PushConnectionID(7)
        var delivered = response(200)
        delivered.connection = PushConnectionID(8)
        var refused = response(500, #"{"reason":"InternalServerError"}"#)
        refused.connection = PushConnectionID(8)
        let transport = ScriptedTransport([condemned, delivered, refused])
        let provider = APNsProvider(credentials: credentials, transport: transport, clock: ManualClock())
        let classification = try #require(send(provider))
        #expect(classification.outcome == .retry(afterSeconds: nil, reason: reason) && classification.reconnect)
        #expect(transport.requests.count == 1, "sent once: the retry is the queue's")
        #expect(transport.retired == [PushConnectionID(7)])
        #expect(send(provider)?.outcome == .delivered(providerMessageID: nil))
        #expect(send(provider)?.outcome == .retry(afterSeconds: nil, reason: "InternalServerError"))
        #expect(transport.retired == [PushConnectionID(7)])
    }

    @Test func expiredProviderTokenIsRefreshedOnceAndRetried() throws {
        let expired = response(403, #"{"reason":"ExpiredProviderToken"}"#)
        let transport = ScriptedTransport([expired, response(200)])
        let clock = ManualClock()
        let provider = APNsProvider(credentials: credentials, transport: transport, clock: clock)
        #expect(send(provider)?.outcome == .delivered(providerMessageID: nil))
        let auth = transport.requests.map { $0.headers.first { $0.0 == "authorization" }?.1 }
        #expect(auth.count == 2 && auth[0] != auth[1], "the retry carries a new JWT")
        #expect(transport.requests.map { $0.headers.first { $0.0 == "apns-id" }?.1 }.allSatisfy { $0 == transport.requests[0].headers.first { $0.0 == "apns-id" }?.1 })
    }

    /// Issue 17 (NO-2): APNs refused the JWT as expired and the push expired while it was
    /// replaced: it is not sent again; the provider reports the expired refusal (the worker
    /// records `expired`, job done). The rejected JWT is still dropped.
    @Test func aPushThatExpiresWhileTheJWTIsReplacedIsNotSentAgain() throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([response(403, #"{"reason":"ExpiredProviderToken"}"#), response(200)]) { _ in
            clock.advance(byMilliseconds: 80)   // the refusal takes 80 ms
            return nil
        }
        let provider = APNsProvider(credentials: credentials, transport: transport, clock: clock)
        let expiresAtMs = Int(clock.unixMilliseconds) + 60
        let notification = PushNotification(title: "t", expiresAt: (expiresAtMs + 999) / 1000, expiresAtMilliseconds: expiresAtMs)
        let result = try #require(send(provider, notification))
        #expect(result == .expired)
        #expect(result.outcome == .expired && result.rule == nil && result.status == nil)
        #expect(transport.requests.count == 1)
        // The next push gets a new JWT: the refused one was dropped all the same.
        #expect(send(provider)?.outcome == .delivered(providerMessageID: nil))
        let auth = transport.requests.map { $0.headers.first { $0.0 == "authorization" }?.1 }
        #expect(auth.count == 2 && auth[0] != auth[1])
    }

    /// Issue 17 (a push sent twice past its lease): the request carries the time left before the
    /// push's send-by deadline (the client drops or times it out then); past it nothing is sent,
    /// and a resend after a replaced JWT is not made once the deadline passed meanwhile.
    @Test func aPushIsLimitedToItsSendByDeadline() throws {
        let clock = ManualClock()
        let transport = ScriptedTransport([response(200)])
        let provider = APNsProvider(credentials: credentials, transport: transport, clock: clock)
        let sendBy = SendByDeadline(unixMilliseconds: clock.unixMilliseconds + 8_000)
        let result = Mutex<[PushClassification]>([])
        provider.send(PushNotification(title: "t"), to: target, pushID: .random(), sendBy: sendBy) { c in result.withLock { $0.append(c) } }
        #expect(transport.requests.map(\.sendWithinMilliseconds) == [8_000])
        clock.advance(byMilliseconds: 8_000)
        provider.send(PushNotification(title: "t"), to: target, pushID: .random(), sendBy: sendBy) { c in result.withLock { $0.append(c) } }
        #expect(transport.requests.count == 1, "past its deadline: not sent")
        #expect(result.withLock { $0 }.map(\.outcome) == [.delivered(providerMessageID: nil), PushClassification.sendByPassed.outcome])

        let refusing = ScriptedTransport([response(403, #"{"reason":"ExpiredProviderToken"}"#), response(200)]) { _ in
            clock.advance(byMilliseconds: 300)   // the refusal takes 300 ms, past the deadline
            return nil
        }
        let renewing = APNsProvider(credentials: credentials, transport: refusing, clock: clock)
        let late = Mutex<PushClassification?>(nil)
        renewing.send(PushNotification(title: "t"), to: target, pushID: .random(),
                      sendBy: SendByDeadline(unixMilliseconds: clock.unixMilliseconds + 200)) { c in late.withLock { $0 = c } }
        #expect(late.withLock { $0 } == .sendByPassed)
        #expect(refusing.requests.count == 1, "not sent again after the deadline")
    }

    /// Issue 18: the refused replacement used to stay in use (every send refused until 20 minutes
    /// had passed). Now it is dropped too; its own replacement comes a minute after the last one,
    /// and sends meanwhile wait for it without reaching APNs.
    @Test func aSecondRefusalRightAfterARefreshWaitsAMinuteForTheNextToken() throws {
        let expired = response(403, #"{"reason":"ExpiredProviderToken"}"#)
        let transport = ScriptedTransport([expired, expired, response(200)])
        let clock = ManualClock()
        let provider = APNsProvider(credentials: credentials, transport: transport, clock: clock)
        #expect(send(provider)?.outcome == .retry(afterSeconds: 60, reason: "ExpiredProviderToken (token replaced less than 60 s ago; check the clock)"))
        #expect(transport.requests.count == 2)
        clock.advance(byMilliseconds: 10_000)
        #expect(send(provider)?.outcome == .notSent(afterSeconds: 50, reason: "apns_token_refresh_deferred"))
        #expect(transport.requests.count == 2, "nothing is sent with a rejected token")
        clock.advance(byMilliseconds: 50_000)
        #expect(send(provider)?.outcome == .delivered(providerMessageID: nil))
        let auth = transport.requests.map { $0.headers.first { $0.0 == "authorization" }?.1 }
        #expect(auth.count == 3 && Set(auth).count == 3, "three tokens: each rejected one replaced")
    }

    /// Issue 18: two `ExpiredProviderToken` within Apple's 20 minutes each get a new token and the
    /// push is delivered; APNs is not blocked for the rest of the window.
    @Test func twoExpiriesWithinTwentyMinutesAreBothRefreshedAndDelivered() throws {
        let expired = response(403, #"{"reason":"ExpiredProviderToken"}"#)
        let transport = ScriptedTransport([expired, response(200), expired, response(200)])
        let clock = ManualClock()
        let provider = APNsProvider(credentials: credentials, transport: transport, clock: clock)
        #expect(send(provider)?.outcome == .delivered(providerMessageID: nil))
        clock.advance(byMilliseconds: 5 * 60_000)
        #expect(send(provider)?.outcome == .delivered(providerMessageID: nil))
        let auth = transport.requests.map { $0.headers.first { $0.0 == "authorization" }?.1 }
        #expect(auth.count == 4 && auth[0] != auth[1] && auth[1] == auth[2] && auth[2] != auth[3])
    }

    @Test func aPayloadAPNsWouldRefuseIsNeverSent() {
        let transport = ScriptedTransport([response(200)])
        let provider = APNsProvider(credentials: credentials, transport: transport, clock: ManualClock())
        let result = Mutex<PushClassification?>(nil)
        provider.send(PushNotification(title: "t", data: ["aps": "x"]), to: target, pushID: .random()) { c in result.withLock { $0 = c } }
        #expect(result.withLock { $0 }?.outcome == .deadLetter(reason: "reserved_data_key"))
        #expect(transport.requests.isEmpty)
    }
}
