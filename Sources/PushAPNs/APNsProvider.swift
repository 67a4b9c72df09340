import HeraldCore
import PushHTTP

/// APNs as a `PushProvider` (SPEC PU-1; push-providers.md §1): token auth with one ES256 JWT per
/// team and key (`APNsAuthToken`: renewed every 40 min, and replaced whenever APNs answers
/// `403 ExpiredProviderToken`, at most once a minute), the request from `APNsRequestBuilder`, the gateway from the
/// device's environment, the answer classified by `APNsClassificationTable` with Apple's reasons.
///
/// One instance per credential set, shared by every sender.
public final class APNsProvider: PushProvider {
    /// `apns`: devices whose `provider` is `apns` are sent through this adapter.
    public static let id = PushProviderID.apns

    /// The refusal, worded as the API has always answered it (DV-1).
    public static let tokenError = DeviceTokenError("an APNs token is an even number (16-200) of hex digits")

    /// An APNs device token is hex, an even number of digits, 16–200 of them (Apple says not to
    /// assume 32 bytes); stored lower-case so one device has one spelling.
    ///
    /// - Returns: the token lower-cased.
    /// - Throws: `tokenError`.
    public static func validate(token: String) throws(DeviceTokenError) -> String {
        let utf8 = token.utf8
        guard (16...200).contains(utf8.count), utf8.count % 2 == 0, utf8.allSatisfy({ $0.isASCIIHexDigit }) else { throw tokenError }
        return token.lowercased()
    }

    /// The key, team and topic.
    public let credentials: APNsCredentials
    /// Where production and sandbox tokens go.
    public let gateways: APNsGateways
    private let transport: any PushTransport
    private let tokens: APNsAuthToken
    private let clock: UnixClock
    /// The same wall time in UNIX ms: `apns-expiration` and the expiry check before a resend (NO-2).
    private let millisecondClock: @Sendable () -> Int64
    private let bodies = APNsBodyCache()
    private let authorizations = AuthorizationValueCache(prefix: "bearer ")

    /// - Parameters:
    ///   - credentials: `APNS_*` (SPEC PU-6).
    ///   - gateways: `HERALD_APNS_URL`, `HERALD_APNS_SANDBOX_URL`.
    ///   - transport: the HTTP/2 client (shared with other providers).
    ///   - clock: wall time for the JWT `iat`, `apns-expiration` and `Retry-After` dates.
    public init(credentials: APNsCredentials, gateways: APNsGateways = APNsGateways(), transport: any PushTransport,
                clock: any Clock = SystemClock()) {
        let unixClock: UnixClock = { Int(clock.unixSeconds) }
        self.credentials = credentials
        self.gateways = gateways
        self.transport = transport
        self.tokens = APNsAuthToken(credentials: credentials, clock: unixClock)
        self.clock = unixClock
        self.millisecondClock = { clock.unixMilliseconds }
    }

    /// See `PushProvider.send(_:to:pushID:sendBy:completion:)`. Never throws or blocks on the
    /// network; the answer arrives on the transport's thread.
    public func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
                     completion: @escaping @Sendable (PushClassification) -> Void) {
        send(notification, to: target, pushID: pushID, sendBy: sendBy, retried: false, completion: completion)
    }

    private func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
                      retried: Bool, completion: @escaping @Sendable (PushClassification) -> Void) {
        let jwt: String
        var request: PushHTTPRequest
        let nowMilliseconds = millisecondClock()
        do {
            jwt = try tokens.current()
            request = try APNsRequestBuilder.request(
                for: notification, deviceToken: target.token,
                environment: gateways.gateway(forDeviceEnvironment: target.environment),
                topic: credentials.topic, authToken: jwt, apnsID: pushID, now: Int(nowMilliseconds / 1000),
                nowMilliseconds: nowMilliseconds, bodies: bodies, authorizations: authorizations)
        } catch let error as PushPayloadError {
            return completion(classifyPayloadError(error))
        } catch APNsAuthTokenError.refreshDeferred(let secondsLeft) {
            // A rejected token's replacement must wait: nothing is sent; the queue comes back then.
            return completion(.applying(.retryUnsent(minimumDelay: secondsLeft), reason: "apns_token_refresh_deferred",
                                        status: nil, retryAfter: nil))
        } catch {
            return completion(PushClassification(outcome: .deadLetter(reason: "apns_signing_failed: \(error)"), status: nil,
                                                 rule: .deadLetterConfiguration))
        }
        guard request.limit(to: sendBy, nowMilliseconds: nowMilliseconds) else { return completion(.sendByPassed) }
        transport.send(request) { [self] result in
            let classification: PushClassification
            switch result {
            case .success(let response):
                classification = classifyAPNs(response: response, now: clock())
                // The connection is unusable (`Shutdown`, `IdleTimeout`, a token it will not take):
                // no push goes on it again, and this one's retry, the queue's, finds a new one (ADR 0018).
                if classification.reconnect, let connection = response.connection { transport.retireConnection(connection) }
            case .failure(let error): classification = classifyTransportError(error)
            }
            guard case .refreshAuthAndRetryOnce(let reason) = classification.outcome else { return completion(classification) }
            // A rejected token is never used again, even when this send already had its one retry.
            let invalidation = tokens.invalidate(rejected: jwt)
            switch invalidation {
            case .willRegenerate, .alreadyReplaced:
                guard !retried else {
                    return completion(PushClassification(outcome: .retry(afterSeconds: nil, reason: reason), status: classification.status,
                                                         rule: classification.rule, providerMessage: classification.providerMessage))
                }
                if let refused = PushClassification.refusingResend(of: notification, nowMilliseconds: millisecondClock(), sendBy: sendBy) {
                    return completion(refused)
                }
                send(notification, to: target, pushID: pushID, sendBy: sendBy, retried: true, completion: completion)
            case .deferred(let secondsLeft):
                // Refused again within a minute of the last refresh: the replacement comes when
                // that minute is over; this push is tried again then.
                completion(PushClassification(outcome: .retry(afterSeconds: secondsLeft,
                                                              reason: "\(reason) (token replaced less than \(tokens.minimumForcedRefreshInterval) s ago; check the clock)"),
                                              status: classification.status, rule: classification.rule))
            }
        }
    }
}
