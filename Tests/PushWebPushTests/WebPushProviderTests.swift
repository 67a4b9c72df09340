import Foundation
import HeraldCore
import PushHTTP
import PushTestSupport
import Synchronization
import Testing

@testable import PushWebPush

@Suite struct WebPushProviderTests {
    static let credentials = try! VAPIDCredentials.load(environment: VAPIDTests.environment)!
    /// The browser's side: its key pair and auth secret.
    let userAgent = try! P256KeyPair.generate()
    let auth: [UInt8] = Array(0..<16)
    var subscription: WebPushSubscription {
        try! WebPushSubscription(endpoint: "https://push.example.net:8443/wpush/v2/abc", p256dh: Base64URL.encode(userAgent.publicKey),
                                 auth: Base64URL.encode(auth), allowLoopbackHTTP: false, allowPrivateHosts: false)
    }
    var target: PushTarget { PushTarget(provider: .webpush, token: subscription.token, environment: nil) }

    func send(_ provider: WebPushProvider, _ notification: PushNotification = PushNotification(title: "t", body: "b"),
              to target: PushTarget? = nil, pushID: PushID = .random()) -> PushClassification? {
        let result = Mutex<PushClassification?>(nil)
        provider.send(notification, to: target ?? self.target, pushID: pushID) { c in result.withLock { $0 = c } }
        return result.withLock { $0 }
    }

    func provider(_ answers: [PushHTTPResponse], allowLoopbackHTTP: Bool = false, allowPrivateAddresses: Bool = false, now: Int64 = 1_754_563_200) -> (WebPushProvider, ScriptedTransport) {
        let transport = ScriptedTransport(answers)
        let clock = ManualClock(unixMilliseconds: now * 1000)
        return (WebPushProvider(credentials: Self.credentials, transport: transport, allowLoopbackHTTP: allowLoopbackHTTP,
                                allowPrivateAddresses: allowPrivateAddresses, clock: clock), transport)
    }

    @Test func theTokenRuleIsTheSubscriptionsAndCanonical() throws {
        #expect(WebPushProvider.id == .webpush)
        let padded = subscription.endpoint + "#p256dh=" + Base64URL.encode(userAgent.publicKey) + "=&auth=" + Base64URL.encode(auth) + "=="
        #expect(try WebPushProvider.validate(token: padded) == subscription.token)
        #expect(throws: DeviceTokenError.self) { try WebPushProvider.validate(token: "https://push.example/abc") }
        var offCurve = userAgent.publicKey
        offCurve[64] ^= 1
        #expect(throws: DeviceTokenError("p256dh is not a point on the P-256 curve", field: "subscription.keys.p256dh")) {
            try WebPushProvider.validate(token: "https://push.example/abc#p256dh=\(Base64URL.encode(offCurve))&auth=\(Base64URL.encode(auth))")
        }
    }

    /// Issue 17 (NO-2): the `TTL` of a millisecond expiry is the time left rounded down, 0 under a
    /// second (RFC 8030 §5.2: deliver now or drop), never past the caller's expiry.
    @Test func theTTLOfAMillisecondExpiryIsRoundedDown() throws {
        for (left, ttl) in [(1_700, "1"), (700, "0")] {
            let (provider, transport) = provider([response(201)])
            let at = 1_754_563_200_000 + left
            let notification = PushNotification(title: "t", expiresAt: (at + 999) / 1000, expiresAtMilliseconds: at)
            _ = send(provider, notification, pushID: .random())
            let request = try #require(transport.requests.first)
            #expect(Dictionary(uniqueKeysWithValues: request.headers)["ttl"] == ttl)
        }
    }

    @Test func aPushIsEncryptedToTheBrowserAndSignedForItsPushService() throws {
        let (provider, transport) = provider([response(201, headers: [("location", "https://push.example.net:8443/m/1")])])
        let pushID = PushID.random()
        let notification = PushNotification(title: "Order shipped", subtitle: "Store 4", body: "Arrives Friday", badge: 3,
                                            collapseKey: "order-77", data: ["order_id": "77"], priority: .urgent, ttlSeconds: 600)
        #expect(send(provider, notification, pushID: pushID)?.outcome == .delivered(providerMessageID: "https://push.example.net:8443/m/1"))
        let request = try #require(transport.requests.first)
        #expect(request.url == "https://push.example.net:8443/wpush/v2/abc")
        let headers = Dictionary(uniqueKeysWithValues: request.headers)
        #expect(request.headers.map(\.0) == ["ttl", "urgency", "topic", "content-encoding", "content-type", "authorization"])
        #expect(headers["ttl"] == "600" && headers["urgency"] == "high" && headers["topic"] == "order-77")
        #expect(headers["content-encoding"] == "aes128gcm")
        let authorization = try #require(headers["authorization"])
        let jwt = try #require(DecodedJWT(String(authorization.dropFirst("vapid t=".count).prefix { $0 != "," })))
        #expect(jwt.claims["aud"] as? String == "https://push.example.net:8443")
        #expect(jwt.claims["exp"] as? Int == 1_754_563_200 + 12 * 3600)
        let plaintext = try #require(WebPushEncryption.decrypt(request.body, userAgent: userAgent, auth: auth))
        #expect(String(decoding: plaintext, as: UTF8.self) == #"{"badge":3,"body":"Arrives Friday","data":{"order_id":"77"},"kind":"alert","#
                + #""priority":"urgent","push_id":"\#(pushID.value)","subtitle":"Store 4","tag":"order-77","title":"Order shipped"}"#)
    }

    @Test func aWakeUpCarriesItsDataOnlyAndATopicThatFits() throws {
        let (provider, transport) = provider([response(201)])
        let pushID = PushID.random()
        let wakeup = PushNotification.wakeup(data: ["notification_id": "n1"], collapseKey: "inbox:user/42 — refresh", rootKey: "herald")
        #expect(send(provider, wakeup, pushID: pushID)?.outcome == .delivered(providerMessageID: nil))
        let request = try #require(transport.requests.first)
        let headers = Dictionary(uniqueKeysWithValues: request.headers)
        let topic = try #require(headers["topic"])
        #expect(topic.count == 32 && topic == WebPushRequestBuilder.topic(for: "inbox:user/42 — refresh"))
        #expect(topic.utf8.allSatisfy { $0 == 0x2D || $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
        #expect(WebPushRequestBuilder.topic(for: "inbox:user/43 — refresh") != topic)
        #expect(WebPushRequestBuilder.topic(for: String(repeating: "a", count: 33))?.count == 32)
        #expect(WebPushRequestBuilder.topic(for: nil) == nil)
        #expect(headers["urgency"] == "high" && headers["ttl"] == "3600")
        let plaintext = try #require(WebPushEncryption.decrypt(request.body, userAgent: userAgent, auth: auth))
        #expect(String(decoding: plaintext, as: UTF8.self)
                == #"{"data":{"herald":{"notification_id":"n1"}},"kind":"wakeup","priority":"high","push_id":"\#(pushID.value)"}"#)
        let normal = PushNotification(title: "x", priority: .normal)
        #expect(WebPushRequestBuilder.urgency(for: normal) == "normal")
    }

    /// ADR 0020: without a collapse key or tag the notification's id is the `Topic` (it fits as
    /// it is: ≤ 32 base64url characters) and the alert's `tag`, so a resend replaces its first
    /// copy at the push service and in a service worker passing `tag` on; the caller's key wins.
    @Test func theNotificationIDIsTheTopicAndTheTag() throws {
        let id = "ntf_01jf3k9q7m2x8c4v5b6n7"
        for (notification, topic, tag) in [
            (PushNotification(title: "t", notificationID: id), id, id as String?),
            (PushNotification.wakeup(data: ["m": "1"], notificationID: id), id, nil),
            (PushNotification(title: "t", tag: "chat-9", notificationID: id), id, "chat-9"),
            (PushNotification(title: "t", collapseKey: "order-77", notificationID: id), "order-77", "order-77"),
        ] {
            let (provider, transport) = provider([response(201)])
            let pushID = PushID.random()
            _ = send(provider, notification, pushID: pushID)
            let request = try #require(transport.requests.first)
            #expect(Dictionary(uniqueKeysWithValues: request.headers)["topic"] == topic)
            let plaintext = try #require(WebPushEncryption.decrypt(request.body, userAgent: userAgent, auth: auth))
            let json = try #require(try JSONSerialization.jsonObject(with: Data(plaintext)) as? [String: Any])
            #expect(json["tag"] as? String == tag)
        }
        #expect(WebPushRequestBuilder.topic(for: "push_01jf3k9q7m2x8c4v5b6n7") == "push_01jf3k9q7m2x8c4v5b6n7")
    }

    @Test func whatCannotBeSentIsNeverSent() throws {
        let (provider, transport) = provider([response(201)])
        // Data no cut of the texts makes fit (an alert's long texts are shortened: WebPushFittingTests).
        let big = PushNotification(title: "t", body: "b", data: ["k": String(repeating: "x", count: WebPushEncryption.maxPlaintextBytes)])
        let refused = send(provider, big)
        #expect(refused?.outcome == .deadLetter(reason: "payload_too_large"))
        #expect(refused?.rule == .deadLetterRequest)
        #expect(send(provider, PushNotification(title: "t", expiresAt: 1_754_563_200))?.outcome == .expired, "expired: not sent, and not a dead letter")
        #expect(send(provider, to: PushTarget(provider: .webpush, token: "https://push.example/abc", environment: nil))?.outcome
                == .deadLetter(reason: "invalid_device_token"))
        let local = try WebPushSubscription(endpoint: "http://127.0.0.1:9999/push/1", p256dh: Base64URL.encode(userAgent.publicKey),
                                            auth: Base64URL.encode(auth), allowLoopbackHTTP: true, allowPrivateHosts: true)
        let http = send(provider, to: PushTarget(provider: .webpush, token: local.token, environment: nil))
        #expect(http?.outcome == .deadLetter(reason: "http_endpoint_not_allowed"))
        #expect(http?.isConfigurationError == true)
        #expect(transport.requests.isEmpty)
        // The largest plaintext that fits is a 4096-byte body.
        let fits = String(repeating: "y", count: WebPushEncryption.maxPlaintextBytes - 100)
        let (roomy, roomyTransport) = self.provider([response(201)])
        var exact = PushNotification(kind: .alert, body: fits)
        let overhead = WebPushRequestBuilder.payload(for: exact, pushID: .random()).bytes.count - fits.utf8.count
        exact.body = String(repeating: "y", count: WebPushEncryption.maxPlaintextBytes - overhead)
        #expect(send(roomy, exact)?.outcome == .delivered(providerMessageID: nil))
        #expect(roomyTransport.requests.first?.body.count == 4096)
    }

    @Test func loopbackHTTPIsSentToWhenAllowed() throws {
        let (provider, transport) = provider([response(201)], allowLoopbackHTTP: true, allowPrivateAddresses: true)
        let local = try WebPushSubscription(endpoint: "http://127.0.0.1:9999/push/1", p256dh: Base64URL.encode(userAgent.publicKey),
                                            auth: Base64URL.encode(auth), allowLoopbackHTTP: true, allowPrivateHosts: true)
        #expect(send(provider, to: PushTarget(provider: .webpush, token: local.token, environment: nil))?.outcome == .delivered(providerMessageID: nil))
        let authorization = transport.requests.first.flatMap { Dictionary(uniqueKeysWithValues: $0.headers)["authorization"] } ?? ""
        #expect(DecodedJWT(String(authorization.dropFirst("vapid t=".count).prefix { $0 != "," }))?.claims["aud"] as? String == "http://127.0.0.1:9999")
    }

    func subscription(endpoint: String) throws -> PushTarget {
        let subscription = try WebPushSubscription(endpoint: endpoint, p256dh: Base64URL.encode(userAgent.publicKey),
                                                   auth: Base64URL.encode(auth), allowLoopbackHTTP: false, allowPrivateHosts: true)
        return PushTarget(provider: .webpush, token: subscription.token, environment: nil)
    }

    @Test func endpointsThatAreNotPublicAreNotSentToUnlessAllowed() throws {
        let (provider, transport) = provider([response(201)])
        // Registered while the deployment allowed it, or before the rule existed.
        for endpoint in ["https://127.0.0.1:8443/_double/reset", "https://169.254.169.254/latest/api/token", "https://[::1]:5432/",
                         "https://[::ffff:10.0.0.1]/x", "https://metadata.google.internal/x", "https://2130706433/x"] {
            let verdict = send(provider, to: try subscription(endpoint: endpoint))
            guard case .deadLetter(let reason)? = verdict?.outcome else { Issue.record("\(endpoint): \(String(describing: verdict))"); continue }
            #expect(reason.hasPrefix("endpoint_not_public: endpoint host "), "\(reason)")
            #expect(verdict?.isConfigurationError == true, "operators see it")
        }
        #expect(transport.requests.isEmpty)
        // A public one goes to the transport with the rule for the addresses its name resolves to.
        #expect(send(provider)?.outcome == .delivered(providerMessageID: nil))
        #expect(transport.requests.map(\.publicAddressesOnly) == [true])

        let (allowing, allowingTransport) = self.provider([response(201)], allowPrivateAddresses: true)
        #expect(send(allowing, to: try subscription(endpoint: "https://127.0.0.1:8443/wp/1"))?.outcome == .delivered(providerMessageID: nil))
        #expect(allowingTransport.requests.map(\.publicAddressesOnly) == [false])
    }

    @Test func aNameThatResolvesToNoPublicAddressIsADeadLetter() {
        let refusing = RefusingTransport()
        let provider = WebPushProvider(credentials: Self.credentials, transport: refusing, clock: ManualClock(unixMilliseconds: 1_754_563_200_000))
        let verdict = send(provider)
        #expect(verdict?.outcome == .deadLetter(reason: "endpoint_not_public: push.example.net:8443 resolves to no public address (refused: 10.0.0.7)"))
        #expect(verdict?.isConfigurationError == true)
        #expect(refusing.sent.withLock { $0 } == 1)
    }

    /// A push service that answers only when told: its requests stay in flight meanwhile.
    final class HoldingTransport: PushTransport {
        let held = Mutex<[(host: String, completion: @Sendable (Result<PushHTTPResponse, any Error>) -> Void)]>([])
        /// Each request's `sendWithinMilliseconds`, in the order sent.
        let sendWithin = Mutex<[Int64?]>([])
        func send(_ request: PushHTTPRequest, completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void) {
            sendWithin.withLock { $0.append(request.sendWithinMilliseconds) }
            held.withLock { $0.append((request.url.split(separator: "/")[1].description, completion)) }
        }
        /// The hosts of the requests still waiting for an answer, oldest first.
        var hosts: [String] { held.withLock { $0.map(\.host) } }
        /// Answers the oldest request held, 201.
        func answerOne() {
            let next = held.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            next?.completion(.success(PushHTTPResponse(status: 201, headers: [], body: [])))
        }
    }

    /// The gate's timer, fired by the test.
    final class ManualTimer: Sendable {
        let due = Mutex<[@Sendable () -> Void]>([])
        func add(_ work: @escaping @Sendable () -> Void) { due.withLock { $0.append(work) } }
        /// Runs every closure scheduled so far: the waits that ran out of patience.
        func fire() {
            for work in due.withLock({ list in defer { list = [] }; return list }) { work() }
        }
    }

    /// ADR 0024 (breaker12): a push service that does not answer holds at most the gate's limit of
    /// pushes, counted across every app's provider; the next waits for a place and, when none frees
    /// within the patience, is not sent (retried, not counted), while other origins still go.
    @Test func oneOriginHoldsAtMostTheGatesLimitAcrossApps() throws {
        let timer = ManualTimer()
        let gate = WebPushOriginGate(limit: 2, patienceMilliseconds: 1_000, after: { _, work in timer.add(work) })
        let stalled = HoldingTransport()
        let clock = ManualClock(unixMilliseconds: 1_754_563_200_000)
        let appA = WebPushProvider(credentials: Self.credentials, transport: stalled, clock: clock, gate: gate)
        let appB = WebPushProvider(credentials: Self.credentials, transport: stalled, clock: clock, gate: gate)
        #expect(send(appA) == nil, "in flight")
        #expect(send(appB) == nil, "in flight: the other app's push to the same service")
        let verdict = Mutex<PushClassification?>(nil)
        appA.send(PushNotification(title: "t", body: "b"), to: target, pushID: .random()) { c in verdict.withLock { $0 = c } }
        #expect(verdict.withLock { $0 } == nil && gate.waiting("https://push.example.net:8443") == 1, "waits for a place")
        #expect(stalled.hosts == ["push.example.net:8443", "push.example.net:8443"])
        // Another push service is not held up by this one.
        let other = try subscription(endpoint: "https://updates.push.example.org/wpush/v2/x")
        #expect(send(appB, to: other) == nil)
        #expect(stalled.hosts.count == 3)
        // No place freed within the patience: sent back to the queue, its worker slot given back.
        timer.fire()
        let refused = verdict.withLock { $0 }
        #expect(refused?.outcome == .busy(reason: "origin_busy: 2 pushes in flight to https://push.example.net:8443, none ended within 1000 ms"))
        #expect(refused?.isUnanswered == false, "nothing reached the service: not a provider failure")
        #expect(gate.waiting("https://push.example.net:8443") == 0 && stalled.hosts.count == 3)
        for _ in 0..<3 { stalled.answerOne() }
        #expect(gate.count("https://push.example.net:8443") == 0)
        #expect(gate.count("https://updates.push.example.org") == 0)
    }

    /// A service that answers hands each place to the oldest push waiting: a broadcast larger than
    /// the limit goes out at the limit's pace, none turned away, its time waited taken from its
    /// send-by deadline.
    @Test func aFreedPlaceGoesToTheOldestWaitingPush() {
        let timer = ManualTimer()
        let gate = WebPushOriginGate(limit: 1, patienceMilliseconds: 1_000, after: { _, work in timer.add(work) })
        let service = HoldingTransport()
        let clock = ManualClock(unixMilliseconds: 1_754_563_200_000)
        let provider = WebPushProvider(credentials: Self.credentials, transport: service, clock: clock, gate: gate)
        let verdicts = Mutex<[Int: PushClassification]>([:])
        let sendBy = SendByDeadline(unixMilliseconds: 1_754_563_200_000 + 8_000)
        for n in 0..<3 {
            provider.send(PushNotification(title: "n\(n)", body: "b"), to: target, pushID: .random(), sendBy: sendBy) { c in
                verdicts.withLock { $0[n] = c }
            }
        }
        #expect(service.hosts.count == 1 && gate.waiting("https://push.example.net:8443") == 2)
        clock.advance(byMilliseconds: 300)
        service.answerOne()
        #expect(verdicts.withLock { $0[0] }?.outcome == .delivered(providerMessageID: nil))
        #expect(service.hosts.count == 1 && gate.waiting("https://push.example.net:8443") == 1, "the second took the place")
        #expect(service.sendWithin.withLock { $0 } == [8_000, 7_700], "the 300 ms it waited came out of its deadline")
        service.answerOne()
        service.answerOne()
        timer.fire()   // their waits' timers find nobody waiting any more
        #expect(verdicts.withLock { $0.values.map(\.outcome) } == Array(repeating: .delivered(providerMessageID: nil), count: 3))
        #expect(gate.count("https://push.example.net:8443") == 0)
    }

    /// A transport whose every request finds only a private address.
    final class RefusingTransport: PushTransport {
        let sent = Mutex(0)
        func send(_ request: PushHTTPRequest, completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void) {
            sent.withLock { $0 += 1 }
            completion(.failure(PushTransportError.addressNotPublic("push.example.net:8443 resolves to no public address (refused: 10.0.0.7)")))
        }
    }

    @Test func everyAnswerIsClassifiedByItsStatus() {
        let cases: [(PushHTTPResponse, PushOutcome, PushRule?)] = [
            (response(201), .delivered(providerMessageID: nil), nil),
            (response(404), .deleteDevice(reason: "subscription_not_found", providerTimestampMs: nil), .deleteDevice),
            (response(410, "push subscription has unsubscribed or expired."), .deleteDevice(reason: "subscription_gone", providerTimestampMs: nil), .deleteDevice),
            (response(413), .deadLetter(reason: "payload_too_large"), .deadLetterRequest),
            (response(429, headers: [("retry-after", "120")]), .retry(afterSeconds: 120, reason: "too_many_requests"), .retry(minimumDelay: nil)),
            (response(429), .retry(afterSeconds: nil, reason: "too_many_requests"), .retry(minimumDelay: nil)),
            (response(401), .deadLetter(reason: "vapid_unauthorized"), .deadLetterConfiguration),
            (response(403), .deadLetter(reason: "vapid_forbidden"), .deadLetterConfiguration),
            (response(503, headers: [("Retry-After", "Thu, 07 Aug 2025 10:42:00 GMT")]), .retry(afterSeconds: 120, reason: "push_service_error"), .retry(minimumDelay: nil)),
            (response(500), .retry(afterSeconds: nil, reason: "push_service_error"), .retry(minimumDelay: nil)),
            (response(400), .deadLetter(reason: "bad_request"), .deadLetterRequest),
            (response(301), .deadLetter(reason: "redirect"), .deadLetterConfiguration),
            (response(102), .retry(afterSeconds: nil, reason: "http_102"), .retry(minimumDelay: nil)),
        ]
        var rowsSeen = Set<Int>()
        for (answer, outcome, rule) in cases {
            let classification = classifyWebPush(response: answer, now: 1_754_563_200)
            #expect(classification.outcome == outcome, "HTTP \(answer.status)")
            #expect(classification.rule == rule, "HTTP \(answer.status)")
            #expect(classification.status == answer.status)
            if let row = WebPushClassificationTable.matchingRow(status: answer.status) { rowsSeen.insert(row) }
        }
        #expect(rowsSeen == Set(WebPushClassificationTable.rows.indices))
        #expect(classifyWebPush(response: response(410, "push subscription has unsubscribed or expired.\n")).providerMessage
                == "push subscription has unsubscribed or expired.")
    }

    @Test func aTransportFailureIsRetried() {
        struct Refused: PushTransportFailure { var mayHaveReachedProvider: Bool { false } }
        struct Failing: PushTransport {
            func send(_ request: PushHTTPRequest, completion: @escaping @Sendable (Result<PushHTTPResponse, any Error>) -> Void) {
                completion(.failure(Refused()))
            }
        }
        let provider = WebPushProvider(credentials: Self.credentials, transport: Failing())
        guard case .notSent = send(provider)?.outcome else { Issue.record("expected notSent"); return }
    }
}
