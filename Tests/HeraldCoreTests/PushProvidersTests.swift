import Synchronization
import Testing

@testable import HeraldCore

/// A provider that answers what the test tells it, and records what it was asked.
final class ScriptedProvider: PushProvider {
    static let id = PushProviderID.apns
    static func validate(token: String) throws(DeviceTokenError) -> String {
        guard token.hasPrefix("ok") else { throw DeviceTokenError("tokens start with ok") }
        return token.uppercased()
    }

    let answer: PushClassification
    let sent = Mutex<[(PushTarget, PushID)]>([])
    init(answer: PushClassification) { self.answer = answer }

    func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
              completion: @escaping @Sendable (PushClassification) -> Void) {
        sent.withLock { $0.append((target, pushID)) }
        completion(answer)
    }
}

@Suite struct PushProvidersTests {
    let delivered = PushClassification(outcome: .delivered(providerMessageID: "m-1"), status: 200, rule: nil)

    func send(_ providers: PushProviders, to provider: PushProviderID) -> PushClassification? {
        let result = Mutex<PushClassification?>(nil)
        providers.send(PushNotification(title: "t"), to: PushTarget(provider: provider, token: "tok", environment: nil), pushID: .random()) { c in
            result.withLock { $0 = c }
        }
        return result.withLock { $0 }
    }

    @Test func routesToTheConfiguredAdapterAndCountsTheAnswer() throws {
        let clock = ManualClock()
        let adapter = ScriptedProvider(answer: delivered)
        let providers = PushProviders(configured: [adapter], clock: clock)
        #expect(send(providers, to: .apns) == delivered)
        #expect(adapter.sent.withLock { $0.map(\.0.token) } == ["tok"])
        #expect(providers.isConfigured(.apns) && !providers.isConfigured(.fcm))
        #expect(providers.metrics.outcomes.map { "\($0.provider) \($0.outcome) \($0.count)" } == ["apns delivered 1"])
        #expect(providers.metrics.latency.first?.histogram.count == 1)
    }

    /// A stored app's credentials replaced while its pushes were on the wire (an Expo access token
    /// rotated by PUT of the app's credentials, the old one then refused with 401): the refusal
    /// of the old ones is no dead letter to retry by hand but a push to send again, not counted,
    /// with the new ones (audience12, breaker11's). The same refusal with the app's current
    /// credentials stays a configuration dead letter.
    @Test func aRefusalOfCredentialsReplacedMeanwhileIsSentAgainNotDead() throws {
        final class Holding: PushProvider {
            static let id = PushProviderID.expo
            static func validate(token: String) throws(DeviceTokenError) -> String { token }
            let held = Mutex<[@Sendable (PushClassification) -> Void]>([])
            func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
                      completion: @escaping @Sendable (PushClassification) -> Void) {
                held.withLock { $0.append(completion) }
            }
        }
        let unauthorized = PushClassification.applying(.deadLetterConfiguration, reason: "http_401", status: 401, retryAfter: nil)
        let providers = PushProviders(clock: ManualClock())
        let old = Holding(), new = Holding()
        providers.setProviders([old], app: "chat")
        let answers = Mutex<[PushClassification]>([])
        let target = PushTarget(provider: .expo, token: "ExponentPushToken[x]", environment: nil)
        providers.send(PushNotification(title: "t"), to: target, pushID: .random(), app: "chat") { c in answers.withLock { $0.append(c) } }
        providers.setProviders([new], app: "chat")
        providers.send(PushNotification(title: "t"), to: target, pushID: .random(), app: "chat") { c in answers.withLock { $0.append(c) } }
        try #require(old.held.withLock { $0.count } == 1 && new.held.withLock { $0.count } == 1)
        old.held.withLock { $0[0] }(unauthorized)
        new.held.withLock { $0[0] }(unauthorized)
        let got = answers.withLock { $0 }
        #expect(got.count == 2)
        #expect(got.first?.outcome == .notSent(afterSeconds: 0, reason: "credentials_changed: http_401"))
        #expect(got.first?.rule == .retryUnsent(minimumDelay: 0) && got.first?.isConfigurationError == false)
        #expect(got.last == unauthorized, "the current credentials refused: a configuration dead letter, as before")
    }

    /// An Expo receipt check whose app's access token was replaced (PATCH of the app's
    /// credentials) while it was on the wire, refused for the old token (401): asked again at
    /// once with the new one, as a push refused so is sent again (audience13; `credentials_changed`);
    /// the new token's answer is the check's. Refused with the app's current token it is the
    /// configuration failure it was; and with no receipt provider left it comes back
    /// `credentials_changed` (not sent), for the worker to retry, not a dead letter.
    @Test func aReceiptCheckRefusedForCredentialsReplacedMeanwhileIsAskedAgainWithTheNewOnes() throws {
        final class Holding: PushReceiptProvider {
            static let id = PushProviderID.expo
            static func validate(token: String) throws(DeviceTokenError) -> String { token }
            let maximumReceiptsPerRequest = 300
            let held = Mutex<[(ids: [String], answer: @Sendable (PushReceiptAnswer) -> Void)]>([])
            func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
                      completion: @escaping @Sendable (PushClassification) -> Void) {}
            func checkReceipts(_ ids: [String], completion: @escaping @Sendable (PushReceiptAnswer) -> Void) {
                held.withLock { $0.append((ids, completion)) }
            }
            func answer(_ index: Int, _ answer: PushReceiptAnswer) { held.withLock { $0[index] }.answer(answer) }
            var asked: [[String]] { held.withLock { $0.map(\.ids) } }
        }
        let unauthorized = PushClassification.applying(.deadLetterConfiguration, reason: "http_401", status: 401, retryAfter: nil)
        let ok = PushReceiptAnswer.receipts(["t-1": PushClassification(outcome: .delivered(providerMessageID: "t-1"), status: 200, rule: nil)])
        let providers = PushProviders(clock: ManualClock())
        let old = Holding(), new = Holding()
        providers.setProviders([old], app: "chat")
        let answers = Mutex<[PushReceiptAnswer]>([])
        #expect(providers.checkReceipts(provider: .expo, ids: ["t-1"], app: "chat") { a in answers.withLock { $0.append(a) } })
        providers.setProviders([new], app: "chat")
        old.answer(0, .failed(unauthorized))
        #expect(answers.withLock { $0 }.isEmpty, "not answered with the old token's refusal")
        #expect(new.asked == [["t-1"]], "asked again at once with the new token")
        new.answer(0, ok)
        #expect(answers.withLock { $0 } == [ok])

        // The app's current token refused: the configuration failure, as before.
        #expect(providers.checkReceipts(provider: .expo, ids: ["t-2"], app: "chat") { a in answers.withLock { $0.append(a) } })
        new.answer(1, .failed(unauthorized))
        #expect(answers.withLock { $0 }.last == .failed(unauthorized))
        #expect(new.asked.count == 2)

        // Replaced by credentials without Expo: nothing to ask with; not a dead letter.
        #expect(providers.checkReceipts(provider: .expo, ids: ["t-3"], app: "chat") { a in answers.withLock { $0.append(a) } })
        providers.setProviders([ScriptedProvider(answer: unauthorized)], app: "chat")
        new.answer(2, .failed(unauthorized))
        guard case .failed(let changed)? = answers.withLock({ $0 }).last else {
            Issue.record("no failure answered")
            return
        }
        #expect(changed.outcome == .notSent(afterSeconds: 0, reason: "credentials_changed: http_401") && !changed.isConfigurationError)
    }

    /// `herald_push_request_seconds` is the providers' answer time: a push that never reached the
    /// provider (`not_sent`: no HTTP/2 stream before its send-by deadline, a credential to wait
    /// for; `expired` before sending) is counted as an outcome but has no request to time. With a
    /// provider that accepted TCP and never answered, 60 of 98 observations were such waits of up to
    /// 50 s, so the histogram showed the lease, not the provider (breaker7).
    @Test func onlyRequestsMadeAreTimed() throws {
        let clock = ManualClock()
        let held = PushClassification(outcome: .notSent(afterSeconds: nil, reason: "send_by_passed"), status: nil, rule: nil)
        for answer in [held, PushClassification(outcome: .expired, status: nil, rule: nil)] {
            let providers = PushProviders(configured: [ScriptedProvider(answer: answer)], clock: clock)
            #expect(send(providers, to: .apns) == answer)
            #expect(providers.metrics.outcomes.map(\.count) == [1])
            #expect(providers.metrics.latency.first?.histogram.count ?? 0 == 0, "\(answer.outcome)")
        }
        let providers = PushProviders(configured: [ScriptedProvider(answer: delivered)], clock: clock)
        _ = send(providers, to: .apns)
        #expect(providers.metrics.latency.first?.histogram.count == 1)
        // A provider this build does not know made no request either.
        _ = providers.unsupported(provider: "pigeon")
        #expect(providers.metrics.latency.map(\.provider) == ["apns"])
    }

    @Test func anAdapterWithoutCredentialsIsNotConfigured() {
        let providers = PushProviders(adapters: [ScriptedProvider.self])
        let answer = send(providers, to: .apns)
        #expect(answer?.outcome == .deadLetter(reason: "push_not_configured: no apns credentials"))
        #expect(answer?.isConfigurationError == true)
        #expect(providers.adapterIDs == [.apns])
        #expect(providers.metrics.outcomes.map { "\($0.provider) \($0.outcome) \($0.count)" } == ["apns dead 1"])
    }

    @Test func aProviderWithoutAnAdapterIsUnsupported() {
        let providers = PushProviders(adapters: [ScriptedProvider.self])
        #expect(send(providers, to: .webpush)?.outcome == .deadLetter(reason: "provider_unsupported: webpush"))
        #expect(providers.unsupported(provider: "pigeon").outcome == .deadLetter(reason: "provider_unsupported: pigeon"))
        #expect(providers.metrics.outcomes.map { "\($0.provider) \($0.outcome) \($0.count)" } == ["pigeon dead 1", "webpush dead 1"])
    }

    @Test func tokensAreCheckedByTheAdaptersRuleWithOrWithoutCredentials() throws {
        let providers = PushProviders(adapters: [ScriptedProvider.self])
        #expect(try providers.validate(token: "ok-1", for: .apns) == "OK-1")
        #expect(throws: DeviceTokenError("tokens start with ok")) { try providers.validate(token: "no", for: .apns) }
        // No adapter: the opaque rule, with the API's long-standing message.
        #expect(try providers.validate(token: "https://push.example/abc", for: .webpush) == "https://push.example/abc")
        #expect(throws: DeviceTokenError("a token is 1-4096 printable ASCII characters")) { try providers.validate(token: "a b", for: .fcm) }
        #expect(throws: OpaqueDeviceToken.error) { try providers.validate(token: "", for: .fcm) }
        #expect(throws: OpaqueDeviceToken.error) { try providers.validate(token: String(repeating: "x", count: 4097), for: .fcm) }
    }

    @Test func providerIDsAreTheStoredStrings() {
        #expect(PushProviderID.allCases.map(\.rawValue) == ["apns", "fcm", "webpush", "expo"])
        #expect(PushProviderID(rawValue: "APNS") == nil)
    }

    /// PU-8a: Expo's shapes, and what registration takes without being told.
    @Test func expoTokens() {
        #expect(ExpoPushToken.isBracketed("ExponentPushToken[xXxXxXxXxXxXxXxXxXxXxX]"))
        #expect(ExpoPushToken.isBracketed("ExpoPushToken[abc-123_Z]"))
        for token in ["ExponentPushToken[]", "ExponentPushToken[a", "ExponentPushToken[a b]", "ExponentPushToken[a]]",
                      "exponentpushtoken[a]", "fcm:APA91b", "ExpoPushToken[" + String(repeating: "a", count: 4096) + "]"] {
            #expect(!ExpoPushToken.isBracketed(token), "\(token.prefix(40))")
        }
        #expect((try? ExpoPushToken.validate("ExpoPushToken[a]")) == "ExpoPushToken[a]")
        // The SDK's bare UUID form is taken when the client names the provider.
        #expect((try? ExpoPushToken.validate("8C5D3E4A-1B2C-4D5E-8F90-A1B2C3D4E5F6")) == "8C5D3E4A-1B2C-4D5E-8F90-A1B2C3D4E5F6")
        #expect(throws: ExpoPushToken.error) { try ExpoPushToken.validate("fcm-token-1") }
    }
}
