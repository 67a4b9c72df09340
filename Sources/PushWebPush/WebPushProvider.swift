import HeraldCore
import PushHTTP

/// Web Push as a `PushProvider` (issue 15, PU-8b): a browser's subscription (its endpoint, P-256
/// key and auth secret, stored as the device token, `WebPushSubscription`) gets the notification
/// as JSON, encrypted with `aes128gcm` (RFC 8291, `WebPushEncryption`), signed for with VAPID
/// (RFC 8292, `VAPIDTokenCache`) and POSTed to the endpoint with `TTL`, `Urgency` and `Topic`
/// (RFC 8030 §5); the answer is classified by `WebPushClassificationTable`.
///
/// One instance per VAPID key, shared by every sender.
public final class WebPushProvider: PushProvider {
    /// `webpush`: devices whose `provider` is `webpush` are sent through this adapter.
    public static let id = PushProviderID.webpush

    /// Checks a stored subscription: the `WebPushSubscription` token form, and a `p256dh` that is
    /// a point on P-256 (a browser's key always is; anything else could never be encrypted to).
    ///
    /// - Returns: the token in its canonical form (unpadded base64url).
    /// - Throws: `DeviceTokenError` whose `field` names the subscription field at fault.
    public static func validate(token: String) throws(DeviceTokenError) -> String {
        let subscription = try WebPushSubscription(token: token)
        do {
            _ = try P256PublicKey(uncompressed: subscription.p256dh)
        } catch {
            throw DeviceTokenError("p256dh is not a point on the P-256 curve", field: "subscription.keys.p256dh")
        }
        return subscription.token
    }

    /// The application server key and subject.
    public let credentials: VAPIDCredentials
    /// Whether `http://` loopback endpoints are sent to (dev mode, tests).
    public let allowLoopbackHTTP: Bool
    /// Whether endpoints that are not on the public internet are sent to (dev mode, tests). When
    /// false, a subscription whose host `PublicHostRule` refuses, or whose name resolves to no
    /// public address, is dead-lettered (`endpoint_not_public`) and nothing is sent to it.
    public let allowPrivateAddresses: Bool
    private let transport: any PushTransport
    /// Shared by every app's provider: one origin holds at most its limit of the worker's slots.
    private let gate: WebPushOriginGate
    private let tokens: VAPIDTokenCache
    private let clock: UnixClock
    /// The same wall time in UNIX ms, for TTLs of a millisecond expiry (NO-2).
    private let millisecondClock: @Sendable () -> Int64

    /// - Parameters:
    ///   - credentials: `HERALD_VAPID_*`.
    ///   - transport: the HTTP client (HTTP/2 where the push service offers it).
    ///   - allowLoopbackHTTP: `HERALD_WEBPUSH_ALLOW_HTTP` (default: dev mode).
    ///   - allowPrivateAddresses: `HERALD_WEBPUSH_ALLOW_PRIVATE` (default: dev mode).
    ///   - clock: wall time for the JWT's `exp`, TTLs and `Retry-After` dates.
    ///   - gate: the count of requests in flight per origin (ADR 0024); `shared` but in tests.
    public init(credentials: VAPIDCredentials, transport: any PushTransport, allowLoopbackHTTP: Bool = false,
                allowPrivateAddresses: Bool = false, clock: any Clock = SystemClock(), gate: WebPushOriginGate = .shared) {
        let unixClock: UnixClock = { Int(clock.unixSeconds) }
        self.credentials = credentials
        self.transport = transport
        self.gate = gate
        self.allowLoopbackHTTP = allowLoopbackHTTP
        self.allowPrivateAddresses = allowPrivateAddresses
        self.tokens = VAPIDTokenCache(credentials: credentials, clock: unixClock)
        self.clock = unixClock
        self.millisecondClock = { clock.unixMilliseconds }
    }

    /// See `PushProvider.send(_:to:pushID:sendBy:completion:)`. Encrypts on the calling thread (one
    /// ECDH and one AES-GCM pass, tens of microseconds); the answer arrives on the transport's thread.
    /// A push to an origin with the gate's limit in flight waits for a place (ADR 0024): it is sent
    /// from the thread of the push that freed it, or ends `origin_busy` (not sent) on the gate's
    /// timer when none freed within its patience.
    public func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
                     completion: @escaping @Sendable (PushClassification) -> Void) {
        let subscription: WebPushSubscription
        do {
            subscription = try WebPushSubscription(token: target.token)
        } catch {
            return completion(classifyPayloadError(.invalidDeviceToken))
        }
        guard !subscription.isHTTP || allowLoopbackHTTP else {
            return completion(.applying(.deadLetterConfiguration, reason: "http_endpoint_not_allowed", status: nil, retryAfter: nil))
        }
        // Registered before the rule, or while the deployment allowed it: not sent to now.
        if !allowPrivateAddresses, let reason = subscription.nonPublicHost {
            return completion(Self.notPublic("endpoint host \(reason)"))
        }
        var request: PushHTTPRequest
        let nowMilliseconds = millisecondClock()
        do {
            let authorization = try tokens.authorization(origin: subscription.origin)
            request = try WebPushRequestBuilder.request(for: notification, to: subscription, pushID: pushID,
                                                        authorization: authorization, now: clock(),
                                                        nowMilliseconds: nowMilliseconds)
        } catch let error as PushPayloadError {
            return completion(classifyPayloadError(error))
        } catch WebPushCryptoError.invalidPublicKey {
            return completion(classifyPayloadError(.invalidDeviceToken))
        } catch {
            // OpenSSL failing to sign or encrypt says nothing about the device: try again later.
            return completion(.applying(.retryUnsent(minimumDelay: nil), reason: "webpush_crypto: \(error)", status: nil, retryAfter: nil))
        }
        guard request.limit(to: sendBy, nowMilliseconds: nowMilliseconds) else { return completion(.sendByPassed) }
        request.publicAddressesOnly = !allowPrivateAddresses
        let origin = subscription.origin
        let queuedAt = nowMilliseconds
        gate.enter(origin, start: { [transport, clock, gate, millisecondClock, request] in
            // A wait for a place came out of the send-by deadline's time.
            var request = request
            if let within = request.sendWithinMilliseconds {
                let left = within - (millisecondClock() - queuedAt)
                guard left > 0 else {
                    gate.leave(origin)
                    return completion(.sendByPassed)
                }
                request.sendWithinMilliseconds = left
            }
            transport.send(request) { result in
                gate.leave(origin)
                switch result {
                case .success(let response): completion(classifyWebPush(response: response, now: clock()))
                case .failure(PushTransportError.addressNotPublic(let reason)): completion(Self.notPublic(reason))
                case .failure(let error): completion(classifyTransportError(error))
                }
            }
        }, refuse: { [gate] in
            completion(Self.originBusy(origin, limit: gate.limit, waited: gate.patienceMilliseconds))
        })
    }

    /// A push not sent because its origin had `limit` requests waiting for an answer all the
    /// while it waited for a place (ADR 0024): `.busy`, retried after a short fixed wait with
    /// jitter (`RetryPolicy.busyMilliseconds`), the attempt not counted and the backoff not grown.
    static func originBusy(_ origin: String, limit: Int, waited: Int64) -> PushClassification {
        .applying(.retryWhenNotBusy,
                  reason: "origin_busy: \(limit) pushes in flight to \(origin), none ended within \(waited) ms",
                  status: nil, retryAfter: nil)
    }

    /// A subscription on a host that is not public: a dead letter, device kept (DNS may change,
    /// or the operator may allow it), reason `endpoint_not_public: …`. Marked as configuration
    /// so operators see it: either a client registered an internal endpoint or a push service's
    /// name resolves to a private address here (then `HERALD_WEBPUSH_ALLOW_PRIVATE`).
    static func notPublic(_ reason: String) -> PushClassification {
        .applying(.deadLetterConfiguration, reason: "endpoint_not_public: \(reason)", status: nil, retryAfter: nil)
    }
}
