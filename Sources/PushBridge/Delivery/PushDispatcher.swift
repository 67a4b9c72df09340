import Dispatch

/// Sends one notification to one device through APNs or FCM and says what happened, with the
/// provider-auth rules applied on the way: one APNs JWT per team and key, one FCM access token,
/// each renewed once when the provider says it expired (PU-1, PU-2). Queue decisions (retry,
/// dead letter, delete) are the caller's: this only sends and classifies.
public final class PushDispatcher: Sendable {
    /// APNs settings: credentials and gateways.
    public struct APNs: Sendable {
        public var credentials: APNsCredentials
        public var gateways: APNsGateways
        public init(credentials: APNsCredentials, gateways: APNsGateways) {
            self.credentials = credentials
            self.gateways = gateways
        }
    }

    /// FCM settings: service account and endpoint.
    public struct FCM: Sendable {
        public var credentials: FCMCredentials
        public var endpoint: FCMEndpoint
        public init(credentials: FCMCredentials, endpoint: FCMEndpoint) {
            self.credentials = credentials
            self.endpoint = endpoint
        }
    }

    private let transport: any PushTransport
    private let apns: APNs?
    private let apnsTokens: APNsAuthToken?
    private let fcm: FCM?
    private let fcmTokens: FCMAccessTokenCache?
    private let clock: UnixClock
    /// Provider answers and latency, for `/metrics`.
    public let metrics = PushMetrics()

    /// - Parameters:
    ///   - transport: the HTTP/2 client.
    ///   - apns / fcm: nil disables that provider (PU-6).
    ///   - clock: unix seconds.
    public init(transport: any PushTransport, apns: APNs?, fcm: FCM?, clock: @escaping UnixClock = systemUnixClock) {
        self.transport = transport
        self.apns = apns
        self.apnsTokens = apns.map { APNsAuthToken(credentials: $0.credentials, clock: clock) }
        self.fcm = fcm
        self.fcmTokens = fcm.map { fcm in
            FCMAccessTokenCache(clock: clock, fetch: FCMAccessTokenCache.fetcher(credentials: fcm.credentials, clock: clock) { request, done in
                transport.send(request, completion: done)
            })
        }
        self.clock = clock
    }

    /// Whether `provider` (`apns`, `fcm`) has credentials.
    public func isEnabled(_ provider: String) -> Bool {
        switch provider {
        case "apns": return apns != nil
        case "fcm": return fcm != nil
        default: return false
        }
    }

    /// Sends `notification` to `target`.
    ///
    /// - Parameters:
    ///   - apnsID: the job's id, the same on every attempt (PU-5b); also used to log.
    ///   - completion: called once, from any thread, with the classified outcome.
    public func send(_ notification: PushNotification, to target: PushTarget, apnsID: APNsID,
                     completion: @escaping @Sendable (PushClassification) -> Void) {
        let started = DispatchTime.now().uptimeNanoseconds
        let metrics = self.metrics
        let provider = target.provider
        let completion: @Sendable (PushClassification) -> Void = { classification in
            let seconds = Double(DispatchTime.now().uptimeNanoseconds &- started) / 1e9
            metrics.record(provider: provider, outcome: classification.outcome.metricLabel, seconds: seconds)
            completion(classification)
        }
        switch target.provider {
        case "apns":
            guard let apns, let apnsTokens else { return completion(Self.notConfigured("apns")) }
            sendAPNs(notification, to: target, apnsID: apnsID, apns: apns, tokens: apnsTokens, retried: false, completion: completion)
        case "fcm":
            guard let fcm, let fcmTokens else { return completion(Self.notConfigured("fcm")) }
            sendFCM(notification, to: target, fcm: fcm, tokens: fcmTokens, retried: false, completion: completion)
        default:
            completion(PushClassification(outcome: .deadLetter(reason: "provider_unsupported: \(target.provider)"), status: nil,
                                          rule: .deadLetterConfiguration))
        }
    }

    private static func notConfigured(_ provider: String) -> PushClassification {
        PushClassification(outcome: .deadLetter(reason: "push_not_configured: no \(provider) credentials"), status: nil,
                           rule: .deadLetterConfiguration)
    }

    private func sendAPNs(_ notification: PushNotification, to target: PushTarget, apnsID: APNsID, apns: APNs,
                          tokens: APNsAuthToken, retried: Bool, completion: @escaping @Sendable (PushClassification) -> Void) {
        let jwt: String
        let request: PushHTTPRequest
        do {
            jwt = try tokens.current()
            request = try APNsRequestBuilder.request(
                for: notification, deviceToken: target.token,
                environment: apns.gateways.gateway(forDeviceEnvironment: target.environment),
                topic: apns.credentials.topic, authToken: jwt, apnsID: apnsID, now: clock())
        } catch let error as PushPayloadError {
            return completion(classifyPayloadError(error))
        } catch {
            return completion(PushClassification(outcome: .deadLetter(reason: "apns_signing_failed: \(error)"), status: nil,
                                                 rule: .deadLetterConfiguration))
        }
        transport.send(request) { [self] result in
            let classification: PushClassification
            switch result {
            case .success(let response): classification = classifyAPNs(response: response, now: clock())
            case .failure(let error): classification = classifyTransportError(error)
            }
            guard case .refreshAuthAndRetryOnce(let reason) = classification.outcome else { return completion(classification) }
            guard !retried else {
                return completion(PushClassification(outcome: .retry(afterSeconds: nil, reason: reason), status: classification.status,
                                                     rule: classification.rule, providerMessage: classification.providerMessage))
            }
            switch tokens.invalidate(rejected: jwt) {
            case .willRegenerate, .alreadyReplaced:
                sendAPNs(notification, to: target, apnsID: apnsID, apns: apns, tokens: tokens, retried: true, completion: completion)
            case .tooRecent:
                completion(PushClassification(outcome: .retry(afterSeconds: nil, reason: "\(reason) (token refreshed too recently; check the clock)"),
                                              status: classification.status, rule: classification.rule))
            }
        }
    }

    private func sendFCM(_ notification: PushNotification, to target: PushTarget, fcm: FCM, tokens: FCMAccessTokenCache,
                         retried: Bool, completion: @escaping @Sendable (PushClassification) -> Void) {
        tokens.withAccessToken { [self] tokenResult in
            let accessToken: String
            switch tokenResult {
            case .success(let token): accessToken = token
            case .failure(let error): return completion(classifyFCMTokenError(error))
            }
            let request: PushHTTPRequest
            do throws(PushPayloadError) {
                request = try FCMRequestBuilder.request(for: notification, deviceToken: target.token, projectID: fcm.credentials.projectID,
                                                        accessToken: accessToken, endpoint: fcm.endpoint, now: clock())
            } catch {
                return completion(classifyPayloadError(error))
            }
            transport.send(request) { [self] result in
                let classification: PushClassification
                switch result {
                case .success(let response): classification = classifyFCM(response: response, now: clock())
                case .failure(let error): classification = classifyTransportError(error)
                }
                guard case .refreshAuthAndRetryOnce(let reason) = classification.outcome else { return completion(classification) }
                guard !retried else {
                    return completion(PushClassification(outcome: .retry(afterSeconds: nil, reason: reason), status: classification.status,
                                                         rule: classification.rule, providerMessage: classification.providerMessage))
                }
                _ = tokens.invalidate(token: accessToken)
                sendFCM(notification, to: target, fcm: fcm, tokens: tokens, retried: true, completion: completion)
            }
        }
    }
}
