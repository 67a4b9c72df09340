import HeraldCore
import PushHTTP

/// FCM HTTP v1 as a `PushProvider` (SPEC PU-2; push-providers.md §2): an OAuth2 access token from
/// the service account (`FCMAccessTokenCache`: cached until 5 min before expiry, dropped once when
/// FCM answers `401`), the request from `FCMRequestBuilder`, the answer classified by
/// `FCMClassificationTable` with Google's error codes.
///
/// One instance per service account, shared by every sender.
public final class FCMProvider: PushProvider {
    /// `fcm`: devices whose `provider` is `fcm` are sent through this adapter.
    public static let id = PushProviderID.fcm

    /// An FCM registration token is opaque: 1–4096 printable ASCII characters (DV-1).
    ///
    /// - Returns: the token unchanged.
    /// - Throws: `OpaqueDeviceToken.error`.
    public static func validate(token: String) throws(DeviceTokenError) -> String {
        try OpaqueDeviceToken.validate(token)
    }

    /// The service account and project.
    public let credentials: FCMCredentials
    /// `HERALD_FCM_URL`.
    public let endpoint: FCMEndpoint
    private let transport: any PushTransport
    private let tokens: FCMAccessTokenCache
    private let clock: UnixClock
    /// The same wall time in UNIX ms: TTLs and the expiry check before a resend (NO-2).
    private let millisecondClock: @Sendable () -> Int64
    private let bodies = FCMBodyCache()
    /// `endpoint.sendURL(projectID:)`, made once: every message goes to it.
    private let sendURL: String
    private let authorizations = AuthorizationValueCache(prefix: "Bearer ")

    /// - Parameters:
    ///   - credentials: `FCM_*` (SPEC PU-6).
    ///   - endpoint: where `messages:send` lives.
    ///   - transport: the HTTP/2 client; it also carries the OAuth token requests.
    ///   - clock: wall time for the assertion's `iat`, token expiry, TTLs and `Retry-After` dates.
    public init(credentials: FCMCredentials, endpoint: FCMEndpoint = .production, transport: any PushTransport,
                clock: any Clock = SystemClock()) {
        let unixClock: UnixClock = { Int(clock.unixSeconds) }
        self.credentials = credentials
        self.endpoint = endpoint
        self.sendURL = endpoint.sendURL(projectID: credentials.projectID)
        self.transport = transport
        self.tokens = FCMAccessTokenCache(clock: unixClock, fetch: FCMAccessTokenCache.fetcher(credentials: credentials, clock: unixClock) { request, done in
            transport.send(request, completion: done)
        })
        self.clock = unixClock
        self.millisecondClock = { clock.unixMilliseconds }
    }

    /// See `PushProvider.send(_:to:pushID:sendBy:completion:)`. Never throws or blocks on the
    /// network; the answer arrives on the transport's thread.
    public func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
                     completion: @escaping @Sendable (PushClassification) -> Void) {
        send(notification, to: target, sendBy: sendBy, retried: false, completion: completion)
    }

    private func send(_ notification: PushNotification, to target: PushTarget, sendBy: SendByDeadline?, retried: Bool,
                      completion: @escaping @Sendable (PushClassification) -> Void) {
        tokens.withAccessToken { [self] tokenResult in
            let accessToken: String
            switch tokenResult {
            case .success(let token): accessToken = token
            case .failure(let error): return completion(classifyFCMTokenError(error))
            }
            var request: PushHTTPRequest
            // After the access token, which may have taken a request of its own.
            let nowMilliseconds = millisecondClock()
            do throws(PushPayloadError) {
                request = try FCMRequestBuilder.request(for: notification, deviceToken: target.token, projectID: credentials.projectID,
                                                        accessToken: accessToken, endpoint: endpoint, now: Int(nowMilliseconds / 1000),
                                                        nowMilliseconds: nowMilliseconds, bodies: bodies, sendURL: sendURL,
                                                        authorizations: authorizations)
            } catch {
                return completion(classifyPayloadError(error))
            }
            guard request.limit(to: sendBy, nowMilliseconds: nowMilliseconds) else { return completion(.sendByPassed) }
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
                if let refused = PushClassification.refusingResend(of: notification, nowMilliseconds: millisecondClock(), sendBy: sendBy) {
                    return completion(refused)
                }
                send(notification, to: target, sendBy: sendBy, retried: true, completion: completion)
            }
        }
    }
}
