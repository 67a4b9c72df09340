/// The port to one push provider (APNs, FCM; later Expo, Web Push): what its tokens look like, and
/// sending one notification to one token with the provider's answer classified.
///
/// An adapter holds one credential set and everything that goes with it: the wire format, its
/// HTTP client, the provider-auth token and its refresh rules (APNs: one JWT per key, renewed on
/// `ExpiredProviderToken`; FCM: an OAuth token renewed on `401`). So `send` retries a refused
/// credential **once** by itself; what it reports is final for this attempt. Queue decisions
/// (backoff, dead letter, deleting the device) are the caller's (`DeliveryWorker`).
///
/// The token rule is `static` because it needs no credentials: registration checks an APNs token
/// whether or not this process can send to APNs (docs/adr/0004-push-provider-port.md).
///
/// # Thread safety
/// Adapters are `Sendable`; `send` may be called from any thread, concurrently.
public protocol PushProvider: Sendable {
    /// The provider this adapter speaks to; `PushProviders` routes by it.
    static var id: PushProviderID { get }

    /// Checks a token as the provider would, at registration (DV-1).
    ///
    /// - Parameter token: the token as the app sent it.
    /// - Returns: the token to store (APNs: lower-cased hex; others unchanged).
    /// - Throws: `DeviceTokenError` with the message the API answers for field `token`.
    static func validate(token: String) throws(DeviceTokenError) -> String

    /// Sends `notification` to `target` and classifies the answer.
    ///
    /// Cheap on the calling thread: it builds the request (and signs a token when one is due),
    /// hands it to the transport and returns; the answer arrives on the transport's thread.
    ///
    /// - Parameters:
    ///   - notification: what to show or wake the app with.
    ///   - target: the device token; `target.provider` is this adapter's `id`.
    ///   - pushID: the job's id, the same on every attempt (PU-5b); APNs sends it as `apns-id`.
    ///   - sendBy: when the push must be on the wire and answered (its job's lease less a
    ///     margin; nil: no deadline beyond the transport's timeouts). A push not yet sent by
    ///     then is dropped, `PushClassification.sendByPassed`; one in flight then times out.
    ///   - completion: called exactly once, from any thread. A payload the provider would refuse
    ///     is never sent: it comes back as `deadLetterRequest` (`PushPayloadError.reason`). A
    ///     notification found expired (to the millisecond) when its request is built, or before
    ///     the resend after a refused credential (`PushClassification.refusingResend`), comes
    ///     back as `PushOutcome.expired`, which the worker records as `expired`.
    func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID, sendBy: SendByDeadline?,
              completion: @escaping @Sendable (PushClassification) -> Void)
}

extension PushProvider {
    /// The provider this adapter speaks to (`Self.id`).
    public var id: PushProviderID { Self.id }

    /// `send(_:to:pushID:sendBy:completion:)` without a send-by deadline (the test push,
    /// `herald send-test`: nothing else may claim them).
    public func send(_ notification: PushNotification, to target: PushTarget, pushID: PushID,
                     completion: @escaping @Sendable (PushClassification) -> Void) {
        send(notification, to: target, pushID: pushID, sendBy: nil, completion: completion)
    }

    /// `Self.validate(token:)`.
    public func validate(token: String) throws(DeviceTokenError) -> String {
        try Self.validate(token: token)
    }
}
